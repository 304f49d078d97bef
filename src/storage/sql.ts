import type SQLite from 'better-sqlite3'
import type pg from 'pg'

/**
 * SQL as the repositories write it: one text for both dialects, with `$1`, `$2`… placeholders,
 * prepared once per connection and run with its parameters. No query is built per request.
 */
/** Statements, `$1`-style parameters on both stores. */
export interface Statements {
  rows<Row>(text: string, params?: readonly unknown[]): Promise<Row[]>
  row<Row>(text: string, params?: readonly unknown[]): Promise<Row | undefined>
  /** the number of rows the statement changed */
  run(text: string, params?: readonly unknown[]): Promise<number>
}

export interface Sql extends Statements {
  /** `work` in one transaction: committed when it resolves, rolled back when it throws. Inside,
   * `work` must use the statements it is given. */
  transaction<T>(work: (tx: Statements) => Promise<T>): Promise<T>
}

/**
 * The database cannot serve the request now (down, unreachable, frozen, busy, out of disk), but
 * may again: the client is told to retry (503), the operator is told the cause (`cause`).
 */
export class StorageUnavailable extends Error {
  constructor(cause: Error) {
    super(`the database is unavailable: ${cause.message}`, { cause })
  }
}

/** SQLite result codes that say "not now" rather than "wrong": locked by another process past
 * busy_timeout, the disk full, an I/O error, a file made read-only or gone. */
const sqliteTransient = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|PROTOCOL|NOMEM)/

const unavailableOrSelf = (error: Error) =>
  sqliteTransient.test((error as { code?: string }).code ?? '') ? new StorageUnavailable(error) : error

export function sqliteSql(connection: SQLite.Database): Sql {
  // better-sqlite3 binds `?` in order: `$2 … $1 … $2` becomes `? … ? … ?` bound (p2, p1, p2).
  const statements = new Map<string, { statement: SQLite.Statement; order: number[] | undefined }>()
  const prepare = (text: string) => {
    let prepared = statements.get(text)
    if (prepared === undefined) {
      const order = [...text.matchAll(/\$(\d+)/g)].map((match) => Number(match[1]) - 1)
      const inOrder = order.every((position, i) => position === i)
      prepared = { statement: connection.prepare(text.replace(/\$\d+/g, '?')), order: inOrder ? undefined : order }
      statements.set(text, prepared)
    }
    return prepared
  }
  /** Runs `text` with `params` through `use`, turning "not now" errors into StorageUnavailable. */
  const execute = <R>(text: string, params: readonly unknown[], use: (statement: SQLite.Statement, values: unknown[]) => R): R => {
    try {
      const { statement, order } = prepare(text)
      return use(statement, order === undefined ? (params as unknown[]) : order.map((position) => params[position]))
    } catch (error) {
      throw unavailableOrSelf(error as Error)
    }
  }
  const direct: Statements = {
    rows: async (text, params = []) => execute(text, params, (statement, values) => statement.all(...values) as never),
    row: async (text, params = []) => execute(text, params, (statement, values) => statement.get(...values) as never),
    run: async (text, params = []) => execute(text, params, (statement, values) => statement.run(...values).changes),
  }

  // One connection: while a transaction is open, any other statement would run inside it, so
  // everything else waits for it to end. Statements are synchronous, so only transactions,
  // whose work awaits, ever hold the connection across a turn of the event loop. (The loops
  // below check and act in the same turn: nothing can start in between.)
  let held: Promise<void> | undefined
  const afterTransactions = <Args extends unknown[], R>(statement: (...args: Args) => Promise<R>) => {
    const waiting = async (...args: Args) => {
      while (held !== undefined) await held
      return statement(...args)
    }
    // (nothing held, the usual case: run now, without a second promise)
    return (...args: Args) => (held === undefined ? statement(...args) : waiting(...args))
  }
  return {
    rows: afterTransactions(direct.rows) as Statements['rows'],
    row: afterTransactions(direct.row) as Statements['row'],
    run: afterTransactions(direct.run),
    async transaction(work) {
      while (held !== undefined) await held
      let release!: () => void
      held = new Promise((resolve) => (release = resolve))
      let committed = false
      try {
        // IMMEDIATE: the write lock is taken now (waiting busy_timeout for another process), not
        // at the first write, where a concurrent writer would make the transaction fail.
        await direct.run('begin immediate')
        const result = await work(direct)
        await direct.run('commit')
        committed = true
        return result
      } finally {
        // Failed: rolled back, unless SQLite ended the transaction itself (SQLITE_FULL), where a
        // second rollback would fail and hide the real cause.
        if (!committed && connection.inTransaction) connection.exec('rollback')
        held = undefined
        release()
      }
    },
  }
}

/** PostgreSQL error classes and codes that say "not now": connection exceptions (08), too many
 * connections and disk full (53), the server shutting down or starting (57P01–57P03), a
 * statement cancelled by statement_timeout (57014), cannot connect now. */
const postgresTransient = /^(08|53|57P0[1-3]|57014)/
/** Node's socket errors, and pg's own words for a connection that failed or timed out. */
const networkTransient = /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN)$/
const pgTransientMessages = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error/

function classifyPostgres(error: Error): Error {
  const code = (error as { code?: string }).code ?? ''
  const transient = postgresTransient.test(code) || networkTransient.test(code) || pgTransientMessages.test(error.message)
  return transient ? new StorageUnavailable(error) : error
}

export function postgresSql(pool: pg.Pool): Sql {
  // Named statements: pg prepares each once per connection and then sends only its parameters.
  const names = new Map<string, string>()
  const named = (text: string, values: readonly unknown[]) => {
    let name = names.get(text)
    if (name === undefined) names.set(text, (name = `petstore_${names.size + 1}`))
    return { name, text, values: values as unknown[] }
  }
  const on = (client: pg.Pool | pg.PoolClient): Statements => {
    const query = async (text: string, params: readonly unknown[] = []) => {
      try {
        return await client.query(named(text, params))
      } catch (error) {
        throw classifyPostgres(error as Error)
      }
    }
    return {
      rows: async (text, params) => (await query(text, params)).rows,
      row: async (text, params) => (await query(text, params)).rows[0],
      run: async (text, params) => (await query(text, params)).rowCount ?? 0,
    }
  }
  const pooled = on(pool)
  return {
    ...pooled,
    async transaction(work) {
      let client: pg.PoolClient
      try {
        client = await pool.connect()
      } catch (error) {
        throw classifyPostgres(error as Error)
      }
      const sql = on(client)
      try {
        await sql.run('begin')
        const result = await work(sql)
        await sql.run('commit')
        client.release()
        return result
      } catch (error) {
        // A connection that failed mid-transaction is not lent out again.
        const broken = error instanceof StorageUnavailable
        if (!broken) await sql.run('rollback').catch(() => {})
        client.release(broken ? (error as Error) : undefined)
        throw error
      }
    },
  }
}
