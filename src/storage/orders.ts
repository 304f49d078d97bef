import type { components } from '../../generated/api.js'
import type { MaybePromise } from '../maybe-async.js'
import { mapping } from './columns.js'
import type { Dialect } from './database.js'
import { transactions } from './group-commit.js'
import { type IdempotencyKey, idempotencyKeys } from './idempotency.js'
import type { Outbox } from './outbox.js'
import { type PetStatus, petColumns } from './pets.js'
import { type Sql, type Statements, select } from './sql.js'

type Schemas = components['schemas']
type OrderSchema = Schemas['Order']
/** The API's Order (an interface of its own name, for the compiler's messages) */
export interface Order extends OrderSchema {}
export type NewOrder = Schemas['NewOrder']
export type OrderStatus = Schemas['OrderStatus']
/** The statuses a placed order can move to. */
export type OrderTarget = Schemas['OrderUpdate']['status']

export interface OrderQuery {
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

/** Orders, and the pet status each one drives: handlers see only this. Reads answer at once
 * where the database does (SQLite), else by a promise. */
export interface OrderRepository {
  /** Orders an available pet, which becomes pending, in one transaction. With an idempotency
   * key: a key used before is answered what it was then (or `reused`, for another body). */
  place(order: NewOrder, idempotency?: IdempotencyKey): Promise<Placement | { reused: true }>
  find(id: number): MaybePromise<Order | undefined>
  /** orders in ascending id order */
  list(query: OrderQuery): MaybePromise<Order[]>
  /** placed -> delivered (the pet is sold) or cancelled (the pet is available), in one transaction */
  update(id: number, target: OrderTarget): Promise<Transition>
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

// listOrders pages by id: with a status, the (status, id) index serves it; without, the primary key.
const listAll = select(`select ${orderColumns.list} from orders where id > $1 order by id limit $2`, orderColumns.read)
const listByStatus = select(`select ${orderColumns.list} from orders where status = $1 and id > $2 order by id limit $3`, orderColumns.read)
const findOne = select(`select ${orderColumns.list} from orders where id = $1`, orderColumns.read)
const insertOrder = orderColumns.insert()

// The pet is taken by a conditional update: of two transactions that try at once, the second
// finds it pending (PostgreSQL re-reads the row once the first commits; SQLite runs them one
// after the other), changes nothing, and is refused. No read-then-write.
const takePet = select(`update pets set status = 'pending' where id = $1 and status = 'available' returning ${petColumns.list}`, petColumns.read)
const petStatus = 'select status from pets where id = $1'
const moveOrder = select(`update orders set status = $2 where id = $1 and status = 'placed' returning ${orderColumns.list}`, orderColumns.read)
const setPetStatus = select(`update pets set status = $2 where id = $1 returning ${petColumns.list}`, petColumns.read)

/** The pet's status once its order has moved. */
const petStatusAfter: Record<OrderTarget, PetStatus> = { delivered: 'sold', cancelled: 'available' }

export function orderRepository(sql: Sql, dialect: Dialect, outbox: Outbox): OrderRepository {
  // SQLite pays an fsync per commit: writes that arrive together share one (see group-commit.ts).
  const write = transactions(sql, dialect === 'sqlite')
  const keys = idempotencyKeys<Placement>(sql)

  async function placeIn(tx: Statements, order: NewOrder, placedAt: number): Promise<Placement> {
    const { petId } = order
    const taken = await tx.one(takePet, [petId])
    if (taken === undefined) {
      const pet = await tx.row<{ status: PetStatus }>(petStatus, [petId])
      return pet === undefined ? { missing: { petId } } : { unavailable: { petId, status: pet.status } }
    }
    const placed = (await tx.one(insertOrder, orderColumns.values({ ...order, status: 'placed', placedAt: new Date(placedAt).toISOString() })))!
    await outbox.record(tx, [
      { type: 'order.placed', data: placed },
      { type: 'pet.status_changed', data: taken, from: 'available', to: 'pending' },
    ])
    return { placed }
  }

  return {
    place: (order, idempotency) =>
      write(async (tx) => {
        const now = Date.now()
        if (idempotency === undefined) return placeIn(tx, order, now)
        const claim = await keys.claim(tx, idempotency, now)
        if ('kept' in claim) return claim.kept
        if ('reused' in claim) return claim
        const placement = await placeIn(tx, order, now)
        await keys.keep(tx, idempotency, placement)
        return placement
      }),

    find: (id) => sql.one(findOne, [id]),

    list: ({ limit, status, after = 0 }) => (status === undefined ? sql.all(listAll, [after, limit]) : sql.all(listByStatus, [status, after, limit])),

    update: (id, target) =>
      write(async (tx): Promise<Transition> => {
        const moved = await tx.one(moveOrder, [id, target])
        if (moved === undefined) {
          const order = await tx.one(findOne, [id])
          return order === undefined ? { missing: { orderId: id } } : { stuck: order }
        }
        const pet = (await tx.one(setPetStatus, [moved.petId, petStatusAfter[target]]))!
        await outbox.record(tx, [
          { type: 'order.status_changed', data: moved, from: 'placed', to: target },
          { type: 'pet.status_changed', data: pet, from: 'pending', to: petStatusAfter[target] },
        ])
        return { moved }
      }),

    forgetExpiredKeys: (now = Date.now()) => keys.forgetExpired(now),
    close: () => keys.close(),
  }
}
