import type { Claimed, HeldBy, Outcome } from './deliveries.js'
import { retryAfterMs } from './retry-after.js'
import type { Answer } from './send.js'

/** How an attempt ended, for the metrics: a 2xx, another status, no answer in time, no
 * connection, or an address the policy refuses. */
export type AttemptResult = 'succeeded' | 'rejected' | 'timeout' | 'unreachable' | 'refused'
export const attemptResults: readonly AttemptResult[] = ['succeeded', 'rejected', 'timeout', 'unreachable', 'refused']

/** What an attempt came to: the receiver's answer, or an address the policy refused. */
export type AttemptAnswer = Answer | { error: 'refused'; detail: string }

/** The longest wait between two attempts. */
export const maxRetryDelayMs = 60 * 60 * 1000

/**
 * The wait before attempt `attempts + 1`, `attempts` having failed: exponential (the base,
 * doubled for each failure, at most an hour), with jitter (a random half to all of it), so that
 * the retries of deliveries that failed together do not come together.
 */
export function retryDelay(attempts: number, baseMs: number, random = Math.random()): number {
  // (whole milliseconds: they are stored as integers)
  return Math.round(Math.min(baseMs * 2 ** (attempts - 1), maxRetryDelayMs) * (0.5 + random / 2))
}

/** Why a delivery ended unattempted when its retry period ended while its subscription was
 * held past it (its lastError), by what held it. */
export const heldPastRetryPeriod: HeldBy = {
  retryAfter: "its retry period ended while its receiver's Retry-After held it",
  circuit: "its retry period ended while its subscription's circuit was open",
}

/** The statuses whose Retry-After sets the next attempt (RFC 9110: 503; RFC 6585: 429). */
const sayWhenToRetry = new Set([429, 503])

/** A receiver that answers this says its URL is gone for good (Standard Webhooks: disable it). */
const goneStatus = 410

export interface Retries {
  /** WEBHOOK_RETRY_BASE_MS */
  retryBaseMs: number
  /** WEBHOOK_RETRY_AFTER_MAX_S, in ms: the longest Retry-After obeyed */
  retryAfterMaxMs: number
  /** the longest lastError the contract allows a delivery (x-service.limits) */
  lastErrorLength: number
}

/**
 * What an attempt's answer (or why it had none) comes to: a 2xx succeeds; a 410 fails for good
 * (its subscription is then disabled); a 429 or 503 with a Retry-After is tried again when it
 * asks (at most retryAfterMaxMs later), and its subscription waits as long; any other failure is
 * tried again after retryDelay. No retry is made past the delivery's retry period.
 */
export function outcomeOf(
  answer: AttemptAnswer,
  { attempts, giveUpAt }: Pick<Claimed, 'attempts' | 'giveUpAt'>,
  { retryBaseMs, retryAfterMaxMs, lastErrorLength }: Retries,
  now = Date.now(),
): { result: AttemptResult; outcome: Outcome; gone: boolean } {
  if ('error' in answer) {
    const error = answer.detail.replace(/[\x00-\x1F\x7F]/g, ' ').slice(0, lastErrorLength)
    return {
      result: answer.error,
      outcome: retried({ error, endpoint: 'down' }, now + retryDelay(attempts + 1, retryBaseMs), giveUpAt, lastErrorLength),
      gone: false,
    }
  }
  const { status } = answer
  if (status >= 200 && status < 300) return { result: 'succeeded', outcome: { status, endpoint: 'up' }, gone: false }
  if (status === goneStatus)
    return { result: 'rejected', outcome: { status, error: 'answered 410 Gone: the subscription is disabled', endpoint: 'down' }, gone: true }
  const asked = sayWhenToRetry.has(status) ? retryAfterMs(answer.retryAfter, now) : undefined
  if (asked === undefined)
    return {
      result: 'rejected',
      outcome: retried({ status, error: `answered ${status}`, endpoint: 'down' }, now + retryDelay(attempts + 1, retryBaseMs), giveUpAt, lastErrorLength),
      gone: false,
    }
  const at = now + Math.min(asked, retryAfterMaxMs)
  const error = `answered ${status}, Retry-After ${answer.retryAfter!.trim()}`.slice(0, lastErrorLength)
  return { result: 'rejected', outcome: retried({ status, error, endpoint: 'down', pauseUntil: at }, at, giveUpAt, lastErrorLength), gone: false }
}

/** The outcome, tried again at `at` unless that is past the retry period (or its subscription
 * is disabled by the time it is written: the error then says why it is not). */
const retried = (outcome: Outcome, at: number, giveUpAt: number, lastErrorLength: number): Outcome =>
  at <= giveUpAt
    ? { ...outcome, nextAttemptAt: at, errorIfDisabled: `${outcome.error}, not retried: the subscription is disabled`.slice(0, lastErrorLength) }
    : outcome
