import { Counter, Gauge, type Registry } from 'prom-client'
import type { StorageStats } from './index.js'

/** The database's metrics, read from its stats only when scraped: PostgreSQL's pool (and its
 * pipelined read connections), SQLite's group commits. Added to the app's registry. */
export function registerStorageMetrics(registry: Registry, stats: () => StorageStats): void {
  const registers = [registry]
  const initial = stats()
  if (initial.pool) poolGauges(registers, () => stats().pool!)
  if (initial.commits) commitMetrics(registers, () => stats().commits!)
}

/** PostgreSQL's pool, and its pipelined connections for reads if it has them, as gauges read when scraped. */
function poolGauges(registers: Registry[], pool: () => NonNullable<StorageStats['pool']>) {
  gaugesOf(registers, pool, [
    ['petstore_db_pool_max_connections', 'Connections the pool may open (DATABASE_POOL_SIZE)', 'max'],
    ['petstore_db_pool_open_connections', 'Connections open, idle or in use', 'open'],
    ['petstore_db_pool_idle_connections', 'Open connections not in use', 'idle'],
    ['petstore_db_pool_waiting_requests', 'Queries and transactions waiting for a free connection', 'waiting'],
  ])
  if (pool().reads === undefined) return
  gaugesOf(registers, () => pool().reads!, [
    ['petstore_db_read_max_connections', 'Connections that carry reads, pipelined (DATABASE_READ_CONNECTIONS)', 'max'],
    ['petstore_db_read_open_connections', 'Of those, open', 'open'],
    ['petstore_db_read_unanswered_statements', 'Reads sent on them (or waiting for one to open), not yet answered', 'unanswered'],
  ])
}

/** The fields of `Stats` that hold a number. */
type NumberField<Stats> = { [Field in keyof Stats]: Stats[Field] extends number ? Field : never }[keyof Stats]

/** One gauge per field of what `read` gives, read when scraped. */
function gaugesOf<Stats>(registers: Registry[], read: () => Stats, gauges: (readonly [string, string, NumberField<Stats>])[]) {
  for (const [name, help, field] of gauges) {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read()[field] as number)
      },
    })
  }
}

/**
 * SQLite's group commits. Its one connection is used synchronously, so no statement ever waits
 * for it between two turns of the event loop, and a pool's gauges would always read the same.
 * What tells an operator something: how many commits (fsyncs) the creates cost, how long they
 * held the process, and writes queued for the next one. (Event-loop lag, among the process's
 * metrics, shows the rest of SQLite's time, which is spent on the event loop.)
 */
function commitMetrics(registers: Registry[], commits: () => NonNullable<StorageStats['commits']>) {
  const totals = [
    ['petstore_db_commits_total', 'Commits of grouped creates (each one fsync on SQLite)', 'batches'],
    ['petstore_db_committed_writes_total', 'Creates written by those commits (writes / commits: the mean batch)', 'writes'],
    ['petstore_db_commit_seconds_total', 'Time spent in those commits, during which SQLite holds the process', 'seconds'],
  ] as const
  for (const [name, help, field] of totals) {
    // prom-client counters only go up by inc(): each scrape adds what was done since the last
    let reported = 0
    new Counter({
      name,
      help,
      registers,
      collect() {
        const now = commits()[field]
        this.inc(now - reported)
        reported = now
      },
    })
  }
  new Gauge({
    name: 'petstore_db_commit_queued_writes',
    help: 'Creates waiting for the next commit',
    registers,
    collect() {
      this.set(commits().queued)
    },
  })
}
