import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { redactUrl } from '../http/redact.js'
import type { Claimed, DeliveryQueue, Settlement } from '../storage/deliveries.js'
import type { EventType } from '../storage/outbox.js'
import { type Answer, post } from './send.js'
import { signedHeaders } from './signing.js'
import { type Resolve, resolveTarget, systemResolve, type TargetPolicy, TargetRefused } from './target.js'

/** How an attempt ended, for the metrics: a 2xx, another status, no answer in time, no
 * connection, or an address the policy refuses. */
export type AttemptResult = 'succeeded' | 'rejected' | 'timeout' | 'unreachable' | 'refused'
export const attemptResults: readonly AttemptResult[] = ['succeeded', 'rejected', 'timeout', 'unreachable', 'refused']

export interface DispatcherMetrics {
  attempted(result: AttemptResult): void
  /** a delivery is over: it succeeded, or failed for good */
  finished(result: 'succeeded' | 'failed'): void
  /** when the oldest delivery not yet made was created (ms since the epoch), if any: found at each look */
  pending(oldestAt: number | undefined): void
}

export interface DispatcherOptions {
  policy: TargetPolicy
  /** WEBHOOK_TIMEOUT_MS */
  timeoutMs: number
  /** WEBHOOK_RETRY_BASE_MS */
  retryBaseMs: number
  /** WEBHOOK_POLL_MS */
  pollMs: number
  /** attempts under way at once, at most */
  concurrency?: number
  /** how often finished deliveries past their keeping are deleted */
  forgetEveryMs?: number
  /** how long finished deliveries are kept (the contract's x-service.limits) */
  keepFinishedMs: number
  /** the longest lastError the contract allows a delivery */
  lastErrorLength: number
  /** what an event's id begins with (`evt_`), the contract's x-service.events.idPrefix */
  eventIdPrefix: string
  resolve?: Resolve
  /** why the key of a subscription (its principal, `owner`) may not receive an event of `type`
   * now, or undefined when it may: asked before each attempt */
  withheld: (owner: string, type: EventType) => Promise<string | undefined>
}

/** The longest wait between two attempts. */
const maxRetryDelayMs = 60 * 60 * 1000

/**
 * The wait before attempt `attempts + 1`, `attempts` having failed: exponential (the base,
 * doubled for each failure, at most an hour), with jitter (a random half to all of it), so that
 * the retries of deliveries that failed together do not come together.
 */
export function retryDelay(attempts: number, baseMs: number, random = Math.random()): number {
  // (whole milliseconds: they are stored as integers)
  return Math.round(Math.min(baseMs * 2 ** (attempts - 1), maxRetryDelayMs) * (0.5 + random / 2))
}

/** The body of an event, as openapi.yaml's `webhooks` declare it. */
export function eventBody({ id, type, occurredAt, fields }: Claimed['event'], idPrefix: string): string {
  return JSON.stringify({ id: `${idPrefix}${id}`, sequence: id, type, occurredAt: new Date(occurredAt).toISOString(), ...JSON.parse(fields) })
}

export interface Dispatcher {
  /** looks for due deliveries now, rather than at the next poll */
  wake(): void
  /** stops claiming, cuts the attempts under way short and gives their deliveries back */
  close(): Promise<void>
}

/**
 * Makes the deliveries of this instance's share: every `pollMs` (and when woken) it claims the
 * due deliveries it has room for, under a lease long enough for an attempt, and attempts each:
 * its target checked and resolved anew, the event signed and POSTed. A 2xx ends the delivery;
 * anything else is retried after retryDelay, until its retry period is over. Another instance
 * takes over a lease that an instance which died left behind.
 */
