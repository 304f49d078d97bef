import type SQLite from 'better-sqlite3'
import type pg from 'pg'
import type { MaybePromise } from '../core/maybe-async.js'
import type { Send } from './postgres-pipelines.js'
import { StorageUnavailable } from '../core/errors.js'

/**
 * SQL as the repositories write it: one text for both dialects, with `$1`, `$2`… placeholders,
 * prepared once per connection and run with its parameters. No query is built per request.
 */
/** Statements, `$1`-style parameters on both stores: answered at once where the database
 * answers at once (SQLite, whose connection no transaction holds), else by a promise. A failure
 * is thrown, or rejects the promise. */
export interface Statements {
  rows<Row>(text: string, params?: readonly unknown[]): MaybePromise<Row[]>
  row<Row>(text: string, params?: readonly unknown[]): MaybePromise<Row | undefined>
  /** the number of rows the statement changed */
  run(text: string, params?: readonly unknown[]): MaybePromise<number>
  /** the rows of a Select, each made from its values */
  all<Row>(select: Select<Row>, params?: readonly unknown[]): MaybePromise<Row[]>
  /** the first row of a Select, made from its values */
  one<Row>(select: Select<Row>, params?: readonly unknown[]): MaybePromise<Row | undefined>
}

/**
 * A select whose rows are made by `row` from the values of its select list, in order. A row so
 * made costs less than the object the driver would make of it by column names (better-sqlite3:
 * a page of 20 pets in 26 µs instead of 33): for the reads that requests make.
 */
export interface Select<Row> {
  text: string
  row: (values: unknown[]) => Row
}

/** A Select of `text`, whose select list gives `Values`. */
export const select = <Values extends unknown[], Row>(text: string, row: (values: Values) => Row): Select<Row> => ({
  text,
  row: row as (values: unknown[]) => Row,
})

export interface Sql extends Statements {
  /** `work` in one transaction: committed when it resolves, rolled back when it throws. Inside,
   * `work` must use the statements it is given. */
  transaction<T>(work: (tx: Statements) => Promise<T>): Promise<T>
}

/** SQLite result codes that say "not now" rather than "wrong": locked by another process past
 * busy_timeout, the disk full, an I/O error, a file made read-only or gone. */
const sqliteTransient = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|PROTOCOL|NOMEM)/

const unavailableOrSelf = (error: Error) => (sqliteTransient.test((error as { code?: string }).code ?? '') ? new StorageUnavailable(error) : error)

