import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { type AddressInfo, createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { sqliteKeyChanges } from '../src/storage/key-changes.js'
import { postgresKeyChanges } from '../src/storage/postgres-key-changes.js'
import { sleep } from './helpers/concurrency.js'

t.test('SQLite: data_version is asked at most once a window, and a change waits out the window before it is done', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'petstore-key-changes-')), 'keys.db')
  const [ours, theirs] = [new SQLite(file), new SQLite(file)]
  t.teardown(() => {
    ours.close()
    theirs.close()
  })
  for (const connection of [ours, theirs]) connection.pragma('journal_mode = WAL')
  theirs.exec('create table api_keys (id integer primary key)')
  const windowMs = 200
  const changes = sqliteKeyChanges(ours, windowMs)

  const began = performance.now()
  theirs.exec('insert into api_keys default values')
  t.equal(changes.changed(), false, 'within the window of the last answer: that answer stands')
  await changes.propagated()
  t.ok(performance.now() - began >= windowMs, 'propagated waits out the window')
  t.equal(changes.changed(), true, 'once the window is over, a commit made before is seen')
  t.equal(changes.changed(), false, 'and reported once')

  await new Promise((resolve) => setTimeout(resolve, windowMs + 1))
  t.equal(changes.changed(), false, 'no commit since: no change')
  ours.exec('insert into api_keys default values')
  await new Promise((resolve) => setTimeout(resolve, windowMs + 1))
  t.equal(changes.changed(), false, "the connection's own commits do not count")
  await changes.close()
})

t.test('PostgreSQL: a server that takes the connection and never answers holds neither the listener nor its close', async (t) => {
  // (a black hole: accepts, reads nothing, answers nothing, never closes its side)
  const connections = new Set<Socket>()
  const blackHole = createServer({ allowHalfOpen: true }, (socket) => connections.add(socket))
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const socket of connections) socket.destroy()
    blackHole.close()
  })
  const { port } = blackHole.address() as AddressInfo
  const boundMs = 500
  const changes = postgresKeyChanges({ connectionString: `postgres://postgres@127.0.0.1:${port}/none` }, boundMs)
  t.equal(changes.changed(), true, 'not listening: a key may have changed')
  // cut at the bound, then tried again a second later
  for (let waited = 0; connections.size < 2 && waited < 10_000; waited += 20) await sleep(20)
  t.equal(connections.size, 2, 'the first connection was cut, and a second one tried')
  t.equal(changes.changed(), true, 'still not listening')
  // closed while the second waits for its answer: cut at the bound, not held
  const started = Date.now()
  await changes.close()
  const ms = Date.now() - started
  t.ok(ms < boundMs + 1_000, `closed within the bound (${ms} ms)`)
  await sleep(1_500)
  t.equal(connections.size, 2, 'closed: no connection tried again')
})
