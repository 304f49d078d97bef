import type { MaybePromise } from '../core/maybe-async.js'
import type { Sql, Statements } from '../storage/sql.js'

/** How long a key is remembered after its first use, by default (the server gives the
 * contract's, x-service.limits.idempotencyKeyHours; a test holds the two equal). */
export const idempotencyWindowMs = 24 * 60 * 60 * 1000
/** How often each server deletes the keys past that window: the store holds a window of keys. */
export const forgetEveryMs = 10 * 60 * 1000

/** A request's Idempotency-Key, under the API key that sent it, and what its body was. */
export interface IdempotencyKey {
  /** who sent it (`request.principal`): keys of different API keys never meet */
  principal: string
  key: string
  /** the request body, canonical: the same body gives the same fingerprint */
  fingerprint: string
}

/** What a key held when a request claimed it. */
export type Claim<Outcome> =
  /** first use (or the first since it expired): the caller does the work, then keeps its outcome */
  | { claimed: true }
  /** used before with the same body: the outcome to answer again */
  | { kept: Outcome }
  /** used before with another body */
  | { reused: true }

export interface IdempotencyKeys<Outcome> {
  /** Inside the transaction that does the work. A key claimed by a transaction still running
   * elsewhere is waited for (PostgreSQL: its row lock; SQLite: the write lock), so two requests
   * with one key do the work once. */
  claim(tx: Statements, key: IdempotencyKey, now: number): Promise<Claim<Outcome>>
  /** Inside the same transaction, after the work: what a retry will be answered. */
  keep(tx: Statements, key: IdempotencyKey, outcome: Outcome): Promise<void>
  /** Deletes the keys first used before `now` minus the window; returns how many. */
  forgetExpired(now: number): MaybePromise<number>
  /** stops forgetting on a timer */
  close(): void
}

/**
 * Idempotency keys in the table `idempotency_keys` (migration 0004). A key is one row, inserted
 * by the transaction that claims it and given its outcome (JSON) before that transaction
 * commits: no other request ever sees a claimed key without its outcome.
 */
export function idempotencyKeys<Outcome>(sql: Sql, windowMs: number): IdempotencyKeys<Outcome> {
  const forgetExpired = (now: number) => sql.run('delete from idempotency_keys where created_at < $1', [now - windowMs])
  const forgetNow = async () => {
    try {
      await forgetExpired(Date.now())
    } catch {
      // the database is unavailable: next time
    }
  }
  const timer = setInterval(() => void forgetNow(), forgetEveryMs).unref()

  return {
    async claim(tx, { principal, key, fingerprint }, now) {
      // an expired key counts as new
      await tx.run('delete from idempotency_keys where principal = $1 and idempotency_key = $2 and created_at < $3', [principal, key, now - windowMs])
      const inserted = await tx.run(
        `insert into idempotency_keys (principal, idempotency_key, fingerprint, created_at) values ($1, $2, $3, $4)
         on conflict (principal, idempotency_key) do nothing`,
        [principal, key, fingerprint, now],
      )
      if (inserted === 1) return { claimed: true }
      // Taken, and committed (with its outcome) by now: a claim still running would have made
      // the insert wait. (It is younger than a day, so no forgetting can have removed it since.)
      const row = (await tx.row<{ fingerprint: string; outcome: string }>(
        'select fingerprint, outcome from idempotency_keys where principal = $1 and idempotency_key = $2',
        [principal, key],
      ))!
      return row.fingerprint === fingerprint ? { kept: JSON.parse(row.outcome) as Outcome } : { reused: true }
    },

    async keep(tx, { principal, key }, outcome) {
      await tx.run('update idempotency_keys set outcome = $3 where principal = $1 and idempotency_key = $2', [principal, key, JSON.stringify(outcome)])
    },

    forgetExpired,
    close: () => clearInterval(timer),
  }
}
