import { performance } from 'node:perf_hooks'
import type { FastifyInstance, FastifyReply, onResponseHookHandler, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, Registry } from 'prom-client'
import { type MetricsListener, type MetricsListenOptions, serveMetrics } from './metrics-listener.js'
import { type OperationLatency, RequestLatency } from './request-latency.js'

/** Why the rate limiter refused a request: its API key spent its allowance, or (without a
 * valid key) its client address did. */
const rateLimitReasons = ['key', 'address'] as const
export type RateLimitReason = (typeof rateLimitReasons)[number]

/** The `operation` label of a request no route matched (404, 405, a malformed URL). */
const unmatched = 'unmatched'

/** Seconds. From 1 ms (a cached read) to 10 s (past DATABASE_TIMEOUT_MS's default, a 503). */
const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export interface Metrics {
  /** this app's metrics but the request latencies (the process's own are added by the listener) */
  registry: Registry
  /** the request latencies: the series of an `operation` label (an operationId, a route
   * outside the API, or `unmatched`), found once and then given each answered request */
  requests: RequestLatency
  /** all of this app's metrics, in Prometheus's text format */
  exposition: () => Promise<string>
  /** the rate limiter refused a request (it is answered 429, and counted by status too) */
  rateLimitRefused(reason: RateLimitReason): void
  /** a connection was refused at once: MAX_CONNECTIONS were open */
  connectionRefused: () => void
  /** a log line was dropped: too many waited to be written (log-destination.ts) */
  logLineDropped(): void
  /** the counter of an operation's authenticated requests, for one that is deprecated,
   * experimental or beta (its `lifecycle`), of a major `version`: made once, then called per request */
  lifecycleRequests(operation: string, lifecycle: string, version: number): () => void
}

/**
 * The service's metrics, in a registry of its own (every app built in a process has its own),
 * to which each concern adds its own (the database's, the webhooks'):
 * - petstore_http_request_duration_seconds{operation,version,status}: a histogram whose `_count` is the
 *   number of requests answered (as OpenTelemetry's http.server.request.duration, no separate
 *   counter is kept);
 * - petstore_rate_limit_refusals_total{reason};
 * - petstore_lifecycle_requests_total{operation,lifecycle,version}: authenticated requests of the
 *   deprecated, experimental and beta operations (who calls them, per key: `npm run keys -- usage`);
 */
function createMetrics(): Metrics {
  const registry = new Registry()
  const registers = [registry]
  const requests = new RequestLatency(
    'petstore_http_request_duration_seconds',
    'Time from the arrival of a request to the end of its answer, by operationId and major version (or route outside the API, or "unmatched") and status; _count is the number of requests',
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

  // counted on the request's path in a plain number per series (prom-client hashes the labels
  // at each inc, half a µs), added to the counter when it is scraped
  const lifecycleSeries: { labels: { operation: string; lifecycle: string; version: string }; calls: number }[] = []
  const lifecycleRequests = new Counter({
    name: 'petstore_lifecycle_requests_total',
    help: 'Authenticated requests of the operations that are deprecated, experimental or beta, by operationId, lifecycle (deprecated wins over a stability level) and major version',
    labelNames: ['operation', 'lifecycle', 'version'] as const,
    registers,
    collect() {
      for (const series of lifecycleSeries) {
        this.inc(series.labels, series.calls)
        series.calls = 0
      }
    },
  })

  return {
    registry,
    requests,
    exposition: async () => requests.exposition() + (await registry.metrics()),
    rateLimitRefused: (reason) => refusals.inc({ reason }),
    connectionRefused: () => refusedConnections.inc(),
    logLineDropped: () => droppedLogLines.inc(),
    lifecycleRequests(operation, lifecycle, version) {
      const series = { labels: { operation, lifecycle, version: String(version) }, calls: 0 }
      lifecycleRequests.inc(series.labels, 0)
      lifecycleSeries.push(series)
      return () => {
        series.calls++
      }
    },
  }
}

/** The `operation` label of a route: its operationId, with the major version it is served
 * under (its prefix, `/v2`); outside the API, its pattern (`/readyz`, `/v1/docs/*`: a set fixed
 * at startup). (A request no route matched is `unmatched`.) */
function seriesOf(requests: RequestLatency, route: RouteOptions): OperationLatency {
  const operationId = route.schema?.operationId
  return operationId === undefined
    ? requests.of(route.url)
    : requests.of(operationId, Number(/[0-9]+$/.exec((route as RouteOptions & { prefix: string }).prefix)![0]))
}

/** Counts a request no route answers (the not-found handler's 404 and 405, a malformed URL that
 * Fastify's frameworkErrors meets before routing), which no route's hook sees, as `unmatched`. */
function observeUnrouted(requests: RequestLatency): (reply: FastifyReply) => void {
  const series = requests.of(unmatched)
  return (reply) => {
    const started = performance.now()
    reply.raw.once('finish', () => series.observe(reply.statusCode, (performance.now() - started) / 1000))
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics & {
      /** serves the metrics (the app's and the process's) on a listener of their own; it closes with the app */
      listen(options: MetricsListenOptions): Promise<string>
      /** counts a request no route answers */
      observeUnrouted(reply: FastifyReply): void
    }
  }
}

/** Times every answered request: each route has an onResponse hook that knows its series (so
 * this plugin comes before any route), and the rest are counted by observeUnrouted. */
async function metricsPlugin(app: FastifyInstance) {
  const metrics = createMetrics()
  const listeners: MetricsListener[] = []
  app.decorate('metrics', {
    ...metrics,
    observeUnrouted: observeUnrouted(metrics.requests),
    async listen(options: MetricsListenOptions) {
      const listener = await serveMetrics(metrics.exposition, options, app.contract.service.limits.errorMessageLength)
      listeners.push(listener)
      return listener.url
    },
  })
  app.addHook('onRoute', (route) => {
    const series = seriesOf(metrics.requests, route)
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
