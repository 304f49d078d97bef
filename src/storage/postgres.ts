import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { Database } from './database.js'
import { postgresKeyChanges } from './postgres-key-changes.js'
import { pipelines } from './postgres-pipelines.js'
import { postgresSql } from './sql.js'

/** int8 (bigint, ids and timestamps) as a JavaScript number: every value we store is below 2^53. */
const types: { getTypeParser: typeof pg.types.getTypeParser } = {
  getTypeParser: (oid, format) => (oid === pg.types.builtins.INT8 ? Number : (pg.types.getTypeParser(oid, format) as (value: string) => unknown)),
}

/** How every connection to `url` is made. */
const connectionOptions = (url: string, timeoutMs: number) =>
  ({
    connectionString: url,
    types,
    // A server that drops packets (firewall, wrong host) or stops answering (frozen, overloaded)
    // costs a request at most this long: opening a connection or waiting for a free one,
    connectionTimeoutMillis: timeoutMs,
    // and a statement, cancelled by the server.
    statement_timeout: timeoutMs,
    keepAlive: true,
  }) satisfies pg.ClientConfig & pg.PoolConfig

/** The least time a migration's statement may take (DATABASE_TIMEOUT_MS, if longer). */
export const migrationStatementMs = 60_000

export function openPostgres(url: string, { poolSize, readConnections }: { poolSize: number; readConnections: number }, timeoutMs: number): Database {
  // Should the server not even answer the cancel of a statement, the wait for its answer ends a
  // second later: postgresSql watches the requests' statements on the pool, the read
  // connections watch their own; the migrations (Kysely), on a pool of their own, whose
  // connection is held as long as they take and closed once they are done, have pg's
  // query_timeout.
  const answerWithinMs = timeoutMs + 1_000
  const pool = pooled(url, poolSize, timeoutMs)
  let firstStatement: string | undefined
  pool.on('connect', (client) => {
    // (queued before the statement the connection was opened for, which waits for it)
    if (firstStatement !== undefined) client.query(firstStatement, ignore)
  })
  // reads outside transactions, many at once on each of a few connections (none: on the pool)
  const reads = readConnections > 0 ? pipelines(connectionOptions(url, timeoutMs), readConnections, answerWithinMs) : undefined
  const sql = postgresSql(pool, answerWithinMs, reads?.send)
  // A migration is not a request: it may rewrite a table or build an index, and a loaded
  // server may take seconds even for the check that nothing is pending. Its statements have a
  // minute at least, not a request's bound (connecting keeps it).
  const migrationMs = Math.max(timeoutMs, migrationStatementMs)
  const db = new Kysely<Record<string, never>>({
    dialect: new PostgresDialect({
      pool: pooled(url, 1, timeoutMs, { statement_timeout: migrationMs, query_timeout: migrationMs + 1_000, idleTimeoutMillis: 1 }),
    }),
  })
  const { hostname, port, pathname } = new URL(url)
  return {
    sql,
    db,
    dialect: 'postgres',
    watchKeyChanges: () => postgresKeyChanges({ connectionString: url, types, connectionTimeoutMillis: timeoutMs, keepAlive: true }, answerWithinMs),
    description: `PostgreSQL ${hostname}:${port || 5432}${pathname}`,
    poolStats: () => ({ max: poolSize, open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, ...(reads && { reads: reads.stats() }) }),
    everyNewConnection: (statement) => void (firstStatement = statement),
    async close() {
      sql.close()
      await Promise.all([pool.end(), reads?.close(), db.destroy()])
    },
  }
}

/** What is done of an error the connection's own handling answers already. */
const ignore = () => {}

/** A pool of at most `max` connections to `url`. */
function pooled(url: string, max: number, timeoutMs: number, options: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ ...connectionOptions(url, timeoutMs), ...options, max })
  // A connection that the server drops (restart, failover, pg_terminate_backend) emits an
  // error event, which would end the process if nothing listened: on the pool while the
  // connection is idle there (the pool discards it; the next query opens a new one), on the
  // client while it is lent out (its query fails: that one request gets a 503).
  pool.on('error', ignore)
  pool.on('connect', (pooled) => {
    const client = pooled as unknown as pg.Client // what the pool lends is a Client, typed more narrowly
    client.on('error', ignore)
    // The server says FATAL before it closes a connection. pg fails the running query but
    // keeps the connection usable until the close arrives, and the pool would lend it to the
    // next request in the meantime, failing that one too. Ended now, it is discarded instead.
    client.connection.on('errorMessage', ({ severity }: { severity?: string }) => {
      if (severity === 'FATAL') void client.end()
    })
  })
  return pool
}
