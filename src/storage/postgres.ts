import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { Database, Tables } from './database.js'
import { postgresKeyChanges } from './postgres-key-changes.js'
import { postgresSql } from './sql.js'

/** int8 (bigint, ids and timestamps) as a JavaScript number: every value we store is below 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
}

export function openPostgres(url: string, poolSize: number, timeoutMs: number): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    types,
    // A server that drops packets (firewall, wrong host) or stops answering (frozen, overloaded)
    // costs a request at most this long: opening a connection or waiting for a free one,
    connectionTimeoutMillis: timeoutMs,
    // a statement, cancelled by the server,
    statement_timeout: timeoutMs,
    // and, should the server not even answer the cancel, the wait for its answer.
    query_timeout: timeoutMs + 1_000,
    keepAlive: true,
  })
  // A connection that the server drops (restart, failover, pg_terminate_backend) emits an
  // error event, which would end the process if nothing listened: on the pool while the
  // connection is idle there (the pool discards it; the next query opens a new one), on the
  // client while it is lent out (its query fails: that one request gets a 503).
  pool.on('error', () => {})
  pool.on('connect', (pooled) => {
    const client = pooled as unknown as pg.Client // what the pool lends is a Client, typed more narrowly
    client.on('error', () => {})
    // The server says FATAL before it closes a connection. pg fails the running query but
    // keeps the connection usable until the close arrives, and the pool would lend it to the
    // next request in the meantime, failing that one too. Ended now, it is discarded instead.
    client.connection.on('errorMessage', ({ severity }: { severity?: string }) => {
      if (severity === 'FATAL') void client.end()
    })
  })
  const { hostname, port, pathname } = new URL(url)
  const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) })
  return {
    sql: postgresSql(pool),
    db,
    dialect: 'postgres',
    watchKeyChanges: () => postgresKeyChanges({ connectionString: url, types, connectionTimeoutMillis: timeoutMs, keepAlive: true }),
    description: `PostgreSQL ${hostname}:${port || 5432}${pathname}`,
    poolStats: () => ({ max: poolSize, open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => db.destroy(),
  }
}
