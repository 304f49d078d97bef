import { andThen, type MaybePromise } from '../core/maybe-async.js'
import type { Dialect } from './database.js'
import { transactions } from './group-commit.js'
import type { EventType } from './outbox.js'
import { type Sql, type Statements, select } from './sql.js'

/** A delivery an instance has claimed, with what it takes to make an attempt. */
export interface Claimed {
  deliveryId: number
  /** attempts made before this one */
  attempts: number
  /** no retry is due after this (ms since the epoch) */
  giveUpAt: number
  url: string
  /** the principal of the subscription's key */
  owner: string
  /** the secrets that sign it: the current one first, then the previous one while it overlaps */
  secrets: string[]
  event: { id: number; type: EventType; occurredAt: number; fields: string }
}

/** How an attempt ended. */
export interface Settlement {
  /** the HTTP status it was answered with, if any */
  status?: number | undefined
  /** why it failed; undefined when it succeeded */
  error?: string | undefined
  /** when to try again; undefined to stop (it succeeded, or the retry period is over) */
  nextAttemptAt?: number | undefined
  /** ended without a request (its key may not receive it): not counted as an attempt */
  withheld?: boolean
}

/** The deliveries still to make, shared by every instance on the database. */
export interface DeliveryQueue {
  /** Takes up to `max` due deliveries that no lease holds, for `leaseMs`, under `lease`: a
   * name no other claim uses. Another instance takes them over once the lease has run out. */
  claim(lease: string, max: number, leaseMs: number): Promise<Claimed[]>
  /** Writes down an attempt's outcome, if the delivery is still held under `lease`. */
  settle(lease: string, deliveryId: number, outcome: Settlement): Promise<void>
  /** Gives back what the claims of `instance` still hold (their leases are `instance/...`),
   * due as they were: on shutdown. */
  release(instance: string): Promise<void>
  /** when the oldest delivery still pending was created, if any (ms since the epoch) */
  oldestPendingAt(): MaybePromise<number | undefined>
  /** deletes deliveries finished before `before`, then the events nothing refers to any more */
  forgetFinished(before: number): Promise<void>
}

const claimedOf = ([deliveryId, attempts, giveUpAt, url, owner, secret, previous, previousExpiresAt, eventId, type, occurredAt, fields]: [
  number,
  number,
  number,
  string,
  string,
  string,
  string | null,
  number | null,
  number,
  EventType,
  number,
  string,
]): Claimed => ({
  deliveryId,
  attempts,
  giveUpAt,
  url,
  owner,
  secrets: previous !== null && previousExpiresAt! > Date.now() ? [secret, previous] : [secret],
  event: { id: eventId, type, occurredAt, fields },
})
const claimedBy = select(
  `select d.id, d.attempts, d.give_up_at, s.url, s.owner, s.secret, s.previous_secret, s.previous_secret_expires_at, e.id, e.type, e.occurred_at, e.fields
   from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id join webhook_events e on e.id = d.event_id
   where d.lease_owner = $1 order by d.id`,
  claimedOf,
)

export function deliveryQueue(sql: Sql, dialect: Dialect): DeliveryQueue {
  // PostgreSQL: instances that claim at once skip the rows another is claiming, rather than
  // wait for it and then find them taken. (SQLite: one writer at a time.)
  const skipLocked = dialect === 'postgres' ? 'for update skip locked' : ''
  // SQLite pays an fsync per commit: outcomes written together share one (see group-commit.ts).
  // PostgreSQL writes each in one statement of its own.
  const write: (work: (tx: Statements) => Promise<void>) => Promise<void> = dialect === 'sqlite' ? transactions(sql, true) : (work) => work(sql)
  return {
    async claim(lease, max, leaseMs) {
      const now = Date.now()
      const claimed = await sql.run(
        `update webhook_deliveries set lease_owner = $1, lease_until = $2 where id in (
           select id from webhook_deliveries
           where status = 'pending' and next_attempt_at <= $3 and (lease_until is null or lease_until < $3)
           order by next_attempt_at limit $4 ${skipLocked})`,
        [lease, now + leaseMs, now, max],
      )
      return claimed === 0 ? [] : sql.all(claimedBy, [lease])
    },

    async settle(lease, deliveryId, { status, error, nextAttemptAt, withheld = false }) {
      const state = error === undefined ? 'succeeded' : nextAttemptAt === undefined ? 'failed' : 'pending'
      await write(async (tx) => {
        await tx.run(
          `update webhook_deliveries
           set status = $3, attempts = attempts + $8, last_status = $4, last_error = $5, next_attempt_at = $6,
               finished_at = $7, lease_owner = null, lease_until = null
           where id = $1 and lease_owner = $2`,
          [deliveryId, lease, state, status ?? null, error ?? null, nextAttemptAt ?? null, state === 'pending' ? null : Date.now(), withheld ? 0 : 1],
        )
      })
    },

    async release(instance) {
      await sql.run("update webhook_deliveries set lease_owner = null, lease_until = null where lease_owner like $1 || '/%'", [instance])
    },

    oldestPendingAt: () =>
      andThen(sql.row<{ created_at: number }>("select created_at from webhook_deliveries where status = 'pending' order by created_at limit 1"), (row) => row?.created_at),

    async forgetFinished(before) {
      await sql.transaction(async (tx) => {
        await tx.run('delete from webhook_deliveries where finished_at < $1', [before])
        await tx.run('delete from webhook_events where occurred_at < $1 and not exists (select 1 from webhook_deliveries d where d.event_id = webhook_events.id)', [
          before,
        ])
      })
    },
  }
}
