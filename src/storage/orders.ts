import type { components } from '../../generated/api.js'
import type { MaybePromise } from '../maybe-async.js'
import type { Dialect } from './database.js'
import { transactions } from './group-commit.js'
import { type IdempotencyKey, idempotencyKeys } from './idempotency.js'
import type { Outbox } from './outbox.js'
import { type PetStatus, petColumns, petOf } from './pets.js'
import { type Sql, type Statements, select } from './sql.js'

export type Order = components['schemas']['Order']
export type OrderStatus = components['schemas']['OrderStatus']
/** The statuses a placed order can move to. */
export type OrderTarget = components['schemas']['OrderUpdate']['status']

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
  place(petId: number, idempotency?: IdempotencyKey): Promise<Placement | { reused: true }>
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

const orderColumns = 'id, pet_id, status, placed_at'

/** An order from the values of `orderColumns` (placed_at: ms since the epoch). */
const orderOf = ([id, petId, status, placedAt]: [number, number, OrderStatus, number]): Order => ({
  id,
  petId,
  status,
  placedAt: new Date(placedAt).toISOString(),
})

// listOrders pages by id: with a status, the (status, id) index serves it; without, the primary key.
const listAll = select(`select ${orderColumns} from orders where id > $1 order by id limit $2`, orderOf)
const listByStatus = select(`select ${orderColumns} from orders where status = $1 and id > $2 order by id limit $3`, orderOf)
const findOne = select(`select ${orderColumns} from orders where id = $1`, orderOf)

// The pet is taken by a conditional update: of two transactions that try at once, the second
// finds it pending (PostgreSQL re-reads the row once the first commits; SQLite runs them one
// after the other), changes nothing, and is refused. No read-then-write.
const takePet = select(`update pets set status = 'pending' where id = $1 and status = 'available' returning ${petColumns}`, petOf)
const petStatus = 'select status from pets where id = $1'
const insertOrder = "insert into orders (pet_id, status, placed_at) values ($1, 'placed', $2) returning id"
const moveOrder = select(`update orders set status = $2 where id = $1 and status = 'placed' returning ${orderColumns}`, orderOf)
const setPetStatus = select(`update pets set status = $2 where id = $1 returning ${petColumns}`, petOf)

/** The pet's status once its order has moved. */
const petStatusAfter: Record<OrderTarget, PetStatus> = { delivered: 'sold', cancelled: 'available' }

export function orderRepository(sql: Sql, dialect: Dialect, outbox: Outbox): OrderRepository {
  // SQLite pays an fsync per commit: writes that arrive together share one (see group-commit.ts).
  const write = transactions(sql, dialect === 'sqlite')
  const keys = idempotencyKeys<Placement>(sql)

  async function placeIn(tx: Statements, petId: number, placedAt: number): Promise<Placement> {
    const taken = await tx.one(takePet, [petId])
    if (taken === undefined) {
      const pet = await tx.row<{ status: PetStatus }>(petStatus, [petId])
      return pet === undefined ? { missing: { petId } } : { unavailable: { petId, status: pet.status } }
    }
    const { id } = (await tx.row<{ id: number }>(insertOrder, [petId, placedAt]))!
    const placed = orderOf([id, petId, 'placed', placedAt])
    await outbox.record(tx, [
      { type: 'order.placed', data: placed },
      { type: 'pet.status_changed', data: taken, from: 'available', to: 'pending' },
    ])
    return { placed }
  }

  return {
    place: (petId, idempotency) =>
      write(async (tx) => {
        const now = Date.now()
        if (idempotency === undefined) return placeIn(tx, petId, now)
        const claim = await keys.claim(tx, idempotency, now)
        if ('kept' in claim) return claim.kept
        if ('reused' in claim) return claim
        const placement = await placeIn(tx, petId, now)
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
