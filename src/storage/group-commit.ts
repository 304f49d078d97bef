import { performance } from 'node:perf_hooks'
import type { Sql, Statements } from './sql.js'

interface Waiting<T, R> {
  item: T
  resolve: (result: R) => void
  reject: (error: unknown) => void
}

/** How writes were grouped so far, for the metrics: cumulative, except `queued`. */
export interface GroupCommitStats {
  /** commits (batches) run, failed ones included */
  batches: number
  /** writes handed to those commits */
  writes: number
  /** time spent in them, fsync included */
  seconds: number
  /** writes waiting for the next commit now */
  queued: number
}

export type GroupCommit<T, R> = ((item: T) => Promise<R>) & { stats: () => GroupCommitStats }

/**
 * Writes that arrive in the same turn of the event loop, or while the previous batch is being
 * written, are handed to `writeAll` together, to be committed in one transaction. On SQLite with
 * synchronous=FULL a commit costs an fsync (about 0.3 ms here, during which the process waits):
 * one per batch instead of one per write. Each write still resolves only once the commit that
 * holds it is done; when a batch fails, each of its writes fails.
 */
export function groupCommit<T, R>(writeAll: (items: T[]) => Promise<R[]>): GroupCommit<T, R> {
  let waiting: Waiting<T, R>[] = []
  const done = { batches: 0, writes: 0, seconds: 0 }

  async function flush() {
    const batch = waiting
    waiting = []
    const started = performance.now()
    try {
      const results = await writeAll(batch.map(({ item }) => item))
      batch.forEach(({ resolve }, i) => resolve(results[i]!))
    } catch (error) {
      for (const { reject } of batch) reject(error)
    } finally {
      done.batches++
      done.writes += batch.length
      done.seconds += (performance.now() - started) / 1000
    }
  }

  const write = (item: T) =>
    new Promise<R>((resolve, reject) => {
      // (flush never rejects: a failed batch rejects its writes)
      if (waiting.push({ item, resolve, reject }) === 1) setImmediate(() => void flush())
    })
  return Object.assign(write, { stats: () => ({ ...done, queued: waiting.length }) })
}

/** What one transaction does, with the statements it is given. */
export type Work<T> = (tx: Statements) => Promise<T>

/** A unit of work made to run in the async context it was handed over in, wherever the shared
 * transaction runs it (tracing on: the context of its own request, whose trace its statements and
 * events join, not the one of the first write of the batch). */
export type KeepContext = <T>(work: Work<T>) => Work<T>

/** Runs units of work in transactions; `stats` when they share commits (grouped). */
export type Transactions = (<T>(work: Work<T>) => Promise<T>) & { stats: (() => GroupCommitStats) | undefined }

/**
 * Runs each unit of work in a transaction. With `grouped` (SQLite), units that arrive together
 * share one, through groupCommit: they run one after the other inside it, each seeing what the
 * ones before it wrote, and each resolves only once that transaction has committed (after its
 * fsync). Otherwise (PostgreSQL) each has a transaction of its own, and they run side by side.
 */
export function transactions(sql: Sql, grouped: boolean, keep: KeepContext = (work) => work): Transactions {
  if (!grouped) return Object.assign(<T>(work: Work<T>) => sql.transaction(work), { stats: undefined })
  const run = groupCommit((works: Work<unknown>[]) =>
    sql.transaction(async (tx) => {
      const results: unknown[] = []
      for (const work of works) results.push(await work(tx))
      return results
    }),
  )
  return Object.assign(<T>(work: Work<T>) => run(keep(work)) as Promise<T>, { stats: run.stats })
}
