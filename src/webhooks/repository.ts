import type { components } from '../../generated/newest.js'
import { andThen, type MaybePromise } from '../core/maybe-async.js'
import type { EventType, Outbox } from '../events/outbox.js'
import { columnNames } from '../storage/columns.js'
import type { Dialect } from '../storage/database.js'
import { type Sql, type Statements, select } from '../storage/sql.js'

export type Webhook = components['schemas']['Webhook']
export type NewWebhook = components['schemas']['NewWebhook']
/** A delivery as stored: its event's number, to which the server adds the contract's prefix. */
export type StoredDelivery = Omit<components['schemas']['WebhookDelivery'], 'eventId'> & { eventId: number }

export interface DeliveryQuery {
  limit: number
  /** only deliveries whose id is greater */
  after?: number | undefined
}

/** What creating a subscription came to. */
export type Creation = { created: Webhook } | { limitReached: number }

/** Webhook subscriptions, each kept under the principal that created it (its owner): another
 * principal is told of none. Reads answer at once where the database does (SQLite). */
export interface WebhookRepository {
  /** a subscription signed with `secret`, its events shown as version `apiVersion` of the API
   * shows them, unless `owner` holds `maxPerOwner` already */
  create(owner: string, webhook: NewWebhook, secret: string, maxPerOwner: number, apiVersion: number): Promise<Creation>
  /** in ascending id order */
  list(owner: string): MaybePromise<Webhook[]>
  find(owner: string, id: number): MaybePromise<Webhook | undefined>
  /** deletes it with its deliveries; false when the owner has no such subscription */
  remove(owner: string, id: number): Promise<boolean>
  /** `secret` signs from now on, and the current one beside it for `overlapMs`; undefined when
   * the owner has no such subscription */
  rotate(owner: string, id: number, secret: string, overlapMs: number): Promise<{ previousSecretExpiresAt: string } | undefined>
  /** its deliveries in ascending id order; undefined when the owner has no such subscription */
  deliveries(owner: string, id: number, query: DeliveryQuery): MaybePromise<StoredDelivery[] | undefined>
  /** the delivery made pending again, due now, with a new retry period */
  redeliver(owner: string, id: number, deliveryId: number): Promise<StoredDelivery | undefined>
  /** Stops a subscription, saying why: no event is recorded for it any more, and its pending
   * deliveries end, failed, with `lastError`, but those under way (held by a lease that has not
   * run out), whose attempts write what they came to. False when it is not active (any more). */
  disable(id: number, reason: string, lastError: string): Promise<boolean>
  /** Makes the owner's subscription active again, its endpoint's past failures forgotten: the
   * events of changes committed from now on are recorded for it. Undefined when the owner has none so. */
  enable(owner: string, id: number): Promise<Webhook | undefined>
}

const iso = (ms: number) => new Date(ms).toISOString()

/** Each property of the API's Webhook and the column of `webhook_subscriptions` that holds it
 * (see petColumns): the selects list them, and webhookOf reads them in this order. */
export const webhookColumns = columnNames<Webhook>('webhook_subscriptions', {
  id: 'id',
  url: 'url',
  events: 'events',
  createdAt: 'created_at',
  previousSecretExpiresAt: 'previous_secret_expires_at',
  status: 'status',
  disabledReason: 'disabled_reason',
  disabledAt: 'disabled_at',
  failingSince: 'failing_since',
})
type WebhookValues = [number, string, string, number, number | null, 'active' | 'disabled', string | null, number | null, number | null]
const webhookOf = ([id, url, events, createdAt, previousExpiresAt, status, disabledReason, disabledAt, failingSince]: WebhookValues): Webhook => ({
  id,
  url,
  events: JSON.parse(events) as EventType[],
  createdAt: iso(createdAt),
  // (shown while the previous secret still signs)
  ...(previousExpiresAt !== null && previousExpiresAt > Date.now() && { previousSecretExpiresAt: iso(previousExpiresAt) }),
  status,
  ...(disabledReason !== null && { disabledReason }),
  ...(disabledAt !== null && { disabledAt: iso(disabledAt) }),
  ...(failingSince !== null && { failingSince: iso(failingSince) }),
})
const listOwned = select(`select ${webhookColumns.list} from webhook_subscriptions where owner = $1 order by id`, webhookOf)
const findOwned = select(`select ${webhookColumns.list} from webhook_subscriptions where owner = $1 and id = $2`, webhookOf)

