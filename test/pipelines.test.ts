/**
 * Reads on pipelined connections (PostgreSQL): many at once on each of a few connections, each
 * answered alone; writes and locking reads stay on the pool; a connection that is lost, refused,
 * frozen or never opens fails only the statements it carried, as unavailable, and the next ones
 * go to a new one.
 */
import pg from 'pg'
import t, { type Test } from 'tap'
import { pipelines } from '../src/storage/postgres-pipelines.js'
import { StorageUnavailable } from '../src/core/errors.js'
import { postgresSql } from '../src/storage/sql.js'
import { databaseProxy } from './helpers/database-proxy.js'
import { freshPostgres, freshRole, postgresMissing, query } from './helpers/postgres.js'

const pid = 'select pg_backend_pid() as pid'

/** postgresSql on a pool of one connection, with `count` pipelined read connections to `url`. */
function opened(t: Test, url: string, count: number, boundMs = 5_000, connectMs = 5_000) {
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  const reads = pipelines({ connectionString: url, connectionTimeoutMillis: connectMs }, count, boundMs)
  const sql = postgresSql(pool, boundMs, reads.send)
  t.teardown(async () => {
    sql.close()
    await Promise.all([pool.end(), reads.close()])
  })
  return { sql, reads }
}

/** What `statement` fails with, or undefined. */
const failure = (statement: Promise<unknown>) =>
  statement.then(
    () => undefined,
    (error: Error) => error,
  )

const pidsOf = async (rows: Promise<{ pid: number } | undefined>[]) => new Set((await Promise.all(rows)).map((row) => row!.pid))

t.test(
  'reads go on the pipelined connections, at most their number; writes, locking reads and transactions on the pool',
  { skip: postgresMissing },
  async (t) => {
    const { sql, reads } = opened(t, await freshPostgres(t), 2)
    t.strictSame(reads.stats(), { max: 2, open: 0, unanswered: 0 }, 'nothing opened before the first read')
    const pooled = (await sql.transaction((tx) => Promise.resolve(tx.row<{ pid: number }>(pid))))!.pid

    const many = Array.from({ length: 50 }, () => Promise.resolve(sql.row<{ pid: number }>(pid)))
    t.equal(reads.stats().unanswered, 50, 'all fifty are on their way at once')
    const readers = await pidsOf(many)
    t.equal(readers.size, 2, 'fifty reads at once, on the two connections')
    t.notOk(readers.has(pooled), 'none on the pool')
    t.strictSame(reads.stats(), { max: 2, open: 2, unanswered: 0 })

    await sql.run('create table items (id serial primary key, name text not null)')
    t.equal(await sql.run("insert into items (name) values ('a')"), 1)
    const written = await sql.row<{ pid: number }>("insert into items (name) values ('b') returning pg_backend_pid() as pid")
    t.equal(written!.pid, pooled, 'a write is on the pool')
    const locked = await sql.row<{ pid: number }>('select pg_backend_pid() as pid from items where id = 1 for update')
    t.equal(locked!.pid, pooled, 'a read that locks is on the pool (it could wait, and hold up the reads behind it)')
    t.strictSame(await sql.rows('select name from items order by id'), [{ name: 'a' }, { name: 'b' }], 'a read sees what was written before it')

    await reads.close()
    t.strictSame(reads.stats(), { max: 2, open: 0, unanswered: 0 }, 'closed: none open')
    t.match(await failure(Promise.resolve(sql.row(pid))), { message: /after they were closed/ }, 'a read after close fails, and opens nothing')
    t.equal(reads.stats().open, 0)
  },
)

t.test('a read that fails fails alone: the ones sent with it are answered', { skip: postgresMissing }, async (t) => {
  const { sql } = opened(t, await freshPostgres(t), 1)
  const [before, wrong, after] = [sql.row('select 1 as n'), failure(Promise.resolve(sql.row('select * from nowhere'))), sql.row('select 2 as n')]
  t.strictSame(await before, { n: 1 })
  const error = await wrong
  t.match(error, { code: '42P01' }, 'the wrong one fails with its own error')
  t.notOk(error instanceof StorageUnavailable, 'ours, so a 500')
  t.strictSame(await after, { n: 2 }, 'the one behind it is answered')
})

