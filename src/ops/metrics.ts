import { performance } from 'node:perf_hooks'
import type { FastifyInstance, FastifyReply, onResponseHookHandler, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, Gauge, Registry } from 'prom-client'
import type { Backlog } from '../storage/deliveries.js'
import type { StorageStats } from '../storage/index.js'
import type { DispatcherMetrics } from '../webhooks/dispatcher.js'
import { attemptResults } from '../webhooks/outcome.js'
import { type MetricsListener, type MetricsListenOptions, serveMetrics } from './metrics-listener.js'
import { RequestLatency } from './request-latency.js'

/** Why the rate limiter refused a request: its API key spent its allowance, or (without a
 * valid key) its client address did. */
export const rateLimitReasons = ['key', 'address'] as const
export type RateLimitReason = (typeof rateLimitReasons)[number]

/** The `operation` label of a request no route matched (404, 405, a malformed URL). */
export const unmatched = 'unmatched'

/** Seconds. From 1 ms (a cached read) to 10 s (past DATABASE_TIMEOUT_MS's default, a 503). */
const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export interface Metrics {
  /** this app's metrics but the request latencies (the process's own are added by the listener) */
  registry: Registry
  /** the request latencies: the series of an `operation` label (an operationId, a route
   * outside the API, or `unmatched`), found once and then given each answered request */
  requests: RequestLatency
  /** all of this app's metrics, in Prometheus's text format */
  exposition(): Promise<string>
  /** the rate limiter refused a request (it is answered 429, and counted by status too) */
  rateLimitRefused(reason: RateLimitReason): void
  /** a connection was refused at once: MAX_CONNECTIONS were open */
  connectionRefused(): void
  /** a log line was dropped: too many waited to be written (log-destination.ts) */
  logLineDropped(): void
  /** webhook attempts and deliveries */
  webhooks: DispatcherMetrics
  /** the counter of an operation's authenticated requests, for one that is deprecated,
   * experimental or beta (its `lifecycle`): made once, then called per request */
  lifecycleRequests(operation: string, lifecycle: string): () => void
}



/**
 * The service's metrics, in a registry of its own (every app built in a process has its own):
 * - petstore_http_request_duration_seconds{operation,status}: a histogram whose `_count` is the
 *   number of requests answered (as OpenTelemetry's http.server.request.duration, no separate
 *   counter is kept);
 * - petstore_rate_limit_refusals_total{reason};
 * - petstore_webhook_attempts_total{result}, petstore_webhook_deliveries_total{result},
 *   petstore_webhook_disabled_subscriptions_total{reason}, and the lag of event deliveries as the
 *   dispatcher last found it (a scrape asks the database nothing):
 *   petstore_webhook_oldest_pending_seconds and petstore_webhook_oldest_due_seconds;
 * - petstore_lifecycle_requests_total{operation,lifecycle}: authenticated requests of the
 *   deprecated, experimental and beta operations (who calls them, per key: `npm run keys -- usage`);
 * - the database, read from `stats` only when scraped: PostgreSQL's pool, SQLite's group commits.
 */
