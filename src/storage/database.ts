import { mkdirSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import SQLite from 'better-sqlite3'
import {
  CompiledQuery,
  type DatabaseConnection,
  type Generated,
  Kysely,
  SqliteAdapter,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from 'kysely'
import { configSchema } from '../config.js'
import { type KeyChanges, sqliteKeyChanges } from './key-changes.js'
import { type Sql, sqliteSql } from './sql.js'

/** The tables, as Kysely sees them. Timestamps are Unix milliseconds in both dialects. */
export interface Tables {
  pets: {
    id: Generated<number>
    name: string
    category_id: number
    status: string
  }
  api_keys: {
    id: Generated<number>
    name: string
    prefix: string
    hash: string
    created_at: number
    last_used_at: number | null
    revoked_at: number | null
  }
  orders: {
    id: Generated<number>
    pet_id: number
    status: string
    placed_at: number
  }
  idempotency_keys: {
    principal: string
    idempotency_key: string
    fingerprint: string
    /** JSON; null only inside the transaction that claimed the key */
    outcome: string | null
    created_at: number
  }
}

export type Dialect = 'sqlite' | 'postgres'

export type DatabaseTarget = { dialect: 'sqlite'; file: string } | { dialect: 'postgres'; url: string }

export interface Database {
  /** the repositories' way in: prepared SQL, both dialects */
  sql: Sql
  /** the schema's way in: Kysely, for migrations (and tests that look at the schema) */
  db: Kysely<Tables>
  dialect: Dialect
  /** starts watching api_keys for changes made by other processes */
  watchKeyChanges(): KeyChanges
  /** where it is, without credentials, for messages */
  description: string
  /** PostgreSQL only: the connection pool now (for the metrics) */
  poolStats?(): PoolStats
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
}

/** A configuration error: the process reports its message in one line and exits. */
export class DatabaseConfigError extends Error {}

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
  /** how long a statement, a connection or a wait for the write lock may take before the
   * database counts as unavailable (default: databaseTimeoutMs) */
  timeoutMs?: number
}

/** The default of DatabaseOptions.timeoutMs: DATABASE_TIMEOUT_MS's. */
export const databaseTimeoutMs = configSchema.properties.DATABASE_TIMEOUT_MS.default

export async function openDatabase(target: DatabaseTarget, options: DatabaseOptions): Promise<Database> {
  const timeoutMs = options.timeoutMs ?? databaseTimeoutMs
  if (target.dialect === 'sqlite') return openSqlite(target.file, timeoutMs)
  // pg, and what it loads as it loads (Node's fetch), only for a server that uses it
  const { openPostgres } = await import('./postgres.js')
  return openPostgres(target.url, options.poolSize, timeoutMs)
}

function openSqlite(file: string, timeoutMs: number): Database {
  const sqlite = openSqliteFile(file, timeoutMs)
  // Kysely's driver prepares every query anew; the handful of distinct statements is prepared once.
  const statements = new Map<string, SQLite.Statement>()
  const database = {
    close: () => sqlite.close(),
    prepare(sql: string) {
      let statement = statements.get(sql)
      if (!statement) statements.set(sql, (statement = sqlite.prepare(sql)))
      return statement
    },
  }
  const db = new Kysely<Tables>({ dialect: new SharedSqliteDialect({ database }) })
  return {
    sql: sqliteSql(sqlite),
    db,
    dialect: 'sqlite',
    watchKeyChanges: () => sqliteKeyChanges(sqlite),
    description: `SQLite ${file}`,
    close: () => db.destroy(),
  }
}

/** The SQLite file, ready for the service: or a DatabaseConfigError saying why it cannot be. */
function openSqliteFile(file: string, timeoutMs: number): SQLite.Database {
  let sqlite: SQLite.Database | undefined
  try {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
    sqlite = new SQLite(file)
    // Another process holding the write lock is waited for, not failed at once.
    sqlite.pragma(`busy_timeout = ${timeoutMs}`)
    // WAL: readers never wait for the writer. synchronous=FULL: a commit is on disk (fsync)
    // before it returns, so a 201 survives a power loss, not only a crash of the process.
    sqlite.pragma('journal_mode = WAL')
    sqlite.pragma('synchronous = FULL')
    // SQLite opens a file it may not write read-only, without a word, and every write would
    // fail later: a header write now proves the store takes writes.
    sqlite.pragma(`user_version = ${sqlite.pragma('user_version', { simple: true })}`)
    return sqlite
  } catch (error) {
    sqlite?.close()
    throw new DatabaseConfigError(`cannot open SQLite ${file}: ${whySqliteFails(file, error as Error)}`)
  }
}

/** What to tell the operator: the cause in words, and the SQLite code that names it. */
function whySqliteFails(file: string, error: Error): string {
  if (isDirectory(file)) return 'it is a directory, not a file'
  // (a file-system error, from making the folder, names its code in its message already)
  const code = (error as { code?: string }).code
  if (!code?.startsWith('SQLITE_')) return error.message
  const hint = /^SQLITE_(READONLY|CANTOPEN)/.test(code) ? '; the file and its folder must be writable' : ''
  return `${error.message} (${code})${hint}`
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false // not there, or a file where a folder should be: the error itself says which
  }
}

/**
 * Kysely's SQLite, fit for a file that several processes open (two servers, or a server and
 * `npm run migrate`):
 * - a transaction takes the write lock when it begins (BEGIN IMMEDIATE), waiting busy_timeout
 *   for another process to finish; a plain BEGIN would read first and then fail with
 *   SQLITE_BUSY when another process had written in between;
 * - migrations run in one transaction, as on PostgreSQL: SQLite's DDL is transactional, but
 *   Kysely assumes it is not and would leave the migrations before a failing one applied.
 */
class SharedSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig
  constructor(config: SqliteDialectConfig) {
    super(config)
    this.#config = config
  }
  override createDriver() {
    return new ImmediateTransactionsDriver(this.#config)
  }
  override createAdapter() {
    return new TransactionalDdlAdapter()
  }
}

class ImmediateTransactionsDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection) {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'))
  }
}

class TransactionalDdlAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl() {
    return true
  }
}
