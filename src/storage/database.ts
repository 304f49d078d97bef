/**
 * What a database is to the rest of the service, whichever it is: its tables, the URL that names
 * it, and what an open one offers. Opening one is sqlite.ts's or postgres.ts's (both import this
 * module, never each other), chosen by openDatabase in index.ts.
 */
import type { Kysely } from 'kysely'
import { configSchema } from '../core/config.js'
import { OperatorError } from '../core/errors.js'
import type { KeyChanges } from './key-changes.js'
import type { PipelineStats } from './postgres-pipelines.js'
import type { Sql } from './sql.js'

/** Kysely runs the migrations only (the repositories write their SQL in sql.ts), through its
 * schema builder, which needs no table types: the tables are what src/storage/migrations.ts makes. */
export type Migratable = Kysely<Record<string, never>>

export type Dialect = 'sqlite' | 'postgres'

export type DatabaseTarget = { dialect: 'sqlite'; file: string } | { dialect: 'postgres'; url: string }

export interface Database {
  /** the repositories' way in: prepared SQL, both dialects */
  sql: Sql
  /** the schema's way in: Kysely, for migrations (and tests that look at the schema) */
  db: Migratable
  dialect: Dialect
  /** starts watching api_keys for changes made by other processes */
  watchKeyChanges(): KeyChanges
  /** where it is, without credentials, for messages */
  description: string
  /** PostgreSQL only: the connection pool now (for the metrics) */
  poolStats?(): PoolStats
  /** PostgreSQL only: has each connection the pool opens from now on run `statement` first (its
   * failure is the statement's alone: the connection goes on to what it was opened for) */
  everyNewConnection?(statement: string): void
  close(): Promise<void>
}

/** A connection pool at one moment. */
export interface PoolStats {
  /** connections it may open (DATABASE_POOL_SIZE) */
  max: number
  /** connections open, idle or lent out */
  open: number
  idle: number
  /** queries and transactions waiting for a connection */
  waiting: number
  /** the pipelined connections that carry reads, if any (DATABASE_READ_CONNECTIONS) */
  reads?: PipelineStats
}

/** A configuration error: the process reports its message in one line and exits. */
export class DatabaseConfigError extends OperatorError {}

/** `sqlite:PATH`, `sqlite::memory:`, `postgres://...` or `postgresql://...`. */
export function parseDatabaseUrl(url: string): DatabaseTarget {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length)
    if (file === '') throw new DatabaseConfigError('DATABASE_URL: sqlite: needs a file path, e.g. sqlite:./data/petstore.db')
    return { dialect: 'sqlite', file }
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    if (!URL.canParse(url)) throw new DatabaseConfigError('DATABASE_URL: not a valid postgres:// URL')
    return { dialect: 'postgres', url }
  }
  // Only the scheme is quoted back: the rest may hold a password.
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0]
  const problem = scheme === undefined ? 'no scheme' : `unknown scheme ${JSON.stringify(scheme)}`
  throw new DatabaseConfigError(`DATABASE_URL: ${problem}; use sqlite:PATH, sqlite::memory: or postgres://USER@HOST:PORT/DB`)
}

export interface DatabaseOptions {
  /** PostgreSQL connections kept open at most */
  poolSize: number
  /** PostgreSQL connections that carry the reads outside transactions, pipelined (0: reads on
   * the pool; default: DATABASE_READ_CONNECTIONS's) */
  readConnections?: number
  /** how long a statement, a connection or a wait for the write lock may take before the
   * database counts as unavailable (default: databaseTimeoutMs) */
  timeoutMs?: number
}

/** The default of DatabaseOptions.timeoutMs: DATABASE_TIMEOUT_MS's. */
export const databaseTimeoutMs = configSchema.properties.DATABASE_TIMEOUT_MS.default as number

/** The default of DatabaseOptions.readConnections: DATABASE_READ_CONNECTIONS's. */
export const databaseReadConnections = configSchema.properties.DATABASE_READ_CONNECTIONS.default as number