const deliveryColumns = `d.id, e.id, e.type, d.status, d.attempts, d.last_status, d.last_error, d.next_attempt_at, d.created_at, d.give_up_at, s.status, s.paused_until`
type DeliveryValues = [
  number,
  number,
  EventType,
  StoredDelivery['status'],
  number,
  number | null,
  string | null,
  number | null,
  number,
  number,
  'active' | 'disabled',
  number | null,
]
const deliveryOf = ([
  id,
  eventId,
  eventType,
  status,
  attempts,
  lastStatus,
  lastError,
  nextAttemptAt,
  createdAt,
  giveUpAt,
  subscriptionStatus,
  pausedUntil,
]: DeliveryValues): StoredDelivery => {
  const next = status === 'pending' ? nextAttempt(nextAttemptAt!, giveUpAt, subscriptionStatus, pausedUntil) : undefined
  return {
    id,
    eventId,
    eventType,
    status,
    attempts,
    ...(lastStatus !== null && { lastStatus }),
    ...(lastError !== null && { lastError }),
    ...(next !== undefined && { nextAttemptAt: iso(next) }),
    createdAt: iso(createdAt),
  }
}

/**
 * When a pending delivery's next attempt will be made, as far as the store can tell now: not
 * before its own wait (`due`), nor before its subscription's (`pausedUntil`: a Retry-After, an
 * open circuit), nor in the past (one due is made as soon as there is room). Undefined when none
 * is planned: its subscription is disabled (it waits to be enabled), or held past the delivery's
 * retry period (it ends failed when that is over).
 */
function nextAttempt(due: number, giveUpAt: number, subscription: 'active' | 'disabled', pausedUntil: number | null): number | undefined {
  if (subscription === 'disabled' || (pausedUntil !== null && pausedUntil > giveUpAt)) return undefined
  return Math.max(due, pausedUntil ?? 0, Date.now())
}
const fromDeliveries = 'from webhook_deliveries d join webhook_events e on e.id = d.event_id join webhook_subscriptions s on s.id = d.subscription_id'
const listDeliveries = select(`select ${deliveryColumns} ${fromDeliveries} where d.subscription_id = $1 and d.id > $2 order by d.id limit $3`, deliveryOf)
const findDelivery = select(`select ${deliveryColumns} ${fromDeliveries} where d.id = $1`, deliveryOf)

