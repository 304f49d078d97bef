import module from 'node:module'
import t from 'tap'

// Every module this process resolves from now on, by the name it is asked for: whatever
// imports OpenTelemetry, statically or not, asks for an `@opentelemetry/…` name.
const resolved: string[] = []
type Resolve = (specifier: string, context: object, next: (specifier: string, context: object) => unknown) => unknown
;(module as unknown as { registerHooks(hooks: { resolve: Resolve }): void }).registerHooks({
  resolve(specifier, context, next) {
    resolved.push(specifier)
    return next(specifier, context)
  },
})
// (but its API, which prom-client requires whatever happens, for its exemplars: a no-op until an SDK registers)
const openTelemetry = () => resolved.filter((specifier) => specifier.startsWith('@opentelemetry/') && specifier !== '@opentelemetry/api')

// (imported after the hook, so that what they import is seen)
const { build, call, api } = await import('./helpers/app.js')
const { startTracing } = await import('../src/ops/tracing.js')

t.test('with no OTEL_* endpoint, nothing of OpenTelemetry is loaded, and no request is traced', async (t) => {
  for (const name of Object.keys(process.env).filter((name) => name.startsWith('OTEL_'))) delete process.env[name]
  t.equal(await startTracing(), undefined, 'no endpoint: no SDK')
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = 'http://127.0.0.1:9'
  process.env.OTEL_SDK_DISABLED = 'true'
  t.equal(await startTracing(), undefined, 'OTEL_SDK_DISABLED: no SDK')
  const app = await build(t)
  t.equal(app.hasPlugin('request-spans'), false, 'no tracing hook is registered')
  const { status } = await call(t, app, { method: 'GET', url: `${api}/categories` })
  t.equal(status, 200)
  t.same(openTelemetry(), [], 'no @opentelemetry module but the API was asked for')
  const { trace } = await import('@opentelemetry/api')
  t.equal(trace.getTracer('any').startSpan('any').isRecording(), false, 'and no tracer is registered in it: a span records nothing')

  // the hook sees a dynamic import of it when there is one: the SDK, with an endpoint
  delete process.env.OTEL_SDK_DISABLED
  const tracing = await startTracing()
  t.ok(tracing, 'an endpoint: the SDK is started')
  t.ok(openTelemetry().includes('@opentelemetry/sdk-node'), 'and then @opentelemetry/sdk-node is loaded')
  t.equal(trace.getTracer('any').startSpan('any').isRecording(), true, 'and its tracer records')
  t.equal(tracing!.traceparent(), undefined, 'outside any span, there is no trace to keep')
  const span = tracing!.tracer.startSpan('a request')
  const kept = tracing!.within(tracing!.withSpan(tracing!.active(), span), () => tracing!.traceparent())
  const { traceId, spanId } = span.spanContext()
  t.equal(kept, `00-${traceId}-${spanId}-01`, 'within a span, its traceparent')
  t.equal(tracing!.spanOf(tracing!.continued(kept!))!.spanContext().spanId, spanId, 'which continues that span')
  t.equal(tracing!.spanOf(tracing!.continued(null)), undefined, 'none kept: no span to continue')
  span.end()
  // (its collector refuses the spans: the shutdown resolves all the same, and nothing is left rejected)
  await tracing!.shutdown(10_000)
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT
})
