import type { Context, DiagLogger, DiagLoggerOptions, Span, SpanKind, SpanStatusCode, Tracer } from '@opentelemetry/api'
import { tracingWanted } from '../core/config.js'

/** What of `@opentelemetry/api` the spans are made with: imported with the SDK, never before. */
export interface TraceApi {
  tracer: Tracer
  /** the caller's context, read from its `traceparent` (and `tracestate`, `baggage`) */
  extract(headers: Record<string, unknown>): Context
  /** the headers that carry `context` on (`traceparent`, and `tracestate` when it has one) */
  inject(context: Context): Record<string, string>
  /** the W3C traceparent of the span active now, or undefined outside any */
  traceparent: () => string | undefined
  /** the context whose span a W3C traceparent (as `traceparent()` wrote it) names; the root
   * context when it names none */
  continued(traceparent: string | null): Context
  /** `work`, to run in the context active now wherever it is called from (a write queued for a
   * commit shared with others: each its own request's) */
  bind: <Work extends (...args: never[]) => unknown>(work: Work) => Work
  /** the context of the code running now */
  active(): Context
  /** `context` with `span` as its current span */
  withSpan(context: Context, span: Span): Context
  /** the current span of `context`, if any */
  spanOf(context: Context): Span | undefined
  /** runs `work` with `context` as the active one (and what it starts, promises included) */
  within<R>(context: Context, work: () => R): R
  kinds: { server: SpanKind; client: SpanKind }
  errorStatus: SpanStatusCode
  /** spans dropped so far because the export queue was full (the collector down or slow), as
   * the SDK has reported them */
  droppedSpans: () => number
}

export interface Tracing extends TraceApi {
  /** exports the spans still queued, then stops the SDK; resolves after `withinMs` at the
   * latest (a collector that does not answer holds up no exit: what is unsent is lost) */
  shutdown(withinMs: number): Promise<void>
}

/** What the batch span processor says when spans were dropped, once the queue has room again. */
const droppedReport = /^Dropped (\d+) spans because maxQueueSize reached$/

/**
 * The SDK's diagnostic logger, which counts the spans the batch processor reports dropped: the
 * only report of them it makes through its API (its own metrics would cost every span a
 * counter's work). With OTEL_LOG_LEVEL (`wanted`, as the SDK reads it), the SDK's messages at that
 * level are printed as the SDK prints them (DiagConsoleLogger, on stderr), as without this logger.
 */
function dropCounter(api: typeof import('@opentelemetry/api'), wanted: number | undefined, counted: (count: number) => void): [DiagLogger, DiagLoggerOptions] {
  const levels = api.DiagLogLevel
  const printer = wanted === undefined ? undefined : new api.DiagConsoleLogger()
  const printed =
    (level: number, name: keyof DiagLogger) =>
    (message: string, ...args: unknown[]) => {
      if (printer !== undefined && level <= wanted!) printer[name](message, ...args)
    }
  const warned = printed(levels.WARN, 'warn')
  const logger: DiagLogger = {
    error: printed(levels.ERROR, 'error'),
    warn(message, ...args) {
      const report = droppedReport.exec(message)
      if (report !== null) counted(Number(report[1]))
      warned(message, ...args)
    },
    info: printed(levels.INFO, 'info'),
    debug: printed(levels.DEBUG, 'debug'),
    verbose: printed(levels.VERBOSE, 'verbose'),
  }
  return [logger, { logLevel: Math.max(levels.WARN, wanted ?? levels.NONE), suppressOverrideMessage: true }]
}

/** The service's name in its spans when OTEL_SERVICE_NAME does not give one (the SDK's own
 * default, `unknown_service:node`, names no service). */
const defaultServiceName = 'petstore'

/**
 * Starts OpenTelemetry's Node SDK when traces are wanted, else does nothing: the SDK and the API
 * are imported here, dynamically, so a server without an endpoint loads none of them. The SDK
 * is configured by the OTEL_* environment alone (exporter, protocol, sampler, batch processor);
 * traces only (its metrics and logs exporters are not started: Prometheus and the JSON log
 * serve those), and no auto-instrumentation (the spans are the service's own: request-spans.ts,
 * statement-spans.ts).
 */
export async function startTracing(): Promise<Tracing | undefined> {
  // (process.env: the SDK reads it too)
  const env = process.env
  if (!tracingWanted(env)) return undefined
  const [{ NodeSDK }, api, core] = await Promise.all([import('@opentelemetry/sdk-node'), import('@opentelemetry/api'), import('@opentelemetry/core')])
  const serviceNamed = (env.OTEL_SERVICE_NAME ?? '').trim() !== ''
  const sdk = new NodeSDK({ metricReaders: [], logRecordProcessors: [], instrumentations: [], ...(!serviceNamed && { serviceName: defaultServiceName }) })
  let dropped = 0
  api.diag.setLogger(...dropCounter(api, core.diagLogLevelFromString(env.OTEL_LOG_LEVEL), (count) => (dropped += count)))
  sdk.start()
  const { context, propagation, trace, SpanKind, SpanStatusCode } = api
  // what an event keeps of its trace is W3C's traceparent, whatever OTEL_PROPAGATORS says
  const w3c = new core.W3CTraceContextPropagator()
  return {
    tracer: trace.getTracer('petstore'),
    extract: (headers) => propagation.extract(api.ROOT_CONTEXT, headers),
    inject(of) {
      const headers: Record<string, string> = {}
      propagation.inject(of, headers)
      return headers
    },
    traceparent() {
      const carrier: Record<string, string> = {}
      w3c.inject(context.active(), carrier, api.defaultTextMapSetter)
      return carrier[core.TRACE_PARENT_HEADER]
    },
    continued: (traceparent) => w3c.extract(api.ROOT_CONTEXT, { [core.TRACE_PARENT_HEADER]: traceparent ?? undefined }, api.defaultTextMapGetter),
    bind: (work) => context.bind(context.active(), work),
    active: () => context.active(),
    withSpan: (parent, span) => trace.setSpan(parent, span),
    spanOf: (of) => trace.getSpan(of),
    within: (of, work) => context.with(of, work),
    kinds: { server: SpanKind.SERVER, client: SpanKind.CLIENT },
    errorStatus: SpanStatusCode.ERROR,
    droppedSpans: () => dropped,
    shutdown: (withinMs) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, withinMs)
        const done = () => {
          clearTimeout(timer)
          resolve()
        }
        // (a collector that refuses the last export fails the shutdown: what is unsent is lost)
        sdk.shutdown().then(done, done)
      }),
  }
}
