import type { Dialect } from '../storage/database.js'
import type { Sql } from '../storage/sql.js'

/** An operation of a version of the API, as its calls are counted: made once per operation
 * (the calls of a request are counted under it without making a string). */
export interface UsageCall {
  /** the major version the call was made through */
  version: number
  operation: string
}

/** Calls of one principal to one operation of one version, as recorded. */
export interface UsageRecord extends UsageCall {
  /** `key:<id>` (a stored key) or `env:<12 hex>` (an API_KEYS key) */
  principal: string
  calls: number
  firstCallAt: Date
  lastCallAt: Date
}

/**
 * Who still calls the deprecated and non-stable operations. A call is counted in memory (one
 * map update on the request's path); the counts are added to the table in one transaction
 * every `flushMs` and on close, so every instance adds its own and a restart loses nothing
 * written.
 */
export interface UsageRepository {
  /** counts one call of `call` by `principal`, in memory (calls are told apart by the object:
   * one per operation and version, made once) */
  note(principal: string, call: UsageCall): void
  /** adds the calls counted since the last flush to the table */
  flush(): Promise<void>
  /** every principal's calls, by principal, operation then version */
  list(): Promise<UsageRecord[]>
  close(): Promise<void>
}

/** How often the counted calls are written down. */
const usageFlushMs = 10_000

interface Tally {
  calls: number
  first: number
  last: number
}

interface UsageRow {
  principal: string
  version: number | string
  operation: string
  calls: number | string
  first_call_at: number | string
  last_call_at: number | string
}

export function usageRepository(sql: Sql, dialect: Dialect, flushMs = usageFlushMs): UsageRepository {
  // by principal, then call: the request's path makes no string of the two
  let pending = new Map<string, Map<UsageCall, Tally>>()
  const [least, greatest] = dialect === 'postgres' ? ['least', 'greatest'] : ['min', 'max']
  const upsert = `insert into lifecycle_calls (principal, version, operation, calls, first_call_at, last_call_at) values ($1, $2, $3, $4, $5, $6)
    on conflict (principal, version, operation) do update set calls = lifecycle_calls.calls + excluded.calls,
    first_call_at = ${least}(lifecycle_calls.first_call_at, excluded.first_call_at), last_call_at = ${greatest}(lifecycle_calls.last_call_at, excluded.last_call_at)`

  async function flush() {
    const batch = pending
    pending = new Map()
    if (batch.size === 0) return
    try {
      await sql.transaction(async (tx) => {
        for (const [principal, operations] of batch) {
          for (const [{ version, operation }, { calls, first, last }] of operations) await tx.run(upsert, [principal, version, operation, calls, first, last])
        }
      })
    } catch {
      // the store is unavailable: keep the counts for the next try
      for (const [principal, operations] of batch) for (const [operation, tally] of operations) add(principal, operation, tally)
    }
  }
  function add(principal: string, operation: UsageCall, { calls, first, last }: Tally) {
    let operations = pending.get(principal)
    if (operations === undefined) pending.set(principal, (operations = new Map<UsageCall, Tally>()))
    const tally = operations.get(operation)
    if (tally === undefined) operations.set(operation, { calls, first, last })
    else {
      tally.calls += calls
      tally.first = Math.min(tally.first, first)
      tally.last = Math.max(tally.last, last)
    }
  }
  // (flush never rejects: a failure keeps the counts for the next try)
  const flusher = setInterval(() => void flush(), flushMs).unref()

  return {
    note(principal, operation) {
      const now = Date.now()
      // (a call of a principal and operation already counted, the usual case, makes no object)
      const tally = pending.get(principal)?.get(operation)
      if (tally === undefined) add(principal, operation, { calls: 1, first: now, last: now })
      else {
        tally.calls++
        tally.last = Math.max(tally.last, now)
      }
    },
    flush,
    async list() {
      const rows = await sql.rows<UsageRow>(
        'select principal, version, operation, calls, first_call_at, last_call_at from lifecycle_calls order by principal, operation, version',
      )
      return rows.map((row) => ({
        principal: row.principal,
        version: Number(row.version),
        operation: row.operation,
        calls: Number(row.calls),
        firstCallAt: new Date(Number(row.first_call_at)),
        lastCallAt: new Date(Number(row.last_call_at)),
      }))
    },
    async close() {
      clearInterval(flusher)
      await flush()
    },
  }
}
