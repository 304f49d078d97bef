// A folder of its own, below the features: pets, orders and subscriptions record events here; webhooks/ delivers them.
import type { webhooks } from '../../generated/newest.js'
import type { MaybePromise } from '../core/maybe-async.js'
import type { Dialect } from '../storage/database.js'
import type { StoredRow } from '../storage/columns.js'
import type { Sql, Statements } from '../storage/sql.js'

/** The events of the contract, by their names under `webhooks`. */
export type EventType = keyof webhooks

/** An event's payload beyond its envelope (`data`, `from`, `to`), as recorded or as shown. */
export type EventFields = Record<string, unknown>

/** An event as a change records it: its type, what it is about as stored (`data`: a pet or an
 * order, by the columns of its table, a form no new major version changes; and `from` and `to`
 * for a change of status, as its column holds it), and who may see it (`audience`): absent,
 * every subscription of its type (a pet's events: the catalogue is shared); a principal, only its
 * own subscriptions (an order's events go to the key that placed it, OWASP API1); null, no one
 * (an order placed before orders had owners). Each delivery shows it as the version of its
 * subscription does (src/versions/). */
export interface NewEvent {
  type: EventType
  audience?: string | null
  data: StoredRow
  from?: string
  to?: string
}

/**
 * The transactional outbox: a change records its events in its own transaction, so that they
 * are committed, or rolled back, with it. An event is written only when a subscription takes
 * its type, with one delivery for each such subscription; otherwise nothing is written.
 */
export interface Outbox {
  /** Inside the transaction of a change: writes its events that a subscription takes. At once,
   * without a statement, when none does and the store lets this be known without one (SQLite). */
  record(tx: Statements, events: NewEvent[]): MaybePromise<void>
  /** SQL that is true while no subscription takes `type`: a change of a single statement that
   * holds it records nothing and needs no transaction of its own. */
  noneTakes(type: EventType): string
  /** Inside the transaction that commits a subscription to `types`: its events are recorded
   * from that commit on. */
  willTake(types: readonly EventType[]): void
  /** After subscriptions were deleted: types no subscription takes any more stop being recorded. */
  refresh(): MaybePromise<void>
}

/** Tracing on: the W3C traceparent of the request whose change records events now (an event
 * keeps it, and each delivery of it continues that trace); undefined otherwise. */
export type TraceNow = () => string | undefined

const takers = 'select subscription_id from webhook_subscription_events where type = $1'
/** the same, of one principal's subscriptions ($5), and whether there is one ($2) */
const ownTakers = `select taker.subscription_id from webhook_subscription_events taker
  join webhook_subscriptions s on s.id = taker.subscription_id where taker.type = $1 and s.owner = $5`
const anyOwnTaker = `select 1 from webhook_subscription_events taker
  join webhook_subscriptions s on s.id = taker.subscription_id where taker.type = $1 and s.owner = $2 limit 1`

/**
 * Who takes an event is decided in the change's transaction, from what is committed:
 * - SQLite (one process, whose transactions run one at a time): by a set of the types taken,
 *   in memory, widened inside the transaction that commits a subscription. A change that
 *   runs after that commit sees it; one that ran before committed before it.
 * - PostgreSQL (several instances): by the statement that writes the events, which reads
 *   webhook_subscription_events. A subscription is committed under an ACCESS EXCLUSIVE lock on
 *   that table (webhooks/repository.ts): it waits for every change that has read the table to commit,
 *   and a change that reads it after waits for the subscription to commit and then sees it
 *   (PostgreSQL takes a statement's locks before the snapshot it reads with). So a change
 *   committed after a subscription's commit records its events for it.
 */
export async function openOutbox(sql: Sql, dialect: Dialect, retryPeriodMs: number, traceNow: TraceNow = () => undefined): Promise<Outbox> {
  const noneTakes = (type: EventType) => `not exists (select 1 from webhook_subscription_events where type = '${type}')`
  if (dialect === 'postgres') {
    return {
      async record(tx, events) {
        const now = Date.now()
        const seen = events.filter(({ audience }) => audience !== null)
        await tx.run(
          `with event as (
             insert into webhook_events (type, occurred_at, fields, audience, trace_parent)
             select given.type, $3, given.fields, given.audience, $6
             from unnest($1::text[], $2::text[], $5::text[]) with ordinality as given (type, fields, audience, n)
             where exists (select 1 from webhook_subscription_events taker join webhook_subscriptions s on s.id = taker.subscription_id
                           where taker.type = given.type and (given.audience is null or s.owner = given.audience))
             order by given.n
             returning id, type, audience)
           insert into webhook_deliveries (subscription_id, event_id, status, attempts, next_attempt_at, give_up_at, created_at)
           select taker.subscription_id, event.id, 'pending', 0, $3, $4, $3
           from event join webhook_subscription_events taker on taker.type = event.type
           join webhook_subscriptions s on s.id = taker.subscription_id
           where event.audience is null or s.owner = event.audience`,
          [seen.map(({ type }) => type), seen.map(fieldsOf), now, now + retryPeriodMs, seen.map(({ audience }) => audience ?? null), traceNow() ?? null],
        )
      },
      noneTakes,
      willTake() {},
      refresh() {},
    }
  }

  const takenTypes = async () => new Set((await sql.rows<{ type: EventType }>('select distinct type from webhook_subscription_events')).map(({ type }) => type))
  let taken = await takenTypes()
  const write = async (tx: Statements, events: NewEvent[]) => {
    const now = Date.now()
    const trace = traceNow() ?? null
    for (const event of events) {
      const { audience } = event
      if (audience === null) continue
      // (an event no subscription of its audience takes is not written)
      if (audience !== undefined && (await tx.row(anyOwnTaker, [event.type, audience])) === undefined) continue
      const { id } = (await tx.row<{ id: number }>(
        'insert into webhook_events (type, occurred_at, fields, audience, trace_parent) values ($1, $2, $3, $4, $5) returning id',
        [event.type, now, fieldsOf(event), audience ?? null, trace],
      ))!
      await tx.run(
        `insert into webhook_deliveries (subscription_id, event_id, status, attempts, next_attempt_at, give_up_at, created_at)
         select subscription_id, $2, 'pending', 0, $3, $4, $3 from (${audience === undefined ? takers : ownTakers}) taker`,
        audience === undefined ? [event.type, id, now, now + retryPeriodMs] : [event.type, id, now, now + retryPeriodMs, audience],
      )
    }
  }
  return {
    record(tx, events) {
      const takenEvents = events.filter(({ type }) => taken.has(type))
      if (takenEvents.length > 0) return write(tx, takenEvents)
    },
    noneTakes,
    willTake(types) {
      for (const type of types) taken.add(type)
    },
    async refresh() {
      taken = await takenTypes()
    },
  }
}

/** An event's payload beyond its type, as stored: JSON. */
function fieldsOf({ type, audience, ...fields }: NewEvent): string {
  return JSON.stringify(fields)
}
