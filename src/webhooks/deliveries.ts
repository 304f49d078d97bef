import type { MaybePromise } from '../core/maybe-async.js'
import type { EventType } from '../events/outbox.js'
import type { Dialect } from '../storage/database.js'
import { transactions } from '../storage/group-commit.js'
import { type Sql, type Statements, select } from '../storage/sql.js'

/** A delivery an instance has claimed, with what it takes to make an attempt. */
export interface Claimed {
  deliveryId: number
  subscriptionId: number
  /** attempts made before this one */
  attempts: number
  /** no retry is due after this (ms since the epoch) */
  giveUpAt: number
  url: string
  /** the principal of the subscription's key */
  owner: string
  /** the major version of the API the subscription was made through: its events are shown so */
  apiVersion: number
  /** the secrets that sign it: the current one first, then the previous one while it overlaps */
  secrets: string[]
  /** the event; `traceParent`: the trace of the request that recorded it (W3C traceparent;
   * null when tracing was off) */
  event: { id: number; type: EventType; occurredAt: number; fields: string; traceParent: string | null }
}

/** What an attempt says of the subscription's endpoint. */
export type EndpointHealth =
  /** it answered 2xx: its failures are forgotten, its circuit closes */
  | 'up'
  /** it failed: one more failure in a row (the circuit may open; a long run disables it) */
  | 'down'
  /** no request was made (the key may not receive the event): it says nothing */
  | 'unknown'

/** How an attempt ended. */
export interface Outcome {
  /** the HTTP status it was answered with, if any */
  status?: number | undefined
  /** why it failed; undefined when it succeeded */
  error?: string | undefined
  /** when to try again; undefined to stop (it succeeded, or the retry period is over) */
  nextAttemptAt?: number | undefined
  /** ended without a request (its key may not receive it): not counted as an attempt */
  withheld?: boolean
  /** with a retry: the `error` written instead, with no retry, should the subscription be no
   * longer active when the outcome is written (an attempt beside this one answered 410) */
  errorIfDisabled?: string | undefined
  endpoint: EndpointHealth
  /** the receiver asked for no attempt before this (Retry-After): its subscription waits till then */
  pauseUntil?: number | undefined
}

/** The outcome of one claimed delivery, to be written under the lease that claimed it. */
export interface Settlement {
  lease: string
  deliveryId: number
  subscriptionId: number
  outcome: Outcome
}

/** When a subscription's endpoint is backed off (WEBHOOK_CIRCUIT_*), and disabled. */
export interface CircuitPolicy {
  /** failed attempts in a row that open the circuit */
  failures: number
  /** how long it stays open the first time; each opening in a row doubles it, up to maxOpenMs */
  openMs: number
  maxOpenMs: number
  /** a subscription whose attempts have all failed for this long is disabled (0: never) */
  disableAfterMs: number
}

/** What a claim may take: `max` deliveries in all, and of each subscription as many as it has
 * room for: `perSubscription` less those of it under way (`busy`); but while its last attempts
 * failed (its circuit half open, or not yet open), one at a time: attempts under way to a
 * receiver that fails will likely fail too, and are not joined by more before they are known. */
export interface Room {
  max: number
  perSubscription: number
  busy: ReadonlyMap<number, number>
}

/** The age of what waits, as the store holds it. */
export interface Backlog {
  /** when the oldest delivery still pending (of an active subscription) was created */
  oldestPendingAt?: number | undefined
  /** since when the oldest delivery that is due waits for an attempt: of an active subscription
   * whose endpoint is not backed off, not under way. The dispatchers' own lag. */
  oldestDueAt?: number | undefined
}

/** Why a delivery held past its retry period ended: its lastError, by what held it. */
export interface HeldBy {
  retryAfter: string
  circuit: string
}

