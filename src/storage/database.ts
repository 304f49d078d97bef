import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import SQLite from 'better-sqlite3'
import { type Generated, Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import pg from 'pg'

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
}

export type Dialect = 'sqlite' | 'postgres'

export type DatabaseTarget = { dialect: 'sqlite'; file: string } | { dialect: 'postgres'; url: string }

export interface Database {
  db: Kysely<Tables>
  dialect: Dialect
  /** where it is, without credentials, for messages */
  description: string
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
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0] ?? url
  throw new DatabaseConfigError(
    `DATABASE_URL: unknown scheme ${JSON.stringify(scheme)}; use sqlite:PATH, sqlite::memory: or postgres://USER@HOST:PORT/DB`,
  )
}

export interface DatabaseOptions {
  /** PostgreSQL connections kept open at most */
  poolSize: number
}

export function openDatabase(target: DatabaseTarget, options: DatabaseOptions): Database {
  return target.dialect === 'sqlite' ? openSqlite(target.file) : openPostgres(target.url, options.poolSize)
}

function openSqlite(file: string): Database {
  let sqlite: SQLite.Database
  try {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
    sqlite = new SQLite(file)
    // WAL: readers never wait for the writer. synchronous=FULL: a commit is on disk (fsync)
    // before it returns, so a 201 survives a power loss, not only a crash of the process.
    sqlite.pragma('journal_mode = WAL')
    sqlite.pragma('synchronous = FULL')
    sqlite.pragma('busy_timeout = 5000')
  } catch (error) {
    throw new DatabaseConfigError(`cannot open SQLite ${file}: ${(error as Error).message}`)
  }
  // Kysely prepares every query anew; the handful of distinct statements is prepared once.
  const statements = new Map<string, SQLite.Statement>()
  const database = {
    close: () => sqlite.close(),
    prepare(sql: string) {
      let statement = statements.get(sql)
      if (!statement) statements.set(sql, (statement = sqlite.prepare(sql)))
      return statement
    },
  }
  return { db: new Kysely<Tables>({ dialect: new SqliteDialect({ database }) }), dialect: 'sqlite', description: `SQLite ${file}` }
}

/** int8 (bigint, ids and timestamps) as a JavaScript number: every value we store is below 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
}

function openPostgres(url: string, poolSize: number): Database {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, types })
  // An idle connection that the server drops (restart, failover) is discarded by the pool; the
  // next query opens a new one. Without a listener, that error would end the process.
  pool.on('error', () => {})
  const { hostname, port, pathname } = new URL(url)
  return {
    db: new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) }),
    dialect: 'postgres',
    description: `PostgreSQL ${hostname}:${port || 5432}${pathname}`,
  }
}
