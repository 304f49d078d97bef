// The hand-written peer on PostgreSQL: a pg Pool of 10, named (prepared) statements on the
// service's schema (made by its migrations before this starts), one INSERT per createPet
// (its own transaction: committed, and flushed by the server, before the answer), and one
// transaction on a connection of the pool per placeOrder and updateOrder.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/DB API_KEYS=KEY PORT=3001 node bench/peer-postgres.mjs
import pg from 'pg'
import { startPeer } from './peer-app.mjs'

// bigint (ids, categories) as a number, as the service reads them
const types = { getTypeParser: (oid, format) => (oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format)) }
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, types })
pool.on('error', () => {})

const columns = 'id, name, category_id as "categoryId", status'
const findOne = `select ${columns} from pets where id = $1`
const listAll = `select ${columns} from pets where id > $1 order by id limit $2`
const listByStatus = `select ${columns} from pets where status = $1 and id > $2 order by id limit $3`
// version 2: each pet with its category's name, when the category exists
const listByStatusV2 = `select id, name, category_id as "categoryId", (select name from categories where categories.id = pets.category_id) as "categoryName", status
  from pets where status = $1 and id > $2 order by id limit $3`
const insertOne = 'insert into pets (name, category_id, status) values ($1, $2, $3) returning id'

const orderColumns = 'id, pet_id as "petId", status, placed_at as "placedAt"'
const statements = {
  findOrder: `select ${orderColumns} from orders where id = $1`,
  listOrdersAll: `select ${orderColumns} from orders where id > $1 order by id limit $2`,
  listOrdersByStatus: `select ${orderColumns} from orders where status = $1 and id > $2 order by id limit $3`,
  takePet: "update pets set status = 'pending' where id = $1 and status = 'available'",
  petStatus: 'select status from pets where id = $1',
  insertOrder: "insert into orders (pet_id, status, placed_at) values ($1, 'placed', $2) returning id",
  moveOrder: `update orders set status = $2 where id = $1 and status = 'placed' returning ${orderColumns}`,
  setPetStatus: 'update pets set status = $2 where id = $1',
  forgetKey: 'delete from idempotency_keys where principal = $1 and idempotency_key = $2 and created_at < $3',
  claimKey:
    'insert into idempotency_keys (principal, idempotency_key, fingerprint, created_at) values ($1, $2, $3, $4) on conflict (principal, idempotency_key) do nothing',
  keptKey: 'select fingerprint, outcome from idempotency_keys where principal = $1 and idempotency_key = $2',
  keepKey: 'update idempotency_keys set outcome = $3 where principal = $1 and idempotency_key = $2',
}
/** A named (prepared) statement of the list above. */
const run = (client, name, values) => client.query({ name, text: statements[name], values })
// Idempotency-Key, as the service keeps it (its table), under the peer's one key
const principal = 'peer'
const dayMs = 24 * 60 * 60 * 1000
const asOrder = (row) => ({ ...row, placedAt: new Date(row.placedAt).toISOString() })
const afterStatus = { delivered: 'sold', cancelled: 'available' }

/** `work(client)` in a transaction on a connection of the pool. */
async function transaction(work) {
  const client = await pool.connect()
  try {
    await client.query('begin')
    const result = await work(client)
    await client.query('commit')
    return result
  } catch (error) {
    await client.query('rollback').catch(() => {})
    throw error
  } finally {
    client.release()
  }
}

async function placeIn(client, petId, now) {
  if ((await run(client, 'takePet', [petId])).rowCount === 0) {
    const { rows } = await run(client, 'petStatus', [petId])
    return rows.length === 0 ? { missing: { petId } } : { unavailable: { petId, status: rows[0].status } }
  }
  const { rows } = await run(client, 'insertOrder', [petId, now])
  return { placed: asOrder({ id: rows[0].id, petId, status: 'placed', placedAt: now }) }
}

await startPeer({
  async find(id) {
    const { rows } = await pool.query({ name: 'find', text: findOne, values: [id] })
    return rows[0]
  },
  async list(limit, status, after) {
    const query =
      status === undefined
        ? { name: 'list_all', text: listAll, values: [after, limit] }
        : { name: 'list_by_status', text: listByStatus, values: [status, after, limit] }
    return (await pool.query(query)).rows
  },
  async listV2(limit, status, after) {
    return (await pool.query({ name: 'list_by_status_v2', text: listByStatusV2, values: [status, after, limit] })).rows
  },
  async create({ name, categoryId, status }) {
    const { rows } = await pool.query({ name: 'insert', text: insertOne, values: [name, categoryId, status] })
    return { id: rows[0].id, name, categoryId, status }
  },
  async findOrder(id) {
    const { rows } = await run(pool, 'findOrder', [id])
    return rows[0] && asOrder(rows[0])
  },
  async listOrders(limit, status, after) {
    const { rows } = status === undefined ? await run(pool, 'listOrdersAll', [after, limit]) : await run(pool, 'listOrdersByStatus', [status, after, limit])
    return rows.map(asOrder)
  },
  placeOrder: (petId, idempotency) =>
    transaction(async (client) => {
      const now = Date.now()
      if (idempotency === undefined) return placeIn(client, petId, now)
      await run(client, 'forgetKey', [principal, idempotency.key, now - dayMs])
      if ((await run(client, 'claimKey', [principal, idempotency.key, idempotency.fingerprint, now])).rowCount === 0) {
        const { rows } = await run(client, 'keptKey', [principal, idempotency.key])
        return rows[0].fingerprint === idempotency.fingerprint ? JSON.parse(rows[0].outcome) : { reused: true }
      }
      const outcome = await placeIn(client, petId, now)
      await run(client, 'keepKey', [principal, idempotency.key, JSON.stringify(outcome)])
      return outcome
    }),
  updateOrder: (id, target) =>
    transaction(async (client) => {
      const { rows } = await run(client, 'moveOrder', [id, target])
      if (rows.length === 0) {
        const found = await run(client, 'findOrder', [id])
        return found.rows.length === 0 ? { missing: { orderId: id } } : { stuck: asOrder(found.rows[0]) }
      }
      await run(client, 'setPetStatus', [rows[0].petId, afterStatus[target]])
      return { moved: asOrder(rows[0]) }
    }),
  close: () => pool.end(),
})
