/**
 * The statement layer under the repositories: one SQLite connection shared by statements and
 * transactions without one running inside the other, and transactions on both stores that roll
 * back what failed and report the real cause.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import t, { type Test } from 'tap'
import { StorageUnavailable } from '../src/core/errors.js'
import { classifyPostgres, postgresSql, sqliteSql } from '../src/storage/sql.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { sleep } from './helpers/concurrency.js'
import { databaseProxy } from './helpers/database-proxy.js'

/** The promise fails with StorageUnavailable: a 503 for the client, the cause for the log. */
/** `statement`'s failure (thrown, or its promise's) is StorageUnavailable. */
async function unavailable(t: Test, statement: () => unknown, what: string) {
  const error = await (async () => statement())().then(
    () => undefined,
    (error: Error) => error,
  )
  t.ok(error instanceof StorageUnavailable, `${what}: StorageUnavailable (${error?.message})`)
}

function sqlite(t: Test, file = ':memory:') {
  const connection = new SQLite(file)
  t.teardown(() => connection.close())
  connection.exec('create table items (id integer primary key, name text not null)')
  return { connection, sql: sqliteSql(connection) }
}

t.test('SQLite: a statement issued while a transaction awaits runs after it, never inside it', async (t) => {
  const { sql } = sqlite(t)
  const order: string[] = []
  const transaction = sql.transaction(async (tx) => {
    await tx.run("insert into items (name) values ('a')")
    await sleep(50) // the transaction holds the connection across turns of the event loop
    order.push('transaction done')
    throw new Error('changed my mind')
  })
  const read = Promise.resolve(sql.rows<{ name: string }>('select name from items')).then((rows) => {
    order.push('read')
    return rows
  })
  const second = sql.transaction(async (tx) => {
    order.push('second transaction')
    return tx.run("insert into items (name) values ('b')")
  })
  await t.rejects(transaction, { message: 'changed my mind' }, 'the error of the work surfaces')
  t.notOk(
    (await read).some(({ name }) => name === 'a'),
    'the read waited, and saw nothing of the rolled-back insert',
  )
  t.equal(await second, 1)
  t.equal(order[0], 'transaction done', 'the read and the second transaction waited for the first')
  t.strictSame(await sql.rows('select name from items'), [{ name: 'b' }])
})

t.test('SQLite: a transaction that SQLite ended itself reports its own error, not a failed rollback', async (t) => {
  const { connection, sql } = sqlite(t)
  const failure = sql.transaction(async (tx) => {
    await tx.run("insert into items (name) values ('a')")
    // what SQLite does on SQLITE_FULL: the transaction is over before the error reaches us
    connection.exec('rollback')
    throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })
  })
  await t.rejects(failure, { code: 'SQLITE_FULL' })
  t.strictSame(await sql.rows('select name from items'), [])
})

t.test('SQLite: "not now" errors are StorageUnavailable (a 503), others are themselves (a 500)', async (t) => {
  const { connection, sql } = sqlite(t, join(mkdtempSync(join(tmpdir(), 'petstore-sql-')), 'items.db'))
  connection.pragma('busy_timeout = 10')
  const other = new SQLite(connection.name)
  t.teardown(() => other.close())
  other.exec('begin immediate') // another process holds the write lock past busy_timeout
  await unavailable(t, () => sql.run("insert into items (name) values ('a')"), 'busy')
  await unavailable(t, () => sql.transaction(async () => 1), 'busy')
  other.exec('rollback')
  t.throws(() => sql.run('insert into nowhere values (1)'), { message: /no such table: nowhere/ }, 'SQLite answers at once, failures too')
  t.equal(await sql.run("insert into items (name) values ('a')"), 1)
})

t.test(
  'PostgreSQL: a failed transaction is rolled back and its connection reused; a broken one is dropped; no connection is a 503',
  { skip: postgresMissing },
  async (t) => {
    const url = await freshPostgres(t)
    const pool = new pg.Pool({ connectionString: url, max: 1 })
    // (as the server's pools do, src/storage/postgres.ts: the connection terminated below may say
    // so once it is back in the pool, where an error nothing listens for would end the process)
    pool.on('error', () => {})
    t.teardown(() => pool.end())
    const sql = postgresSql(pool, 5_000)
    t.teardown(() => sql.close())
    await sql.run('create table items (id serial primary key, name text not null)')

    const failed = sql.transaction(async (tx) => {
      await tx.run("insert into items (name) values ('a')")
      throw new Error('changed my mind')
    })
    await t.rejects(failed, { message: 'changed my mind' })
    t.strictSame(await sql.rows('select name from items'), [], 'rolled back')
    const unreadable = {
      text: 'select 1',
      row: () => {
        throw new Error('unreadable row')
      },
    }
    await t.rejects(
      Promise.resolve(sql.one(unreadable)),
      { message: 'unreadable row' },
      'a row that cannot be made rejects its statement (the process goes on)',
    )
    await t.rejects(
      sql.transaction((tx) => Promise.resolve(tx.all(unreadable))),
      { message: 'unreadable row' },
      'in a transaction too',
    )
    t.equal(await sql.run("insert into items (name) values ('c')"), 1, 'and the connection serves the next statement')
    t.strictSame(await sql.rows('select name from items'), [{ name: 'c' }])
    await sql.run('delete from items')
    const { pid } = (await sql.row<{ pid: number }>('select pg_backend_pid() as pid'))!

    const broken = sql.transaction(async (tx) => {
      await tx.run("insert into items (name) values ('b')")
      await tx.run('select pg_terminate_backend(pg_backend_pid())')
    })
    await unavailable(t, () => broken, 'a connection lost mid-transaction: 503, not 500')
    const { pid: next } = (await sql.row<{ pid: number }>('select pg_backend_pid() as pid'))!
    t.not(next, pid, 'the broken connection was not lent out again')
    t.strictSame(await sql.rows('select name from items'), [], 'nothing of it was kept')

    const nowhere = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', max: 1 })
    t.teardown(() => nowhere.end())
    const lost = postgresSql(nowhere, 5_000)
    t.teardown(() => lost.close())
    await unavailable(t, () => lost.transaction(async () => 1), 'a transaction that cannot get a connection')
  },
)

