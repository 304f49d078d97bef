import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { EventFields, EventType } from '../events/outbox.js'
import { redactUrl } from '../http/redact.js'
import type { Backlog, CircuitPolicy, Claimed, DeliveryQueue, Outcome, Settlement } from './deliveries.js'
import { type AttemptAnswer, type AttemptResult, heldPastRetryPeriod, outcomeOf, type Retries } from './outcome.js'
import type { AttemptTracer } from './attempt-spans.js'
import { Connections, post } from './send.js'
import { signedHeaders } from './signing.js'
import { type Resolve, resolveTarget, systemResolve, type TargetPolicy, TargetRefused } from './target.js'

/** Why a subscription was disabled, for the metrics: its endpoint answered 410, or failed for too long. */
export type DisabledBecause = 'gone' | 'failing'

export interface DispatcherMetrics {
  attempted(result: AttemptResult): void
  /** a delivery is over: it succeeded, or failed for good */
  finished(result: 'succeeded' | 'failed'): void
  /** the age of what waits, as found at each look */
  backlog(backlog: Backlog): void
  disabled(because: DisabledBecause): void
}

export interface DispatcherOptions extends Retries {
  policy: TargetPolicy
  /** WEBHOOK_TIMEOUT_MS */
  timeoutMs: number
  /** WEBHOOK_POLL_MS */
  pollMs: number
  /** WEBHOOK_CONCURRENCY: attempts under way at once, at most */
  concurrency: number
  /** WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: of them, to one subscription */
  perSubscription: number
  /** WEBHOOK_CIRCUIT_* and WEBHOOK_DISABLE_AFTER_S */
  circuit: CircuitPolicy
  /** WEBHOOK_BEHIND_S, in ms: a due delivery that waits longer makes the instance `degraded` */
  behindMs: number
  /** how often finished deliveries past their keeping are deleted */
  forgetEveryMs?: number
  /** how long finished deliveries are kept (the contract's x-service.limits) */
  keepFinishedMs: number
  /** what an event's id begins with (`evt_`), the contract's x-service.events.idPrefix */
  eventIdPrefix: string
  /** an event's fields as recorded, shown as version `major` of the API shows them */
  show: (type: EventType, fields: EventFields, major: number) => EventFields
  resolve?: Resolve
  /** why the key of a subscription (its principal, `owner`) may not receive an event of `type`
   * now, or undefined when it may: asked before each attempt */
  withheld: (owner: string, type: EventType) => Promise<string | undefined>
  /** disables a subscription, saying why (repository.ts); false when it was not active */
  disable: (subscriptionId: number, reason: string) => Promise<boolean>
  /** tracing on: each attempt's span, and the traceparent it sends (attempt-spans.ts) */
  traceAttempt?: AttemptTracer
}

/** The body of an event, as the `webhooks` of the subscription's version declare it: its
 * envelope, then its fields as that version shows them. */
export function eventBody({ id, type, occurredAt }: Pick<Claimed['event'], 'id' | 'type' | 'occurredAt'>, idPrefix: string, shown: EventFields): string {
  return JSON.stringify({ id: `${idPrefix}${id}`, sequence: id, type, occurredAt: new Date(occurredAt).toISOString(), ...shown })
}

export interface Dispatcher {
  /** looks for due deliveries now, rather than at the next poll */
  wake: () => void
  /** why the deliveries are behind (a due one has waited longer than behindMs), or undefined */
  degraded: () => string | undefined
  /** stops claiming, cuts the attempts under way short, gives their deliveries back */
  close(): Promise<void>
}

/**
 * Makes the deliveries of this instance's share: every `pollMs` (and when woken, and when room
 * frees up while more is due) it claims the due deliveries it has room for, under a lease long
 * enough for an attempt, and attempts each: its target checked and resolved anew, the event
 * signed and POSTed on a kept-alive connection. Room is counted per subscription too
 * (`perSubscription`), and the claim skips subscriptions whose circuit is open: a slow or dead
 * receiver holds only its own share. Outcomes are written in batches (outcome.ts says what each
 * answer comes to); a 410, or failing for too long, disables the subscription. Another
 * instance takes over a lease that an instance which died left behind.
 */