/** The deliveries still to make, shared by every instance on the database. */
export interface DeliveryQueue {
  /** Takes the due deliveries that no lease holds, within `room`, for `leaseMs`, under `lease`:
   * a name no other claim uses. Another instance takes them over once the lease has run out. */
  claim(lease: string, room: Room, leaseMs: number): Promise<Claimed[]>
  /** Writes down the outcomes of attempts (each only if its delivery is still held under its
   * lease), and what they say of their endpoints; a retry of a subscription no longer active
   * is not made (`errorIfDisabled`). Answers the subscriptions that have failed for longer than
   * `policy.disableAfterMs`, to be disabled, and how many retries were not made. */
  settle(
    settlements: readonly Settlement[],
    policy: CircuitPolicy,
  ): Promise<{ failingTooLong: { subscriptionId: number; failingSince: number }[]; notRetried: number }>
  /** Gives back what the claims of `instance` still hold (their leases are `instance/...`),
   * due as they were: on shutdown. */
  release(instance: string): Promise<void>
  backlog(circuitFailures: number): MaybePromise<Backlog>
  /** Ends, failed, the pending deliveries whose retry period is over while their subscription is
   * held past it (a Retry-After, or its circuit, open since `circuitFailures` failures in a row):
   * no attempt was to be made within it. `why` says which. Answers how many ended. */
  endHeld(circuitFailures: number, why: HeldBy): Promise<number>
  /** deletes deliveries finished before `before`, then the events nothing refers to any more */
  forgetFinished(before: number): Promise<void>
}

const claimedOf = ([
  deliveryId,
  subscriptionId,
  attempts,
  giveUpAt,
  url,
  owner,
  apiVersion,
  secret,
  previous,
  previousExpiresAt,
  eventId,
  type,
  occurredAt,
  fields,
  traceParent,
]: [
  number,
  number,
  number,
  number,
  string,
  string,
  number,
  string,
  string | null,
  number | null,
  number,
  EventType,
  number,
  string,
  string | null,
]): Claimed => ({
  deliveryId,
  subscriptionId,
  attempts,
  giveUpAt,
  url,
  owner,
  apiVersion,
  secrets: previous !== null && previousExpiresAt! > Date.now() ? [secret, previous] : [secret],
  event: { id: eventId, type, occurredAt, fields, traceParent },
})
const claimedColumns = `d.id, d.subscription_id, d.attempts, d.give_up_at, s.url, s.owner, s.api_version, s.secret, s.previous_secret, s.previous_secret_expires_at,
  e.id, e.type, e.occurred_at, e.fields, e.trace_parent`
const claimedJoin = 'join webhook_subscriptions s on s.id = d.subscription_id join webhook_events e on e.id = d.event_id'

/** A subscription's endpoint may be sent to: active, and neither paused nor waiting out an
 * open circuit, at `now` (a parameter). */
const sendable = (now: string) => `s.status = 'active' and (s.paused_until is null or s.paused_until <= ${now})`
/** A delivery is due at `now`, and no lease holds it. */
const dueFree = (now: string) => `d.status = 'pending' and d.next_attempt_at <= ${now} and (d.lease_until is null or d.lease_until < ${now})`
/** Its subscription was not held (`pausedUntil`) past the delivery's retry period: one that was
 * is not attempted, but ended by endHeld. */
const notHeldPast = (pausedUntil: string) => `(${pausedUntil} is null or ${pausedUntil} <= d.give_up_at)`

/** PostgreSQL: one statement claims every subscription's share (a lateral subquery per
 * subscription, skipping the rows another instance is claiming), and reads what it claimed. */
const claimPostgres = select(
  `with room as (
     select s.id, s.paused_until, (case when s.failures > 0 then 1 else $4 end) - coalesce(busy.n, 0) as n
     from webhook_subscriptions s left join unnest($5::bigint[], $6::int[]) as busy (id, n) on busy.id = s.id
     where ${sendable('$3')}),
   due as (
     select d.id, d.next_attempt_at from room cross join lateral (
       select d.id, d.next_attempt_at from webhook_deliveries d
       where d.subscription_id = room.id and ${dueFree('$3')} and ${notHeldPast('room.paused_until')}
       order by d.subscription_id, d.next_attempt_at limit room.n for update skip locked) d
     where room.n > 0),
   claimed as (
     -- (= any(array(...)): by the primary key, where in (select ...) scanned the whole table)
     update webhook_deliveries set lease_owner = $1, lease_until = $2
     where id = any(array(select id from due order by next_attempt_at limit $7))
     returning id, subscription_id, event_id, attempts, give_up_at)
   select ${claimedColumns} from claimed d ${claimedJoin} order by d.id`,
  claimedOf,
)

