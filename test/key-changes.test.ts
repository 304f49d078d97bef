import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { type AddressInfo, createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t from 'tap'
import pg from 'pg'
import { keysChannel, sqliteKeyChanges } from '../src/storage/key-changes.js'
import { acknowledged, listenerName, postgresKeyChanges } from '../src/storage/postgres-key-changes.js'
import { sleep } from './helpers/concurrency.js'
import { freshPostgres, postgresMissing, query } from './helpers/postgres.js'

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

/** Waits (up to a generous bound) until `count` connections of `url` listen for key changes. */
async function listening(url: string, count: number) {
  const listeners = async () =>
    Number(
      (
        await query(
          url,
          "select count(*) from pg_stat_activity where application_name = $1 and datname = current_database() and state = 'idle' and query like 'listen %'",
          [listenerName],
        )
      ).rows[0].count,
    )
  for (let waited = 0; (await listeners()) < count && waited < 30_000; waited += 50) await sleep(50)
  return listeners()
}

t.test('PostgreSQL: a change is done once every listener has acknowledged it: each sees it at its next call', { skip: postgresMissing }, async (t) => {
  // (each instance named in its URL, as test/instances.test.ts tells them apart)
  const url = await freshPostgres(t)
  const named = (name: string) => ({ connectionString: `${url}?application_name=${name}` })
  const listeners = [postgresKeyChanges(named('petstore-a'), 30_000), postgresKeyChanges(named('petstore-b'), 30_000)]
  t.teardown(() => Promise.all(listeners.map((changes) => changes.close())))
  t.equal(await listening(url, 2), 2, 'both listen')
  // (listening begins with a change: whatever was cached before may have been revoked)
  for (const changes of listeners) changes.changed()
  t.strictSame(
    listeners.map((changes) => changes.changed()),
    [false, false],
    'nothing changed since',
  )
  // a change committed (as the trigger on api_keys says it), then acknowledged; two at once, as
  // two revocations may be: each waits for its own acknowledgements
  await query(url, 'select pg_notify($1, $2)', [keysChannel, ''])
  const started = performance.now()
  await Promise.all([listeners[0]!.propagated(), acknowledged({ connectionString: url }, 30_000)])
  t.ok(performance.now() - started < 30_000, 'both acknowledged by every listener, not given up on at the bound')
  t.strictSame(
    listeners.map((changes) => changes.changed()),
    [true, true],
    'each sees the change at its next call, once acknowledged',
  )
  t.strictSame(
    listeners.map((changes) => changes.changed()),
    [false, false],
    'and once',
  )
})

t.test(
  'PostgreSQL: no listener, done at once; one that never acknowledges, waited for until the bound; no database, not waited for',
  { skip: postgresMissing },
  async (t) => {
    const url = await freshPostgres(t)
    const boundMs = 60_000
    let started = performance.now()
    await acknowledged({ connectionString: url }, boundMs)
    t.ok(performance.now() - started < boundMs, 'no listener: nothing to wait for')

    // a connection named as a listener, that has run a statement but listens to nothing
    const mute = new pg.Client({ connectionString: url, application_name: listenerName })
    await mute.connect()
    t.teardown(() => mute.end())
    await mute.query('select 1')
    const shortMs = 500
    started = performance.now()
    await acknowledged({ connectionString: url }, shortMs)
    t.ok(performance.now() - started >= shortMs - 1, 'a listener that does not answer: waited for until the bound')

    // (a port nothing listens on: the connection refused)
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const { port } = closed.address() as AddressInfo
    await new Promise((resolve) => closed.close(resolve))
    started = performance.now()
    await acknowledged({ connectionString: `postgres://postgres@127.0.0.1:${port}/none` }, boundMs)
    t.ok(performance.now() - started < boundMs, 'no database: the change is committed, nothing to wait for')
  },
)
