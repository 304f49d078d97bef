// The hand-written peer on SQLite: better-sqlite3, WAL + synchronous=FULL (a commit is fsynced
// before it returns, as in the service), prepared statements on the service's schema (made by
// its migrations before this starts), one INSERT (one commit, one fsync) per createPet, one
// transaction (one commit, one fsync) per placeOrder and updateOrder.
//
//   DATABASE_URL=sqlite:FILE API_KEYS=KEY PORT=3001 node bench/peer-sqlite.mjs
import Database from 'better-sqlite3'
import { startPeer } from './peer-app.mjs'

const url = process.env.DATABASE_URL ?? ''
if (!url.startsWith('sqlite:')) throw new Error('DATABASE_URL must be sqlite:FILE')
const db = new Database(url.slice('sqlite:'.length), { fileMustExist: true })
db.pragma('busy_timeout = 5000')
db.pragma('journal_mode = WAL')
db.pragma('synchronous = FULL')

const columns = 'id, name, category_id as categoryId, status'
const findOne = db.prepare(`select ${columns} from pets where id = ?`)
const listAll = db.prepare(`select ${columns} from pets where id > ? order by id limit ?`)
const listByStatus = db.prepare(`select ${columns} from pets where status = ? and id > ? order by id limit ?`)
// version 2: each pet with its category's name, when the category exists
const listByStatusV2 = db.prepare(
  `select ${columns}, (select name from categories where categories.id = pets.category_id) as categoryName from pets where status = ? and id > ? order by id limit ?`,
)
const insertOne = db.prepare('insert into pets (name, category_id, status) values (?, ?, ?)')

const orderColumns = 'id, pet_id as petId, status, placed_at as placedAt'
const findOrder = db.prepare(`select ${orderColumns} from orders where id = ?`)
const listOrdersAll = db.prepare(`select ${orderColumns} from orders where id > ? order by id limit ?`)
const listOrdersByStatus = db.prepare(`select ${orderColumns} from orders where status = ? and id > ? order by id limit ?`)
const takePet = db.prepare("update pets set status = 'pending' where id = ? and status = 'available'")
const petStatus = db.prepare('select status from pets where id = ?')
const insertOrder = db.prepare("insert into orders (pet_id, status, placed_at) values (?, 'placed', ?)")
const moveOrder = db.prepare(`update orders set status = ? where id = ? and status = 'placed' returning ${orderColumns}`)
const setPetStatus = db.prepare('update pets set status = ? where id = ?')
// Idempotency-Key, as the service keeps it (its table), under the peer's one key
const principal = 'peer'
const dayMs = 24 * 60 * 60 * 1000
const forgetKey = db.prepare('delete from idempotency_keys where principal = ? and idempotency_key = ? and created_at < ?')
const claimKey = db.prepare(
  'insert into idempotency_keys (principal, idempotency_key, fingerprint, created_at) values (?, ?, ?, ?) on conflict (principal, idempotency_key) do nothing',
)
const keptKey = db.prepare('select fingerprint, outcome from idempotency_keys where principal = ? and idempotency_key = ?')
const keepKey = db.prepare('update idempotency_keys set outcome = ? where principal = ? and idempotency_key = ?')

const asOrder = (row) => ({ ...row, placedAt: new Date(row.placedAt).toISOString() })

function placeIn(petId, now) {
  if (takePet.run(petId).changes === 0) {
    const pet = petStatus.get(petId)
    return pet === undefined ? { missing: { petId } } : { unavailable: { petId, status: pet.status } }
  }
  const { lastInsertRowid } = insertOrder.run(petId, now)
  return { placed: asOrder({ id: Number(lastInsertRowid), petId, status: 'placed', placedAt: now }) }
}

// one immediate transaction per order: the write lock at once, one fsync at commit
const place = db.transaction((petId, idempotency) => {
  const now = Date.now()
  if (idempotency === undefined) return placeIn(petId, now)
  forgetKey.run(principal, idempotency.key, now - dayMs)
  if (claimKey.run(principal, idempotency.key, idempotency.fingerprint, now).changes === 0) {
    const kept = keptKey.get(principal, idempotency.key)
    return kept.fingerprint === idempotency.fingerprint ? JSON.parse(kept.outcome) : { reused: true }
  }
  const outcome = placeIn(petId, now)
  keepKey.run(JSON.stringify(outcome), principal, idempotency.key)
  return outcome
})
const afterStatus = { delivered: 'sold', cancelled: 'available' }
const update = db.transaction((id, target) => {
  const moved = moveOrder.get(target, id)
  if (moved === undefined) {
    const order = findOrder.get(id)
    return order === undefined ? { missing: { orderId: id } } : { stuck: asOrder(order) }
  }
  setPetStatus.run(afterStatus[target], moved.petId)
  return { moved: asOrder(moved) }
})

await startPeer({
  find: (id) => findOne.get(id),
  list: (limit, status, after) => (status === undefined ? listAll.all(after, limit) : listByStatus.all(status, after, limit)),
  listV2: (limit, status, after) => listByStatusV2.all(status, after, limit),
  create({ name, categoryId, status }) {
    const { lastInsertRowid } = insertOne.run(name, categoryId, status)
    return { id: Number(lastInsertRowid), name, categoryId, status }
  },
  findOrder(id) {
    const row = findOrder.get(id)
    return row && asOrder(row)
  },
  listOrders: (limit, status, after) => (status === undefined ? listOrdersAll.all(after, limit) : listOrdersByStatus.all(status, after, limit)).map(asOrder),
  placeOrder: (petId, idempotency) => place.immediate(petId, idempotency),
  updateOrder: (id, target) => update.immediate(id, target),
  close: () => db.close(),
})