export function sqliteSql(connection: SQLite.Database): Sql {
  // better-sqlite3 binds `?` in order: `$2 … $1 … $2` becomes `? … ? … ?` bound (p2, p1, p2).
  // (a statement gives objects, or with `raw` arrays of values: prepared once for each)
  type Prepared = { statement: SQLite.Statement; order: number[] | undefined }
  const statements = { objects: new Map<string, Prepared>(), raw: new Map<string, Prepared>() }
  const prepare = (text: string, raw: boolean) => {
    const prepared = raw ? statements.raw : statements.objects
    let found = prepared.get(text)
    if (found === undefined) {
      const order = [...text.matchAll(/\$(\d+)/g)].map((match) => Number(match[1]) - 1)
      const inOrder = order.every((position, i) => position === i)
      const statement = connection.prepare(text.replace(/\$\d+/g, '?'))
      found = { statement: raw ? statement.raw(true) : statement, order: inOrder ? undefined : order }
      prepared.set(text, found)
    }
    return found
  }
  /** Runs `text` with `params` through `use`, turning "not now" errors into StorageUnavailable. */
  const execute = <R>(text: string, params: readonly unknown[], raw: boolean, use: (statement: SQLite.Statement, values: unknown[]) => R): R => {
    try {
      const { statement, order } = prepare(text, raw)
      return use(statement, order === undefined ? (params as unknown[]) : order.map((position) => params[position]))
    } catch (error) {
      throw unavailableOrSelf(error as Error)
    }
  }
  // (better-sqlite3 answers at once: a read costs no promise)
  const direct = {
    rows: <Row>(text: string, params: readonly unknown[] = []) => execute(text, params, false, (statement, values) => statement.all(values) as Row[]),
    row: <Row>(text: string, params: readonly unknown[] = []) => execute(text, params, false, (statement, values) => statement.get(values) as Row | undefined),
    run: (text: string, params: readonly unknown[] = []) => execute(text, params, false, (statement, values) => statement.run(values).changes),
    all: <Row>({ text, row }: Select<Row>, params: readonly unknown[] = []) =>
      execute(text, params, true, (statement, values) => (statement.all(values) as unknown[][]).map((values) => row(values))),
    one: <Row>({ text, row }: Select<Row>, params: readonly unknown[] = []) =>
      execute(text, params, true, (statement, values) => {
        const found = statement.get(values) as unknown[] | undefined
        return found && row(found)
      }),
  } satisfies Statements

  // One connection: while a transaction is open, any other statement would run inside it, so
  // everything else waits for it to end. Statements are synchronous, so only transactions,
  // whose work awaits, ever hold the connection across a turn of the event loop. (The loops
  // below check and act in the same turn: nothing can start in between.)
  let held: Promise<void> | undefined
  const afterTransactions = <Args extends unknown[], R>(statement: (...args: Args) => R) => {
    const waiting = async (...args: Args) => {
      while (held !== undefined) await held
      return statement(...args)
    }
    // (nothing held, the usual case: run now, and answer at once)
    return (...args: Args): MaybePromise<R> => (held === undefined ? statement(...args) : waiting(...args))
  }
  return {
    rows: afterTransactions(direct.rows) as Statements['rows'],
    row: afterTransactions(direct.row) as Statements['row'],
    run: afterTransactions(direct.run),
    all: afterTransactions(direct.all),
    one: afterTransactions(direct.one),
    async transaction(work) {
      while (held !== undefined) await held
      let release!: () => void
      held = new Promise((resolve) => (release = resolve))
      let committed = false
      try {
        // IMMEDIATE: the write lock is taken now (waiting busy_timeout for another process), not
        // at the first write, where a concurrent writer would make the transaction fail.
        direct.run('begin immediate')
        const result = await work(direct)
        direct.run('commit')
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

/**
 * PostgreSQL errors that are faults of the database, not of the service: a 503 (the client may
 * retry, the operator is told the cause) rather than a 500 (a bug, reported with its stack). The
 * test: could the very statement that failed succeed later, unchanged, once the database or its
 * operator has put things right? Then the fault is the database's. By SQLSTATE:
 * - the database cannot be reached or cannot serve now: 08 (connection exceptions), 53
 *   (insufficient resources: disk full, out of memory, too many connections), 57 (operator
 *   intervention: statement_timeout or a cancel 57014, shutting down 57P01-57P02, starting up
 *   57P03, its database dropped under the session 57P04, idle session timeout 57P05), 58
 *   (system errors outside PostgreSQL: I/O), XX (PostgreSQL's own failures: corruption);
 * - the database refuses us, by a decision of its operator, over a statement that worked
 *   before: 28 (invalid authorization: the role made NOLOGIN, its password changed, pg_hba),
 *   3D000 (the database does not exist: dropped, renamed), 42501 (insufficient privilege: a
 *   grant revoked), 25006 (read-only transaction: a standby, after a failover);
 * - whatever the server ends the session with (severity FATAL or PANIC: refused connections,
 *   such as a database that does not accept connections, 55000 then) is about the session,
 *   never the statement.
 * Everything else is the statement's fault, so ours: 42 but 42501 (syntax, an undefined table
 * or column: code and schema disagree), 22 (data exceptions), 23 (a constraint our code does not
 * expect), 40 (serialization failures and deadlocks, which our transactions are written never to
 * meet), 55 at a statement's level (currval before nextval)...: a 500.
 */
const postgresUnavailable = /^(08|53|57|58|XX|28|3D000$|42501$|25006$)/
/** Node's socket errors, and pg's own words for a connection that failed or timed out. */
const networkTransient = /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN)$/
const pgTransientMessages = /Connection terminated|timeout exceeded when trying to connect|^timeout expired$|Client has encountered a connection error/

export function classifyPostgres(error: Error): Error {
  const { code = '', severity } = error as { code?: string; severity?: string }
  const unavailable =
    postgresUnavailable.test(code) || severity === 'FATAL' || severity === 'PANIC' || networkTransient.test(code) || pgTransientMessages.test(error.message)
  return unavailable ? new StorageUnavailable(error) : error
}

/** A statement that only reads, and takes no lock: no other statement can hold it up. */
const readOnly = /^\s*select\b(?![\s\S]*\bfor\s+(update|no\s+key\s+update|share|key\s+share)\b)/i

/** How often the answers a statement waits for are looked over, as a share of their bound. */
const watchesPerBound = 10

/**
 * SQL on a pool of PostgreSQL connections; given `reads`, the reads outside transactions are
 * sent there instead (the pipelined connections of postgres-pipelines.ts, which bound their
 * answers themselves). A statement waits at most `answerWithinMs` for its answer (the server
 * cancels it sooner, at statement_timeout; this is for a server that does not answer at all,
 * frozen or cut off): then its connection is ended, and the statement fails as unavailable. One
 * timer looks over the connections lent out, each from when it was lent or its last statement
 * was sent. (pg's own query_timeout sets a timer for each query, and a client's
 * query() answered by promise rather than by callback; both keep each request's objects alive
 * past a scavenge: under load, most of a megabyte promoted to the old generation at each one, and
 * twice the time in garbage collection. So no query sets a timer, statements outside
 * transactions go through pool.query, and those of a transaction are sent with a callback.)
 */
export function postgresSql(pool: pg.Pool, answerWithinMs: number, reads?: Send): Sql & { close(): void } {
  // Named statements: pg prepares each once per connection and then sends only its parameters.
  const names = new Map<string, { name: string; read: boolean }>()
  const statementOf = (text: string) => {
    let found = names.get(text)
    if (found === undefined) names.set(text, (found = { name: `petstore_${names.size + 1}`, read: readOnly.test(text) }))
    return found
  }
  // (pg copies the config of every query, property by property: none that is not needed)
  const configOf = (name: string, text: string, values: readonly unknown[], rowMode: 'array' | undefined): pg.QueryConfig =>
    rowMode === undefined ? { name, text, values: values as unknown[] } : ({ name, text, values: values as unknown[], rowMode } as pg.QueryConfig)
  // connections lent out, and since when they wait for an answer (performance.now())
  const waiting = new Map<pg.ClientBase, number>()
  pool.on('acquire', (client) => waiting.set(client, performance.now()))
  pool.on('release', (_error, client) => waiting.delete(client))
  const watch = setInterval(
    () => {
      const now = performance.now()
      for (const [client, since] of waiting) {
        if (now - since > answerWithinMs) (client as pg.Client).connection.stream.destroy()
      }
    },
    Math.max(10, answerWithinMs / watchesPerBound),
  ).unref()

  // One promise per statement, made here: what the statement's result gives, or its error
  // classified. `send` sends it (answering by callback, see above), `sendRead` if it only reads:
  // on the pool or the pipelined connections, or both on a transaction's connection.
  const statements = (send: Send, sendRead: Send) => {
    const query = <T>(text: string, params: readonly unknown[] = [], rowMode: 'array' | undefined, take: (result: pg.QueryResult) => T) =>
      new Promise<T>((resolve, reject) => {
        const { name, read } = statementOf(text)
        ;(read ? sendRead : send)(configOf(name, text, params, rowMode), (error, result) => {
          if (error) return reject(classifyPostgres(error))
          try {
            resolve(take(result))
          } catch (failure) {
            reject(failure)
          }
        })
      })
    return {
      rows: <Row>(text: string, params?: readonly unknown[]) => query(text, params, undefined, (result) => result.rows as Row[]),
      row: <Row>(text: string, params?: readonly unknown[]) => query(text, params, undefined, (result) => result.rows[0] as Row | undefined),
      run: (text: string, params?: readonly unknown[]) => query(text, params, undefined, (result) => result.rowCount ?? 0),
      all: <Row>({ text, row }: Select<Row>, params?: readonly unknown[]) =>
        query(text, params, 'array', (result) => (result.rows as unknown[][]).map((values) => row(values))),
      one: <Row>({ text, row }: Select<Row>, params?: readonly unknown[]) =>
        query(text, params, 'array', (result) => {
          const found = result.rows[0] as unknown[] | undefined
          return found && row(found)
        }),
    } satisfies Statements
  }

  // a statement outside a transaction: on a connection of the pool, for that statement alone
  // (one that fails is not lent out again)
  const onPool: Send = (config, done) => pool.query(config, done)
  return {
    ...statements(onPool, reads ?? onPool),
    async transaction(work) {
      let client: pg.PoolClient
      try {
        client = await pool.connect()
      } catch (error) {
        throw classifyPostgres(error as Error)
      }
      const onClient: Send = (config, done) => {
        waiting.set(client, performance.now())
        client.query(config, done)
      }
      const sql = statements(onClient, onClient)
      try {
        await sql.run('begin')
        const result = await work(sql)
        await sql.run('commit')
        client.release()
        return result
      } catch (error) {
        // (a connection that failed mid-transaction has no transaction left to roll back)
        const broken = error instanceof StorageUnavailable
        if (!broken) await sql.run('rollback').catch(() => {})
        // (a connection that failed is not lent out again)
        client.release(broken ? error : undefined)
        throw error
      }
    },
    close: () => clearInterval(watch),
  }
}
