import type { components } from '../../generated/newest.js'
import { allOrders, type OrderScope } from '../auth/access.js'
import type { MaybePromise } from '../core/maybe-async.js'
import type { Outbox } from '../events/outbox.js'
import { type PetStatus, petColumns } from '../pets/repository.js'
import { mapping } from '../storage/columns.js'
import type { Dialect } from '../storage/database.js'
import { type KeepContext, transactions } from '../storage/group-commit.js'
import { type Sql, type Statements, select } from '../storage/sql.js'
import { type IdempotencyKey, idempotencyKeys } from './idempotency.js'

type Schemas = components['schemas']
type OrderSchema = Schemas['Order']
/** The API's Order (an interface of its own name, for the compiler's messages) */
export interface Order extends OrderSchema {}
export type NewOrder = Schemas['NewOrder']
export type OrderStatus = Schemas['OrderStatus']
/** The statuses a placed order can move to. */
export type OrderTarget = Schemas['OrderUpdate']['status']

export interface OrderQuery {
  scope: OrderScope
  limit: number
  status?: OrderStatus | undefined
  /** only orders whose id is greater */
  after?: number | undefined
}

/** What placing an order came to. Kept as it is for a retry with the same Idempotency-Key. */
export type Placement =
  | { placed: Order }
  | { missing: { petId: number } }
  /** the pet is not available: its status */
  | { unavailable: { petId: number; status: PetStatus } }

/** What moving an order came to. */
export type Transition =
  | { moved: Order }
  | { missing: { orderId: number } }
  /** the order is not placed: as it is */
  | { stuck: Order }
  /** the order is not as the request's If-Match had read it: as it is, unchanged */
  | { stale: Order }

/** Orders, and the pet status each one drives: handlers see only this. Reads answer at once
 * where the database does (SQLite), else by a promise. */
export interface OrderRepository {
  /** Orders an available pet for `owner` (a principal), which becomes pending, in one
   * transaction. With an idempotency key: a key used before is answered what it was then, as
   * `replayed` (or `reused`, for another body). */
  place(order: NewOrder, owner: string, idempotency?: IdempotencyKey): Promise<Placement | { replayed: Placement } | { reused: true }>
  /** the order, if `scope` sees it */
  find(id: number, scope: OrderScope): MaybePromise<Order | undefined>
  /** the orders `scope` sees, in ascending id order */
  list(query: OrderQuery): MaybePromise<Order[]>
  /** placed -> delivered (the pet is sold) or cancelled (the pet is available), in one
   * transaction; an order `scope` does not see is `missing`. With a precondition (If-Match), the
   * order as it is, read in that transaction and held there, must pass it: else it is `stale`. */
  update(id: number, target: OrderTarget, scope: OrderScope, precondition?: (current: Order) => boolean): Promise<Transition>
  /** deletes the idempotency keys older than a day, as done every 10 minutes; returns how many */
  forgetExpiredKeys(now?: number): MaybePromise<number>
  /** stops the forgetting */
  close(): void
}

/** Each property of the API's Order and the column of `orders` that holds it (see petColumns). */
export const orderColumns = mapping<Order>('orders', {
  id: 'id',
  petId: 'pet_id',
  status: 'status',
  // an ISO date to the API, milliseconds since the epoch in the table
  placedAt: { name: 'placed_at', read: (ms: number) => new Date(ms).toISOString(), write: (iso) => Date.parse(iso) },
})

// listOrders pages by id: with a status, the (status, id) index serves it; without, the primary
// key; a client's own, the (owner, id) and (owner, status, id) indexes (migration 0008).
const listAll = select(`select ${orderColumns.list} from orders where id > $1 order by id limit $2`, orderColumns.read)
const listByStatus = select(`select ${orderColumns.list} from orders where status = $1 and id > $2 order by id limit $3`, orderColumns.read)
const listOwn = select(`select ${orderColumns.list} from orders where owner = $3 and id > $1 order by id limit $2`, orderColumns.read)
const listOwnByStatus = select(`select ${orderColumns.list} from orders where owner = $4 and status = $1 and id > $2 order by id limit $3`, orderColumns.read)
const findOne = select(`select ${orderColumns.list} from orders where id = $1`, orderColumns.read)
const findOwn = select(`select ${orderColumns.list} from orders where id = $1 and owner = $2`, orderColumns.read)
// An If-Match is judged on the order as it is, held until the change commits: on PostgreSQL the
// row is locked (another transaction's change waits, and is judged on what this one made);
// SQLite's transaction holds its one connection, so nothing else runs in between.
const lockedFor = (dialect: Dialect) => {
  const lock = dialect === 'postgres' ? ' for update' : ''
  return {
    all: select(`select ${orderColumns.list} from orders where id = $1${lock}`, orderColumns.read),
    own: select(`select ${orderColumns.list} from orders where id = $1 and owner = $2${lock}`, orderColumns.read),
  }
}
const insertOrder = orderColumns.insert(['owner'])