export function startDispatcher(queue: DeliveryQueue, options: DispatcherOptions, log: FastifyBaseLogger, metrics: DispatcherMetrics): Dispatcher {
  const { policy, timeoutMs, retryBaseMs, pollMs, concurrency = 16, forgetEveryMs = 10 * 60 * 1000, keepFinishedMs, lastErrorLength, eventIdPrefix, resolve = systemResolve, withheld } = options
  // a name for this instance's leases; each claim adds a number of its own
  const instance = `${process.pid}-${randomBytes(6).toString('hex')}`
  // time to resolve, attempt (timeoutMs) and write the outcome down, with room to spare
  const leaseMs = 2 * timeoutMs + 10_000
  const underWay = new Set<Promise<void>>()
  const abort = new AbortController()
  let claims = 0
  let closed = false
  let timer: NodeJS.Timeout | undefined
  let looking: Promise<void> | undefined

  async function attempt(lease: string, claimed: Claimed) {
    const reason = await withheld(claimed.owner, claimed.event.type)
    if (reason !== undefined) {
      // ended without a request: retrying would not make the key hold its roles again
      log.info({ deliveryId: claimed.deliveryId, reason }, 'webhook delivery withheld')
      metrics.finished('failed')
      return queue.settle(lease, claimed.deliveryId, { error: reason, withheld: true })
    }
    const answer = await send(claimed)
    if (closed) return // cut short by close: the delivery is given back, as it was
    const result: AttemptResult = 'status' in answer ? (answer.status >= 200 && answer.status < 300 ? 'succeeded' : 'rejected') : answer.error
    metrics.attempted(result)
    const outcome: Settlement = { status: 'status' in answer ? answer.status : undefined }
    if (result !== 'succeeded') {
      // (at most what openapi.yaml allows lastError)
      outcome.error = ('status' in answer ? `answered ${answer.status}` : answer.detail.replace(/[\x00-\x1F\x7F]/g, ' ')).slice(0, lastErrorLength)
      const next = Date.now() + retryDelay(claimed.attempts + 1, retryBaseMs)
      if (next <= claimed.giveUpAt) outcome.nextAttemptAt = next
      log.info({ deliveryId: claimed.deliveryId, url: redactUrl(claimed.url, []), error: outcome.error, retry: outcome.nextAttemptAt !== undefined }, 'webhook attempt failed')
    }
    if (outcome.nextAttemptAt === undefined) metrics.finished(result === 'succeeded' ? 'succeeded' : 'failed')
    await queue.settle(lease, claimed.deliveryId, outcome)
  }

  async function send(claimed: Claimed): Promise<Answer | { error: 'refused'; detail: string }> {
    const id = `${eventIdPrefix}${claimed.event.id}`
    const body = eventBody(claimed.event, eventIdPrefix)
    try {
      const target = await resolveTarget(claimed.url, policy, resolve)
      return await post(target, signedHeaders(id, body, claimed.secrets), body, timeoutMs, abort.signal)
    } catch (error) {
      if (error instanceof TargetRefused) return { error: 'refused', detail: error.message }
      return { error: 'unreachable', detail: (error as Error).message }
    }
  }

  /** Claims what there is room for; true when it filled the room (more may be due). */
  async function claimDue(): Promise<boolean> {
    const room = concurrency - underWay.size
    if (room <= 0) return false
    const lease = `${instance}/${++claims}`
    const batch = await queue.claim(lease, room, leaseMs)
    for (const claimed of batch) {
      const running: Promise<void> = attempt(lease, claimed)
        .catch((error: Error) => log.warn({ err: error, deliveryId: claimed.deliveryId }, 'a webhook delivery could not be written down'))
        .finally(() => {
          underWay.delete(running)
          // room for half a claim again: the next due deliveries need not wait for the poll (a
          // claim for fewer would cost as much, a commit, for less)
          if (!closed && underWay.size === Math.floor(concurrency / 2)) wake()
        })
      underWay.add(running)
    }
    return batch.length === room
  }

  async function look() {
    try {
      while (!closed && (await claimDue()));
      metrics.pending(await queue.oldestPendingAt())
    } catch (error) {
      log.warn({ err: error }, 'cannot claim webhook deliveries: the database is unavailable')
    }
  }

  // (never called once closed: the timer is cleared, and requests are over before close)
  function wake() {
    clearTimeout(timer)
    looking ??= look().finally(() => {
      looking = undefined
      if (!closed) timer = setTimeout(wake, pollMs).unref()
    })
  }

  const forgetter = setInterval(() => {
    queue.forgetFinished(Date.now() - keepFinishedMs).catch(() => {}) // the database is unavailable: next time
  }, forgetEveryMs).unref()
  wake()

  return {
    wake,
    async close() {
      closed = true
      clearTimeout(timer)
      clearInterval(forgetter)
      abort.abort()
      await looking
      await Promise.all(underWay)
      await queue.release(instance).catch(() => {}) // unavailable: the leases run out by themselves
    },
  }
}