t.test(
  'PostgreSQL: a statement whose answer does not come within the bound fails as unavailable, alone or in a transaction; its connection is ended, not lent again',
  { skip: postgresMissing },
  async (t) => {
    const proxy = await databaseProxy(t, new URL(await freshPostgres(t)))
    const pool = new pg.Pool({ connectionString: proxy.url, max: 1, connectionTimeoutMillis: 5_000 })
    // (as the service's pool does: a connection that fails while lent out must not end the process)
    pool.on('connect', (client) => client.on('error', () => {}))
    t.teardown(() => pool.end())
    const boundMs = 300
    const sql = postgresSql(pool, boundMs)
    t.teardown(() => sql.close())
    const backend = async () => (await sql.row<{ pid: number }>('select pg_backend_pid() as pid'))!.pid

    let started = 0
    const freeze = () => {
      proxy.freeze(true)
      started = performance.now()
    }
    for (const [what, statement] of [
      [
        'a statement alone',
        () => {
          freeze()
          return sql.row('select 1')
        },
      ],
      [
        'a statement of a transaction',
        () =>
          sql.transaction(async (tx) => {
            await tx.row('select 1')
            freeze()
            return tx.row('select 2')
          }),
      ],
    ] as const) {
      const before = await backend()
      await unavailable(t, statement, `frozen, ${what}`)
      const ms = performance.now() - started
      t.ok(ms >= boundMs && ms < boundMs + 250, `${what}: failed after the bound of ${boundMs} ms (${Math.round(ms)} ms)`)
      proxy.freeze(false)
      t.not(await backend(), before, `after ${what}, the next statement is answered, on a new connection`)
    }
  },
)

t.test(
  'PostgreSQL: what the database or its operator causes is StorageUnavailable (a 503); what our statement causes is itself (a 500)',
  { skip: postgresMissing },
  async (t) => {
    const pool = new pg.Pool({ connectionString: await freshPostgres(t), max: 1 })
    // (the database is dropped at the end with its sessions: the idle connection's error is expected)
    pool.on('error', () => {})
    t.teardown(() => pool.end())
    const sql = postgresSql(pool, 5_000)
    t.teardown(() => sql.close())
    await sql.run('create table items (id serial primary key, name text not null unique)')
    /** the error PostgreSQL raises with this SQLSTATE, at this severity */
    const raised = (code: string, severity = 'ERROR') =>
      Promise.resolve(sql.run(`do $$ begin raise exception 'as if' using errcode = '${code}'; end $$`)).then(
        () => undefined,
        (error: Error) => {
          const failure = (error instanceof StorageUnavailable ? error.cause : error) as Error & { severity: string }
          // (PL/pgSQL raises at ERROR only: a FATAL the server ends a session with is made alike)
          failure.severity = severity
          return classifyPostgres(failure)
        },
      )
    const faults = ['08006', '53100', '53300', '57014', '57P01', '57P03', '58030', 'XX001', '28000', '28P01', '3D000', '42501', '25006']
    for (const code of faults) t.ok((await raised(code)) instanceof StorageUnavailable, `${code}: the database's fault, a 503`)
    t.ok((await raised('55000', 'FATAL')) instanceof StorageUnavailable, '55000 ending the session (a database that accepts no connections): a 503')
    const bugs = ['42601', '42P01', '42703', '22003', '23505', '40001', '40P01', '55000', '0A000', 'P0001']
    for (const code of bugs) t.notOk((await raised(code)) instanceof StorageUnavailable, `${code}: our statement's fault, a 500`)
    // and as PostgreSQL raises them itself
    await t.rejects(Promise.resolve(sql.run('select * from nowhere')), { code: '42P01' }, 'an undefined table is a bug')
    await sql.run("insert into items (name) values ('a')")
    await t.rejects(Promise.resolve(sql.run("insert into items (name) values ('a')")), { code: '23505' }, 'an unexpected constraint violation is a bug')
  },
)