t.test('a read connection ended by the server: its reads fail as unavailable; the next go on a new one', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  const { sql, reads } = opened(t, url, 1)
  const first = (await sql.row<{ pid: number }>(pid))!.pid
  const slow = failure(Promise.resolve(sql.row('select pg_sleep(5)')))
  await query(url, 'select pg_terminate_backend($1)', [first])
  t.ok((await slow) instanceof StorageUnavailable, 'the read under way: unavailable')
  const next = (await sql.row<{ pid: number }>(pid))!.pid
  t.not(next, first, 'the next read, on a new connection')
  t.equal(reads.stats().open, 1)
})

t.test(
  'a frozen server: reads fail as unavailable after the bound, and the connection is replaced; one that never opens fails within the connect bound',
  { skip: postgresMissing },
  async (t) => {
    const proxy = await databaseProxy(t, new URL(await freshPostgres(t)))
    const boundMs = 300
    const { sql, reads } = opened(t, proxy.url, 1, boundMs, 500)
    const first = (await sql.row<{ pid: number }>(pid))!.pid
    proxy.freeze(true)
    const started = performance.now()
    const errors = await Promise.all([1, 2, 3].map(() => failure(Promise.resolve(sql.row('select 1')))))
    const ms = performance.now() - started
    t.ok(
      errors.every((error) => error instanceof StorageUnavailable),
      'the three reads: unavailable',
    )
    t.ok(ms >= boundMs && ms < boundMs + 250, `after the bound of ${boundMs} ms (${Math.round(ms)} ms)`)
    t.equal(reads.stats().unanswered, 0)

    // frozen still: a new connection cannot open
    const opening = performance.now()
    const refused = await failure(Promise.resolve(sql.row('select 1')))
    t.ok(refused instanceof StorageUnavailable, `a connection that does not open: unavailable (${refused?.message})`)
    t.ok(performance.now() - opening < 500 + 250, 'within the connect bound')
    proxy.freeze(false)
    t.not((await sql.row<{ pid: number }>(pid))!.pid, first, 'thawed: answered, on a new connection')
  },
)

t.test('a server that refuses us: each read fails as unavailable, with its reason (28000)', { skip: postgresMissing }, async (t) => {
  const role = await freshRole(t)
  const nowhere = opened(t, 'postgres://postgres@127.0.0.1:1/none', 1)
  t.match(await failure(Promise.resolve(nowhere.sql.row('select 1'))), { cause: { code: 'ECONNREFUSED' } }, 'no server: unavailable, ECONNREFUSED')

  const { sql } = opened(t, role.url, 2)
  t.strictSame(await sql.row('select 1 as n'), { n: 1 })
  await role.asAdmin(`alter role ${role.name} nologin`)
  await role.asAdmin(`select pg_terminate_backend(pid) from pg_stat_activity where usename = '${role.name}'`)
  // (the first may still meet the connections being ended: 57P01, also unavailable)
  const codes: unknown[] = []
  for (let tries = 0; tries < 10 && codes.at(-1) !== '28000'; tries++) {
    const errors = await Promise.all([1, 2, 3].map(() => failure(Promise.resolve(sql.row('select 1')))))
    for (const error of errors) if (!(error instanceof StorageUnavailable)) t.fail(`not unavailable: ${error?.message}`)
    codes.push(...errors.map((error) => (error?.cause as { code?: string } | undefined)?.code))
  }
  t.equal(codes.at(-1), '28000', `the reason is the server’s own (${codes.join(', ')})`)
  await role.asAdmin(`alter role ${role.name} login`)
  t.strictSame(await sql.row('select 1 as n'), { n: 1 }, 'allowed again: answered')
})