// The pet is taken by a conditional update: of two transactions that try at once, the second
// finds it pending (PostgreSQL re-reads the row once the first commits; SQLite runs them one
// after the other), changes nothing, and is refused. No read-then-write.
const takePet = select(`update pets set status = 'pending' where id = $1 and status = 'available' returning ${petColumns.list}`, petColumns.read)
const petStatus = 'select status from pets where id = $1'
const moveOrder = select(`update orders set status = $2 where id = $1 and status = 'placed' returning ${orderColumns.list}, owner`, (values) => ({
  order: orderColumns.read(values),
  owner: values.at(-1) as string | null,
}))
const moveOwn = select(`update orders set status = $2 where id = $1 and status = 'placed' and owner = $3 returning ${orderColumns.list}, owner`, moveOrder.row)
const setPetStatus = select(`update pets set status = $2 where id = $1 returning ${petColumns.list}`, petColumns.read)

/** The pet's status once its order has moved. */
const petStatusAfter: Record<OrderTarget, PetStatus> = { delivered: 'sold', cancelled: 'available' }

/** `windowMs`: how long an Idempotency-Key is remembered; `keepContext`: what keeps each write in its
 * own request's context in a shared commit (tracing on). */
export function orderRepository(sql: Sql, dialect: Dialect, outbox: Outbox, windowMs: number, keepContext?: KeepContext): OrderRepository {
  // SQLite pays an fsync per commit: writes that arrive together share one (see storage/group-commit.ts).
  const write = transactions(sql, dialect === 'sqlite', keepContext)
  const keys = idempotencyKeys<Placement>(sql, windowMs)
  const locked = lockedFor(dialect)

  async function placeIn(tx: Statements, order: NewOrder, owner: string, placedAt: number): Promise<Placement> {
    const { petId } = order
    const taken = await tx.one(takePet, [petId])
    if (taken === undefined) {
      const pet = await tx.row<{ status: PetStatus }>(petStatus, [petId])
      return pet === undefined ? { missing: { petId } } : { unavailable: { petId, status: pet.status } }
    }
    const placed = (await tx.one(insertOrder, [...orderColumns.values({ ...order, status: 'placed', placedAt: new Date(placedAt).toISOString() }), owner]))!
    await outbox.record(tx, [
      { type: 'order.placed', data: orderColumns.stored(placed), audience: owner },
      { type: 'pet.status_changed', data: petColumns.stored(taken), from: 'available', to: 'pending' },
    ])
    return { placed }
  }

  return {
    place: (order, owner, idempotency) =>
      write(async (tx) => {
        const now = Date.now()
        if (idempotency === undefined) return placeIn(tx, order, owner, now)
        const claim = await keys.claim(tx, idempotency, now)
        if ('kept' in claim) return { replayed: claim.kept }
        if ('reused' in claim) return claim
        const placement = await placeIn(tx, order, owner, now)
        await keys.keep(tx, idempotency, placement)
        return placement
      }),

    find: (id, scope) => (scope === allOrders ? sql.one(findOne, [id]) : sql.one(findOwn, [id, scope])),

    list: ({ scope, limit, status, after = 0 }) => {
      if (scope === allOrders) return status === undefined ? sql.all(listAll, [after, limit]) : sql.all(listByStatus, [status, after, limit])
      return status === undefined ? sql.all(listOwn, [after, limit, scope]) : sql.all(listOwnByStatus, [status, after, limit, scope])
    },

    update: (id, target, scope, precondition) =>
      write(async (tx): Promise<Transition> => {
        if (precondition !== undefined) {
          const current = scope === allOrders ? await tx.one(locked.all, [id]) : await tx.one(locked.own, [id, scope])
          if (current === undefined) return { missing: { orderId: id } }
          if (!precondition(current)) return { stale: current }
        }
        const moving = scope === allOrders ? await tx.one(moveOrder, [id, target]) : await tx.one(moveOwn, [id, target, scope])
        if (moving === undefined) {
          const order = scope === allOrders ? await tx.one(findOne, [id]) : await tx.one(findOwn, [id, scope])
          return order === undefined ? { missing: { orderId: id } } : { stuck: order }
        }
        const { order: moved, owner } = moving
        const pet = (await tx.one(setPetStatus, [moved.petId, petStatusAfter[target]]))!
        await outbox.record(tx, [
          // (to the order's owner, also when staff move it)
          { type: 'order.status_changed', data: orderColumns.stored(moved), from: 'placed', to: target, audience: owner },
          { type: 'pet.status_changed', data: petColumns.stored(pet), from: 'pending', to: petStatusAfter[target] },
        ])
        return { moved }
      }),

    forgetExpiredKeys: (now = Date.now()) => keys.forgetExpired(now),
    close: () => keys.close(),
  }
}
