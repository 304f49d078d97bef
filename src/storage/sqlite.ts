import { mkdirSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import SQLite from 'better-sqlite3'
import { CompiledQuery, type DatabaseConnection, Kysely, SqliteAdapter, SqliteDialect, type SqliteDialectConfig, SqliteDriver } from 'kysely'
import { type Database, DatabaseConfigError } from './database.js'
import { sqliteKeyChanges } from './key-changes.js'
import { sqliteSql } from './sql.js'

/** The SQLite file `file` (`:memory:`: a database in memory), open and ready for the service. */
export function openSqlite(file: string, timeoutMs: number): Database {
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
  const db = new Kysely<Record<string, never>>({ dialect: new SharedSqliteDialect({ database }) })
  return {
    sql: sqliteSql(sqlite),
    db,
    dialect: 'sqlite',
    watchKeyChanges: () => sqliteKeyChanges(sqlite),
    // the whole path, in the log line of the start: a typo in DATABASE_URL shows
    description: `SQLite ${file === ':memory:' ? file : resolve(file)}`,
    close: () => db.destroy(),
  }
}

/** The SQLite file, ready for the service: or a DatabaseConfigError saying why it cannot be. */
function openSqliteFile(file: string, timeoutMs: number): SQLite.Database {
  if (file !== ':memory:') makeFolderOf(file)
  let sqlite: SQLite.Database | undefined
  try {
    sqlite = new SQLite(file)
    // Another process holding the write lock is waited for, not failed at once.
    sqlite.pragma(`busy_timeout = ${timeoutMs}`)
    // WAL: readers never wait for the writer. synchronous=FULL: a commit is on disk (fsync)
    // before it returns, so a 201 survives a power loss, not only a crash of the process.
    sqlite.pragma('journal_mode = WAL')
    sqlite.pragma('synchronous = FULL')
    // SQLite opens a file it may not write read-only, without a word, and every write would
    // fail later: a header write now proves the store takes writes.
    sqlite.pragma(`user_version = ${String(sqlite.pragma('user_version', { simple: true }))}`)
    return sqlite
  } catch (error) {
    sqlite?.close()
    throw new DatabaseConfigError(sqliteProblem(file, error as Error))
  }
}

/**
 * The file's folder, made if it is missing; but only that last level (`data/` of the default
 * `sqlite:./data/petstore.db`, in a fresh clone): a path whose parent folder is missing too is
 * more likely a typo than a wish, and is reported rather than made.
 */
function makeFolderOf(file: string): void {
  const folder = dirname(file)
  try {
    mkdirSync(folder)
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException
    if (code === 'EEXIST' && isDirectory(folder)) return
    const why =
      code === 'ENOENT' ? `folder ${dirname(folder)} does not exist` : code === 'EEXIST' ? `${folder} is a file, not a folder` : (error as Error).message
    throw new DatabaseConfigError(`cannot open SQLite ${file}: ${why}`)
  }
}

/** Why `file` cannot be opened, in one line for the operator. */
export function sqliteProblem(file: string, error: Error): string {
  // better-sqlite3's native addon, compiled for the ABI of another Node.js (a node_modules
  // installed with one version and run with another): Node's own message takes four lines to
  // say so, and suggests two commands; one is enough.
  const versions = /NODE_MODULE_VERSION (\d+)\. This version of Node\.js requires\s+NODE_MODULE_VERSION (\d+)/.exec(error.message)
  if (versions !== null) {
    return (
      `better-sqlite3 was built for another Node.js (NODE_MODULE_VERSION ${versions[1]}; Node.js ${process.version} needs ${versions[2]}): ` +
      'run npm rebuild with the Node.js that runs the server'
    )
  }
  return `cannot open SQLite ${file}: ${whySqliteFails(file, error)}`
}

/** What to tell the operator: the cause in words, and the SQLite code that names it. */
function whySqliteFails(file: string, error: Error): string {
  if (isDirectory(file)) return 'it is a directory, not a file'
  const code = (error as { code?: string }).code
  if (!code?.startsWith('SQLITE_')) return error.message
  const hint = /^SQLITE_(READONLY|CANTOPEN)/.test(code) ? '; the file and its folder must be writable' : ''
  return `${error.message} (${code})${hint}`
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false // not there, or a file where a folder should be
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