/** SQLite: the subscriptions that may be sent to, then each one's share, in one transaction;
 * then what was claimed, by id. */
const sendableSqlite = `select s.id, s.failures, s.paused_until from webhook_subscriptions s where ${sendable('$1')} order by s.id`
const claimShareSqlite = `update webhook_deliveries set lease_owner = $1, lease_until = $2 where id in (
   select d.id from webhook_deliveries d where d.subscription_id = $4 and ${dueFree('$3')} and ${notHeldPast('$6')}
   order by d.next_attempt_at limit $5)
   returning id`
const claimedSqlite = select(
  `select ${claimedColumns} from webhook_deliveries d ${claimedJoin} where d.id in (select value from json_each($1)) order by d.id`,
  claimedOf,
)

/** An attempt's outcome, written if the lease that claimed the delivery still holds it. */
const settleSqlite = `update webhook_deliveries
  set status = $3, attempts = attempts + $8, last_status = $4, last_error = $5, next_attempt_at = $6, finished_at = $7, lease_owner = null, lease_until = null
  where id = $1 and lease_owner = $2`
/** An endpoint that answered: its failures forgotten, its circuit closed (a write only where
 * there is something to forget). */
const recoveredColumns = 'failures = 0, failing_since = null, circuit_openings = 0, paused_until = null'
const recoveredWhere = '(failures > 0 or paused_until is not null)'
const recoveredSqlite = `update webhook_subscriptions set ${recoveredColumns} where id = $1 and ${recoveredWhere}`
/** PostgreSQL: the outcomes of many, and the endpoints that answered ($9), in one statement. */
const settlePostgres = `with settled as (
    update webhook_deliveries d
    set status = o.state, attempts = d.attempts + o.counted, last_status = o.last_status, last_error = o.last_error,
        next_attempt_at = o.next_attempt_at, finished_at = o.finished_at, lease_owner = null, lease_until = null
    from unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[], $6::bigint[], $7::bigint[], $8::int[])
      as o (id, lease, state, last_status, last_error, next_attempt_at, finished_at, counted)
    where d.id = o.id and d.lease_owner = o.lease
    returning d.id)
  update webhook_subscriptions set ${recoveredColumns} where id = any($9::bigint[]) and ${recoveredWhere}`

/** The values a settlement writes: its state, and when it finished (when it did). */
function written({ outcome: { error, nextAttemptAt } }: Settlement, now: number) {
  const state = error === undefined ? 'succeeded' : nextAttemptAt === undefined ? 'failed' : 'pending'
  return { state, finishedAt: state === 'pending' ? null : now }
}

/** What the settlements say of each endpoint: those that answered (any 2xx wins: it works), and
 * for the others how many failures, and the latest Retry-After pause. */
function endpoints(settlements: readonly Settlement[]) {
  const up = new Set<number>()
  const down = new Map<number, { failures: number; pauseUntil: number }>()
  for (const { subscriptionId, outcome } of settlements) {
    if (outcome.endpoint === 'up') up.add(subscriptionId)
    else if (outcome.endpoint === 'down') {
      const seen = down.get(subscriptionId) ?? { failures: 0, pauseUntil: 0 }
      down.set(subscriptionId, { failures: seen.failures + 1, pauseUntil: Math.max(seen.pauseUntil, outcome.pauseUntil ?? 0) })
    }
  }
  for (const id of up) down.delete(id)
  return { up: [...up], down }
}

/**
 * The health of an endpoint after `added` more failures in a row: the circuit opens (again)
 * when they reach `policy.failures` and it is not open already, for openMs doubled at each
 * opening in a row; a Retry-After pause may hold it longer.
 */