export function webhookRepository(sql: Sql, dialect: Dialect, outbox: Outbox, retryPeriodMs: number): WebhookRepository {
  /**
   * A change of subscriptions, in a transaction. On PostgreSQL it first takes the table that
   * changes read to know who takes their events, exclusively: it waits for the changes that
   * read it to commit, and holds back those that have not yet (see events/outbox.ts). That also makes
   * subscription changes run one at a time, so a count per owner stays true until the commit.
   * (SQLite transactions run one at a time already.)
   */
  const change = <T>(work: (tx: Statements) => Promise<T>) =>
    sql.transaction(async (tx) => {
      if (dialect === 'postgres') await tx.run('lock table webhook_subscription_events in access exclusive mode')
      return work(tx)
    })
  /** Inside a change: the events of `types` are recorded for subscription `id` from its commit on. */
  const takes = async (tx: Statements, id: number, types: readonly EventType[]) => {
    for (const type of types) await tx.run('insert into webhook_subscription_events (type, subscription_id) values ($1, $2)', [type, id])
    outbox.willTake(types)
  }
  const owns = async (tx: Statements, owner: string, id: number) =>
    (await tx.row('select id from webhook_subscriptions where owner = $1 and id = $2', [owner, id])) !== undefined

  return {
    create: (owner, { url, events }, secret, maxPerOwner, apiVersion) =>
      change(async (tx): Promise<Creation> => {
        const { held } = (await tx.row<{ held: number }>('select count(*) as held from webhook_subscriptions where owner = $1', [owner]))!
        if (Number(held) >= maxPerOwner) return { limitReached: maxPerOwner }
        const createdAt = Date.now()
        const { id } = (await tx.row<{ id: number }>(
          'insert into webhook_subscriptions (owner, url, events, secret, created_at, api_version) values ($1, $2, $3, $4, $5, $6) returning id',
          [owner, url, JSON.stringify(events), secret, createdAt, apiVersion],
        ))!
        await takes(tx, id, events)
        return { created: { id, url, events, createdAt: iso(createdAt), status: 'active' } }
      }),

    list: (owner) => sql.all(listOwned, [owner]),

    find: (owner, id) => sql.one(findOwned, [owner, id]),

    async remove(owner, id) {
      const removed = await change(async (tx) => {
        if (!(await owns(tx, owner, id))) return false
        await tx.run('delete from webhook_deliveries where subscription_id = $1', [id])
        await tx.run('delete from webhook_subscription_events where subscription_id = $1', [id])
        await tx.run('delete from webhook_subscriptions where id = $1', [id])
        return true
      })
      if (removed) await outbox.refresh()
      return removed
    },

    async rotate(owner, id, secret, overlapMs) {
      const expiresAt = Date.now() + overlapMs
      const rotated = await sql.run(
        `update webhook_subscriptions set previous_secret = secret, secret = $3, previous_secret_expires_at = $4
         where owner = $1 and id = $2`,
        [owner, id, secret, expiresAt],
      )
      return rotated === 0 ? undefined : { previousSecretExpiresAt: iso(expiresAt) }
    },

    deliveries: (owner, id, { limit, after = 0 }) =>
      andThen(sql.one(findOwned, [owner, id]), (webhook) => (webhook === undefined ? undefined : sql.all(listDeliveries, [id, after, limit]))),

    redeliver: (owner, id, deliveryId) =>
      sql.transaction(async (tx) => {
        if (!(await owns(tx, owner, id))) return undefined
        const now = Date.now()
        const due = await tx.run(
          `update webhook_deliveries set status = 'pending', next_attempt_at = $3, give_up_at = $4, finished_at = null
           where id = $1 and subscription_id = $2`,
          [deliveryId, id, now, now + retryPeriodMs],
        )
        return due === 0 ? undefined : tx.one(findDelivery, [deliveryId])
      }),

    async disable(id, reason, lastError) {
      const disabled = await change(async (tx) => {
        const now = Date.now()
        const changed = await tx.run(
          "update webhook_subscriptions set status = 'disabled', disabled_reason = $2, disabled_at = $3 where id = $1 and status = 'active'",
          [id, reason, now],
        )
        if (changed === 0) return false
        // (taken under the same lock as a subscription's creation: every change that recorded an
        // event for it has committed, and its delivery ends here; later ones record none)
        await tx.run('delete from webhook_subscription_events where subscription_id = $1', [id])
        // (an attempt under way was sent: its outcome is written under its lease, a retry not made)
        await tx.run(
          `update webhook_deliveries set status = 'failed', last_error = $2, next_attempt_at = null, finished_at = $3, lease_owner = null, lease_until = null
           where subscription_id = $1 and status = 'pending' and (lease_until is null or lease_until < $3)`,
          [id, lastError, now],
        )
        return true
      })
      if (disabled) await outbox.refresh()
      return disabled
    },

    enable: (owner, id) =>
      change(async (tx) => {
        const found = await tx.row<{ events: string; status: string }>('select events, status from webhook_subscriptions where owner = $1 and id = $2', [
          owner,
          id,
        ])
        if (found === undefined) return undefined
        await tx.run(
          `update webhook_subscriptions set status = 'active', disabled_reason = null, disabled_at = null, failures = 0, failing_since = null,
             circuit_openings = 0, paused_until = null where id = $1`,
          [id],
        )
        if (found.status === 'disabled') await takes(tx, id, JSON.parse(found.events) as EventType[])
        return tx.one(findOwned, [owner, id])
      }),
  }
}
