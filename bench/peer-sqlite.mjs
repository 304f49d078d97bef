// The hand-written peer on SQLite: better-sqlite3, WAL + synchronous=FULL (a commit is fsynced
// before it returns, as in the service), prepared statements on the service's schema (made by
// its migrations before this starts), one INSERT (one commit, one fsync) per createPet.
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
const insertOne = db.prepare('insert into pets (name, category_id, status) values (?, ?, ?)')

await startPeer({
  find: (id) => findOne.get(id),
  list: (limit, status, after) => (status === undefined ? listAll.all(after, limit) : listByStatus.all(status, after, limit)),
  create({ name, categoryId, status }) {
    const { lastInsertRowid } = insertOne.run(name, categoryId, status)
    return { id: Number(lastInsertRowid), name, categoryId, status }
  },
  close: () => db.close(),
})
