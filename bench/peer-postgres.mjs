// The hand-written peer on PostgreSQL: a pg Pool of 10, named (prepared) statements on the
// service's schema (made by its migrations before this starts), one INSERT per createPet
// (its own transaction: committed, and flushed by the server, before the answer).
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
const insertOne = 'insert into pets (name, category_id, status) values ($1, $2, $3) returning id'

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
  async create({ name, categoryId, status }) {
    const { rows } = await pool.query({ name: 'insert', text: insertOne, values: [name, categoryId, status] })
    return { id: rows[0].id, name, categoryId, status }
  },
  close: () => pool.end(),
})