export function afterFailures(
  was: { failures: number; failingSince: number | null; openings: number; pausedUntil: number | null },
  added: number,
  pauseUntil: number,
  policy: CircuitPolicy,
  now: number,
) {
  const failures = was.failures + added
  const open = was.pausedUntil !== null && was.pausedUntil > now
  const opens = failures >= policy.failures && !open
  const openFor = Math.min(policy.openMs * 2 ** Math.min(was.openings, 30), policy.maxOpenMs)
  const pausedUntil = Math.max(was.pausedUntil ?? 0, opens ? now + openFor : 0, pauseUntil)
  return { failures, failingSince: was.failingSince ?? now, openings: was.openings + (opens ? 1 : 0), pausedUntil: pausedUntil > now ? pausedUntil : null }
}

/** The deliveries held past their retry period, once it is over (not under way: a lease that
 * has run out is of an instance that stopped), ended; what held them is told by the failures
 * in a row ($2 open the circuit; fewer, and it was a Retry-After). */
const endHeld = `update webhook_deliveries as d
  set status = 'failed', last_error = case when s.failures >= $2 then $3 else $4 end, next_attempt_at = null, finished_at = $1
  from webhook_subscriptions s
  where s.id = d.subscription_id and s.status = 'active' and s.paused_until > d.give_up_at
    and d.status = 'pending' and d.give_up_at <= $1 and (d.lease_until is null or d.lease_until < $1)`

type Health = { failures: number; failing_since: number | null; circuit_openings: number; paused_until: number | null }
/** The health of those of some subscriptions ($1) still active, locked till the outcomes are
 * written: a disabling waits for them, or they see it (in the order of their ids, as every
 * settlement takes them). */
const activeHealthPostgres = `select id, failures, failing_since, circuit_openings, paused_until from webhook_subscriptions
  where id = any($1::bigint[]) and status = 'active' order by id for update`
const activeHealthSqlite = `select id, failures, failing_since, circuit_openings, paused_until from webhook_subscriptions
  where id in (select value from json_each($1)) and status = 'active'`

/** The settlement as written when its subscription is no longer active: a retry is not made. */
function notRetried(settlement: Settlement): Settlement {
  const { outcome } = settlement
  // (errorIfDisabled is set with every retry: outcome.ts)
  return { ...settlement, outcome: { ...outcome, error: outcome.errorIfDisabled!, nextAttemptAt: undefined } }
}