export function startDispatcher(queue: DeliveryQueue, options: DispatcherOptions, log: FastifyBaseLogger, metrics: DispatcherMetrics): Dispatcher {
  const {
    policy,
    timeoutMs,
    pollMs,
    concurrency,
    perSubscription,
    circuit,
    behindMs,
    forgetEveryMs = 10 * 60 * 1000,
    keepFinishedMs,
    eventIdPrefix,
    show,
    resolve = systemResolve,
    withheld,
    traceAttempt,
  } = options
  // a name for this instance's leases; each claim adds a number of its own
  const instance = `${process.pid}-${randomBytes(6).toString('hex')}`
  // time to resolve, attempt (timeoutMs) and write the outcome down, with room to spare
  const leaseMs = 2 * timeoutMs + 10_000
  const connections = new Connections()
  const abort = new AbortController()
  /** attempts under way, in all and per subscription */
  const inFlight = new Map<number, number>()
  let total = 0
  /** the last claim took all the room it had: more may be due */
  let moreDue = false
  /** subscriptions the last claim left at their room: more of theirs may be due */
  const filled = new Set<number>()
  /** subscriptions with failed attempts not yet written down (how many), not sent to until
   * they are: the circuit, a Retry-After's pause or a 410's disabling must hold before the next
   * claim. (Counted: a batch written while another still holds a failure of the same
   * subscription does not release it.) */
  const held = new Map<number, number>()
  const underWay = new Set<Promise<void>>()
  /** outcomes waiting to be written, and those of them that answered 410 */
  let unwritten: { settlement: Settlement; gone: boolean }[] = []
  /** the next batch, once this turn is over; the batches being written */
  let flushing: Promise<void> | undefined
  const writing = new Set<Promise<void>>()
  let backlog: Backlog = {}
  let claims = 0
  let closed = false
  let timer: NodeJS.Timeout | undefined
  let looking: Promise<void> | undefined
  /** woken while a look was under way */
  let again = false
  let measuring: Promise<void> | undefined
  let ending: Promise<void> | undefined

  async function attempt(claimed: Claimed, withheldNow: DispatcherOptions['withheld']): Promise<{ outcome: Outcome; gone: boolean } | undefined> {
    const reason = await withheldNow(claimed.owner, claimed.event.type)
    if (reason !== undefined) {
      // ended without a request: retrying would not make the key hold its roles again
      log.info({ deliveryId: claimed.deliveryId, reason }, 'webhook delivery withheld')
      metrics.finished('failed')
      return { outcome: { error: reason, withheld: true, endpoint: 'unknown' }, gone: false }
    }
    const answer = await send(claimed)
    if (closed) return undefined // cut short by close: the delivery is given back, as it was
    const { result, outcome, gone } = outcomeOf(answer, claimed, options)
    metrics.attempted(result)
    if (result !== 'succeeded') {
      log.info(
        { deliveryId: claimed.deliveryId, url: redactUrl(claimed.url, []), error: outcome.error, retry: outcome.nextAttemptAt !== undefined },
        'webhook attempt failed',
      )
    }
    if (outcome.nextAttemptAt === undefined) metrics.finished(result === 'succeeded' ? 'succeeded' : 'failed')
    return { outcome, gone }
  }

  async function send(claimed: Claimed): Promise<AttemptAnswer> {
    const id = `${eventIdPrefix}${claimed.event.id}`
    const span = traceAttempt?.(claimed, id)
    const answer = await sendWith(claimed, id, span?.headers)
    span?.end(answer)
    return answer
  }

  /** One attempt, with the headers that carry its trace when tracing is on. */
  async function sendWith(claimed: Claimed, id: string, traceHeaders: Record<string, string> | undefined): Promise<AttemptAnswer> {
    const { event } = claimed
    const body = eventBody(event, eventIdPrefix, show(event.type, JSON.parse(event.fields) as EventFields, claimed.apiVersion))
    try {
      const target = await resolveTarget(claimed.url, policy, resolve)
      const headers = signedHeaders(id, body, claimed.secrets)
      return await post(target, traceHeaders === undefined ? headers : { ...traceHeaders, ...headers }, body, timeoutMs, abort.signal, connections)
    } catch (error) {
      if (error instanceof TargetRefused) return { error: 'refused', detail: error.message }
      return { error: 'unreachable', detail: (error as Error).message }
    }
  }

  function started(subscriptionId: number, by: number) {
    inFlight.set(subscriptionId, (inFlight.get(subscriptionId) ?? 0) + by)
    if (inFlight.get(subscriptionId) === 0) inFlight.delete(subscriptionId)
    total += by
  }

  /** Claims what there is room for; true when it filled the room (more may be due). */
  async function claimDue(): Promise<boolean> {
    const room = concurrency - total
    if (room <= 0) {
      moreDue = true
      return false
    }
    const lease = `${instance}/${++claims}`
    const busy = new Map(inFlight)
    for (const subscriptionId of held.keys()) busy.set(subscriptionId, perSubscription)
    const batch = await queue.claim(lease, { max: room, perSubscription, busy }, leaseMs)
    // (asked once per key and type of a claim, just before its attempts: not once per delivery)
    const asked = new Map<string, Promise<string | undefined>>()
    const withheldNow = (owner: string, type: EventType) => {
      const key = `${owner} ${type}`
      if (!asked.has(key)) asked.set(key, withheld(owner, type))
      return asked.get(key)!
    }
    for (const claimed of batch) {
      started(claimed.subscriptionId, 1)
      const running: Promise<void> = attempt(claimed, withheldNow)
        .then((made) => {
          if (made === undefined) return
          if (made.outcome.endpoint === 'down') held.set(claimed.subscriptionId, (held.get(claimed.subscriptionId) ?? 0) + 1)
          written({ lease, deliveryId: claimed.deliveryId, subscriptionId: claimed.subscriptionId, outcome: made.outcome }, made.gone)
        })
        .finally(() => {
          underWay.delete(running)
          started(claimed.subscriptionId, -1)
        })
      underWay.add(running)
    }
    // A subscription that was given all the room it had, or had none, may have more due: its
    // room freeing up wakes a claim (else it would wait for the next poll). (Counted as of the
    // claim's start: attempts that ended while it ran do not make it look roomy.)
    const taken = new Map<number, number>()
    for (const { subscriptionId } of batch) taken.set(subscriptionId, (taken.get(subscriptionId) ?? 0) + 1)
    filled.clear()
    for (const [subscriptionId, attempts] of busy) if (attempts + (taken.get(subscriptionId) ?? 0) >= perSubscription) filled.add(subscriptionId)
    for (const [subscriptionId, attempts] of taken) if (attempts + (busy.get(subscriptionId) ?? 0) >= perSubscription) filled.add(subscriptionId)
    return (moreDue = batch.length === room)
  }

  /** An outcome to write: with the others of this turn, in one batch. */
  function written(settlement: Settlement, gone: boolean) {
    unwritten.push({ settlement, gone })
    flushing ??= new Promise(setImmediate).then(writeDown)
  }

  async function writeDown() {
    const batch = unwritten
    unwritten = []
    flushing = undefined // (what comes while this batch is written goes in the next)
    const done = settle(batch)
    writing.add(done)
    await done
    writing.delete(done)
    // room freed up while more is due (half of it, so that a claim takes a batch): claim now
    const roomy = [...filled].some((subscriptionId) => (inFlight.get(subscriptionId) ?? 0) <= perSubscription / 2)
    if (!closed && ((moreDue && total <= concurrency / 2) || roomy)) wake()
  }

  async function settle(batch: { settlement: Settlement; gone: boolean }[]) {
    try {
      const { failingTooLong, notRetried } = await queue.settle(
        batch.map(({ settlement }) => settlement),
        circuit,
      )
      // (retries not made: their subscription was disabled as they were under way)
      for (let i = 0; i < notRetried; i++) metrics.finished('failed')
      for (const { settlement, gone } of batch) if (gone) await disable(settlement.subscriptionId, 'its endpoint answered 410 Gone', 'gone')
      for (const { subscriptionId, failingSince } of failingTooLong) {
        await disable(subscriptionId, `every attempt has failed since ${new Date(failingSince).toISOString()}`, 'failing')
      }
    } catch (error) {
      log.warn({ err: error, deliveryIds: batch.map(({ settlement }) => settlement.deliveryId) }, 'a webhook delivery could not be written down')
    }
    // (written; or not, and the lease of what was not runs out: its attempt is made again)
    for (const { settlement } of batch) {
      if (settlement.outcome.endpoint !== 'down') continue
      const left = held.get(settlement.subscriptionId)! - 1
      if (left === 0) held.delete(settlement.subscriptionId)
      else held.set(settlement.subscriptionId, left)
    }
  }

  async function disable(subscriptionId: number, reason: string, because: DisabledBecause) {
    if (!(await options.disable(subscriptionId, reason))) return
    log.warn({ subscriptionId, reason }, 'webhook subscription disabled')
    metrics.disabled(because)
  }

  async function look() {
    try {
      while (!closed && (await claimDue()));
    } catch (error) {
      log.warn({ err: error }, 'cannot claim webhook deliveries: the database is unavailable')
    }
  }

  // (never called once closed: the timer is cleared, and requests are over before close)
  function wake() {
    clearTimeout(timer)
    if (looking !== undefined) {
      // (the look under way may have claimed before this room freed up: another follows it)
      again = true
      return
    }
    looking = look().finally(() => {
      looking = undefined
      if (closed) return
      if (again) {
        again = false
        return wake()
      }
      timer = setTimeout(wake, pollMs).unref()
    })
  }

  /** The backlog's age, on a timer of its own (a look that claims without end does not stop it),
   * at most once a second: two statements, for figures that need no finer grain. */
  const measurer = setInterval(
    () => {
      measuring ??= Promise.resolve()
        .then(() => queue.backlog(circuit.failures))
        .then((found) => {
          backlog = found
          metrics.backlog(found)
        })
        .catch(() => {}) // the database is unavailable: the figures stay as last found
        .finally(() => (measuring = undefined))
    },
    Math.max(pollMs, 1_000),
  ).unref()

  /** Deliveries held past their retry period end when it does (once a second: they wait for no
   * attempt, and a second is nothing to a period of hours). */
  const ender = setInterval(
    () => {
      // (begun in a promise: on SQLite a locked file throws as the statement runs)
      ending ??= Promise.resolve()
        .then(() => queue.endHeld(circuit.failures, heldPastRetryPeriod))
        .then((ended) => {
          for (let i = 0; i < ended; i++) metrics.finished('failed')
        })
        .catch(() => {}) // the database is unavailable: next time
        .finally(() => (ending = undefined))
    },
    Math.max(pollMs, 1_000),
  ).unref()

  const forgetter = setInterval(() => {
    queue.forgetFinished(Date.now() - keepFinishedMs).catch(() => {}) // the database is unavailable: next time
  }, forgetEveryMs).unref()
  wake()

  return {
    wake,
    degraded() {
      const waited = backlog.oldestDueAt === undefined ? 0 : Date.now() - backlog.oldestDueAt
      if (waited <= behindMs) return undefined
      return `webhook deliveries are behind: a delivery due has waited ${Math.round(waited / 1000)} s for its attempt`
    },
    async close() {
      closed = true
      clearTimeout(timer)
      clearInterval(measurer)
      clearInterval(ender)
      clearInterval(forgetter)
      abort.abort()
      await looking
      await Promise.all(underWay)
      await flushing
      await Promise.all(writing)
      await measuring
      await ending
      connections.close()
      await queue.release(instance).catch(() => {}) // unavailable: the leases run out by themselves
    },
  }
}