export function createMetrics(stats: () => StorageStats): Metrics {
  const registry = new Registry()
  const registers = [registry]
  const requests = new RequestLatency(
    'petstore_http_request_duration_seconds',
    'Time from the arrival of a request to the end of its answer, by operationId (or route outside the API, or "unmatched") and status; _count is the number of requests',
    latencyBuckets,
  )
  const refusals = new Counter({
    name: 'petstore_rate_limit_refusals_total',
    help: 'Requests the rate limiter refused (429), by what was limited: an API key, or a client address without a valid key',
    labelNames: ['reason'] as const,
    registers,
  })
  // both series exist from the start, at 0: a rate() over them needs no "absent" special case
  for (const reason of rateLimitReasons) refusals.inc({ reason }, 0)
  const refusedConnections = new Counter({
    name: 'petstore_http_refused_connections_total',
    help: 'Connections closed at once because MAX_CONNECTIONS were open',
    registers,
  })
  const droppedLogLines = new Counter({
    name: 'petstore_log_dropped_lines_total',
    help: 'Log lines dropped because the log was not read: more than LOG_BUFFER_BYTES of lines waited to be written',
    registers,
  })

  const attempts = new Counter({
    name: 'petstore_webhook_attempts_total',
    help: 'Attempts to deliver a webhook event, by result: succeeded (2xx), rejected (another status), timeout, unreachable (no connection), refused (an address the policy refuses)',
    labelNames: ['result'] as const,
    registers,
  })
  for (const result of attemptResults) attempts.inc({ result }, 0)
  const deliveries = new Counter({
    name: 'petstore_webhook_deliveries_total',
    help: 'Webhook deliveries that are over, by result: succeeded, or failed (no attempt succeeded within WEBHOOK_RETRY_PERIOD_S)',
    labelNames: ['result'] as const,
    registers,
  })
  for (const result of ['succeeded', 'failed'] as const) deliveries.inc({ result }, 0)
  // the age of what waits, as the dispatcher last found it
  let backlog: Backlog = {}
  const ageOf = (since: number | undefined) => (since === undefined ? 0 : Math.max(0, (Date.now() - since) / 1000))
  new Gauge({
    name: 'petstore_webhook_oldest_pending_seconds',
    help: 'Age of the oldest webhook delivery not yet made (0 when none waits), retries of failing receivers included; every instance reports the same store',
    registers,
    collect() {
      this.set(ageOf(backlog.oldestPendingAt))
    },
  })
  new Gauge({
    name: 'petstore_webhook_oldest_due_seconds',
    help: 'How long the oldest webhook delivery that is due (its receiver not backed off) has waited for its attempt (0 when none): the dispatchers falling behind; every instance reports the same store',
    registers,
    collect() {
      this.set(ageOf(backlog.oldestDueAt))
    },
  })
  const disabled = new Counter({
    name: 'petstore_webhook_disabled_subscriptions_total',
    help: 'Webhook subscriptions this instance disabled, by why: gone (the endpoint answered 410), failing (every attempt failed for WEBHOOK_DISABLE_AFTER_S)',
    labelNames: ['reason'] as const,
    registers,
  })
  for (const reason of ['gone', 'failing'] as const) disabled.inc({ reason }, 0)

  // counted on the request's path in a plain number per series (prom-client hashes the labels
  // at each inc, half a µs), added to the counter when it is scraped
  const lifecycleSeries: { labels: { operation: string; lifecycle: string }; calls: number }[] = []
  const lifecycleRequests = new Counter({
    name: 'petstore_lifecycle_requests_total',
    help: 'Authenticated requests of the operations that are deprecated, experimental or beta, by operationId and lifecycle (deprecated wins over a stability level)',
    labelNames: ['operation', 'lifecycle'] as const,
    registers,
    collect() {
      for (const series of lifecycleSeries) {
        this.inc(series.labels, series.calls)
        series.calls = 0
      }
    },
  })

  const initial = stats()
  if (initial.pool) poolGauges(registers, () => stats().pool!)
  if (initial.commits) commitMetrics(registers, () => stats().commits!)

  return {
    registry,
    requests,
    exposition: async () => requests.exposition() + (await registry.metrics()),
    rateLimitRefused: (reason) => refusals.inc({ reason }),
    connectionRefused: () => refusedConnections.inc(),
    logLineDropped: () => droppedLogLines.inc(),
    lifecycleRequests(operation, lifecycle) {
      const series = { labels: { operation, lifecycle }, calls: 0 }
      lifecycleRequests.inc(series.labels, 0)
      lifecycleSeries.push(series)
      return () => {
        series.calls++
      }
    },
    webhooks: {
      attempted: (result) => attempts.inc({ result }),
      finished: (result) => deliveries.inc({ result }),
      backlog: (found) => {
        backlog = found
      },
      disabled: (reason) => disabled.inc({ reason }),
    },
  }
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

/** The `operation` label of a route: its operationId; outside the API, its pattern (`/readyz`,
 * `/v1/docs/*`: a set fixed at startup). (A request no route matched is `unmatched`.) */
export function operationOf(route: RouteOptions): string {
  return (route.schema as { operationId?: string } | undefined)?.operationId ?? route.url
}

/** Counts a request no route answers (the not-found handler's 404 and 405, a malformed URL that
 * Fastify's frameworkErrors meets before routing), which no route's hook sees, as `unmatched`. */
export function observeUnrouted(reply: FastifyReply): void {
  const started = performance.now()
  reply.raw.once('finish', () => reply.server.metrics.requests.of(unmatched).observe(reply.statusCode, (performance.now() - started) / 1000))
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics & {
      /** serves the metrics (the app's and the process's) on a listener of their own; it closes with the app */
      listen(options: MetricsListenOptions): Promise<string>
    }
  }
}

/** Times every answered request: each route has an onResponse hook that knows its series (so
 * this plugin comes before any route), and the rest are counted by observeUnrouted. */
async function metricsPlugin(app: FastifyInstance) {
  const metrics = createMetrics(() => app.storage.stats())
  const listeners: MetricsListener[] = []
  app.decorate('metrics', {
    ...metrics,
    async listen(options: MetricsListenOptions) {
      const listener = await serveMetrics(metrics.exposition, options)
      listeners.push(listener)
      return listener.url
    },
  })
  app.addHook('onRoute', (route) => {
    const series = metrics.requests.of(operationOf(route))
    const observe: onResponseHookHandler = (_request, reply, done) => {
      series.observe(reply.statusCode, reply.elapsedTime / 1000)
      done()
    }
    route.onResponse = [observe, ...[route.onResponse ?? []].flat()]
  })
  app.server.on('drop', metrics.connectionRefused)
  app.addHook('onClose', () => Promise.all(listeners.map((listener) => listener.close())))
}

export default fp(metricsPlugin, { name: 'metrics', fastify: '5.x' })