export function deliveryQueue(sql: Sql, dialect: Dialect): DeliveryQueue {
  // SQLite pays an fsync per commit: settlements written together share one (see storage/group-commit.ts).
  const write: (work: (tx: Statements) => Promise<void>) => Promise<void> = dialect === 'sqlite' ? transactions(sql, true) : (work) => sql.transaction(work)

  /** The outcomes, and the endpoints that answered (`up`) recovered. */
  async function settleDeliveries(tx: Statements, settlements: readonly Settlement[], up: number[], now: number) {
    const values = settlements.map((settlement) => {
      const { status, error, nextAttemptAt, withheld } = settlement.outcome
      const { state, finishedAt } = written(settlement, now)
      return [settlement.deliveryId, settlement.lease, state, status ?? null, error ?? null, nextAttemptAt ?? null, finishedAt, withheld ? 0 : 1]
    })
    if (dialect === 'postgres') {
      // (the values by column, each an array)
      await tx.run(settlePostgres, [...values[0]!.map((_, column) => values.map((row) => row[column])), up])
      return
    }
    for (const row of values) await tx.run(settleSqlite, row)
    for (const id of up) await tx.run(recoveredSqlite, [id])
  }

  return {
    async claim(lease, { max, perSubscription, busy }, leaseMs) {
      const now = Date.now()
      if (dialect === 'postgres') {
        return sql.all(claimPostgres, [lease, now + leaseMs, now, perSubscription, [...busy.keys()], [...busy.values()], max])
      }
      const ids: number[] = []
      await sql.transaction(async (tx) => {
        for (const { id, failures, paused_until } of await tx.rows<{ id: number; failures: number; paused_until: number | null }>(sendableSqlite, [now])) {
          const room = Math.min((failures > 0 ? 1 : perSubscription) - (busy.get(id) ?? 0), max - ids.length)
          if (room > 0) for (const row of await tx.rows<{ id: number }>(claimShareSqlite, [lease, now + leaseMs, now, id, room, paused_until])) ids.push(row.id)
        }
      })
      return ids.length === 0 ? [] : sql.all(claimedSqlite, [JSON.stringify(ids)])
    },

    async settle(settlements, policy) {
      const now = Date.now()
      const { up, down } = endpoints(settlements)
      // the subscriptions whose state the outcomes need: those that failed (their circuit), and
      // those with a retry to write (not made once the subscription is disabled)
      const retrying = settlements.filter(({ outcome }) => outcome.nextAttemptAt !== undefined)
      const read = [...new Set([...down.keys(), ...retrying.map(({ subscriptionId }) => subscriptionId)])].sort((a, b) => a - b)
      const failingTooLong: { subscriptionId: number; failingSince: number }[] = []
      let unmade = 0
      // (PostgreSQL: one statement, or a transaction when there is a subscription to read)
      const writeAll = dialect === 'postgres' && read.length === 0 ? (work: (tx: Statements) => Promise<void>) => work(sql) : write
      await writeAll(async (tx) => {
        const active = new Map<number, Health>()
        if (read.length > 0) {
          const rows = await (dialect === 'postgres'
            ? tx.rows<Health & { id: number }>(activeHealthPostgres, [read])
            : tx.rows<Health & { id: number }>(activeHealthSqlite, [JSON.stringify(read)]))
          for (const row of rows) active.set(Number(row.id), row)
        }
        unmade = retrying.filter(({ subscriptionId }) => !active.has(subscriptionId)).length
        const written = settlements.map((settlement) =>
          settlement.outcome.nextAttemptAt === undefined || active.has(settlement.subscriptionId) ? settlement : notRetried(settlement),
        )
        await settleDeliveries(tx, written, up, now)
        for (const [id, { failures, pauseUntil }] of down) {
          const was = active.get(id)
          if (was === undefined) continue // deleted or disabled meanwhile
          const next = afterFailures(
            { failures: was.failures, failingSince: was.failing_since, openings: was.circuit_openings, pausedUntil: was.paused_until },
            failures,
            pauseUntil,
            policy,
            now,
          )
          await tx.run('update webhook_subscriptions set failures = $2, failing_since = $3, circuit_openings = $4, paused_until = $5 where id = $1', [
            id,
            next.failures,
            next.failingSince,
            next.openings,
            next.pausedUntil,
          ])
          if (policy.disableAfterMs > 0 && now - next.failingSince >= policy.disableAfterMs)
            failingTooLong.push({ subscriptionId: id, failingSince: next.failingSince })
        }
      })
      return { failingTooLong, notRetried: unmade }
    },

    async release(instance) {
      await sql.run("update webhook_deliveries set lease_owner = null, lease_until = null where lease_owner like $1 || '/%'", [instance])
    },

    backlog(circuitFailures) {
      const now = Date.now()
      const oldestPending = sql.row<{ created_at: number }>(
        `select d.created_at from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id
         where d.status = 'pending' and s.status = 'active' order by d.created_at limit 1`,
      )
      const oldestDue = sql.row<{ next_attempt_at: number }>(
        `select d.next_attempt_at from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id
         where ${dueFree('$1')} and ${sendable('$1')} and s.failures < $2 and ${notHeldPast('s.paused_until')}
         order by d.next_attempt_at limit 1`,
        [now, circuitFailures],
      )
      const of = (pending: { created_at: number } | undefined, due: { next_attempt_at: number } | undefined): Backlog => ({
        oldestPendingAt: pending?.created_at,
        oldestDueAt: due?.next_attempt_at,
      })
      if (oldestPending instanceof Promise || oldestDue instanceof Promise)
        return Promise.all([oldestPending, oldestDue]).then(([pending, due]) => of(pending, due))
      return of(oldestPending, oldestDue)
    },

    endHeld: (circuitFailures, why) => Promise.resolve(sql.run(endHeld, [Date.now(), circuitFailures, why.circuit, why.retryAfter])),

    async forgetFinished(before) {
      await sql.transaction(async (tx) => {
        await tx.run('delete from webhook_deliveries where finished_at < $1', [before])
        await tx.run(
          'delete from webhook_events where occurred_at < $1 and not exists (select 1 from webhook_deliveries d where d.event_id = webhook_events.id)',
          [before],
        )
      })
    },
  }
}
