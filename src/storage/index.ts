import {
  type Database,
  DatabaseConfigError,
  type DatabaseOptions,
  type DatabaseTarget,
  databaseReadConnections,
  databaseTimeoutMs,
  type PoolStats,
  parseDatabaseUrl,
} from './database.js'
import type { GroupCommitStats } from './group-commit.js'
import { migrate } from './migrations.js'
import { refuseMissingColumns, type Stored } from './schema-check.js'
import { openSqlite } from './sqlite.js'

export { DatabaseConfigError } from './database.js'

export interface StorageStats {
  /** PostgreSQL: its connection pool */
  pool?: PoolStats
  /** SQLite: creates grouped into commits (one connection, used synchronously: no pool) */
  commits?: GroupCommitStats
}

/** The database of `target`, open: SQLite in this process, or a PostgreSQL pool. */
export async function openDatabase(target: DatabaseTarget, options: DatabaseOptions): Promise<Database> {
  const timeoutMs = options.timeoutMs ?? databaseTimeoutMs
  if (target.dialect === 'sqlite') return openSqlite(target.file, timeoutMs)
  // pg, and what it loads as it loads (Node's fetch), only for a server that uses it
  const { openPostgres } = await import('./postgres.js')
  return openPostgres(target.url, { poolSize: options.poolSize, readConnections: options.readConnections ?? databaseReadConnections }, timeoutMs)
}

/** Opens the database named by `url` and checks that it answers: a wrong host, role or
 * database name is reported here, at startup, not at the first request. */
export async function connect(url: string, options: DatabaseOptions): Promise<Database> {
  const database = await openDatabase(parseDatabaseUrl(url), options)
  try {
    await database.sql.row('select 1')
  } catch (error) {
    await database.close()
    const cause = (error as Error).cause ?? error
    throw new DatabaseConfigError(`cannot connect to ${database.description}: ${(cause as Error).message}`)
  }
  return database
}

/** Opens the database named by `url`, checks it answers, brings its schema up to date, and
 * checks that it has every column the maps of `stored` name (the repositories', which
 * src/repositories.ts gives: storage/ imports no feature). */
export async function openMigrated(url: string, options: DatabaseOptions, stored: readonly Stored[]): Promise<Database> {
  const database = await connect(url, options)
  try {
    await migrate(database)
    await refuseMissingColumns(database.sql, database.dialect, stored)
  } catch (error) {
    await database.close()
    throw error
  }
  return database
}
