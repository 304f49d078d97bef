import type { Attributes, Context, Span } from '@opentelemetry/api'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Contract, Operation } from '../contract/model.js'
import type { TraceApi } from './tracing.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** tracing on: the request's server span, and the context it is the current span of */
    traced?: { span: Span; context: Context }
  }
}

/** What the contract says of an operation, as its span carries it: read from the contract
 * model, once per operation. */
function operationAttributes(operation: Operation, contract: Contract): { route: string; attributes: Attributes } {
  const route = `${contract.basePath}${operation.path}`
  return {
    route,
    attributes: {
      'http.route': route,
      'openapi.operation_id': operation.id,
      'api.version': contract.version[0],
      'openapi.stability': operation.lifecycle.level,
      'openapi.deprecated': operation.lifecycle.deprecation !== undefined,
    },
  }
}

/** The methods whose requests' bodies Fastify never reads, and which record nothing. */
const readsOnly = (method: string) => method === 'GET' || method === 'HEAD'

/** Where a request's logger keeps its span, for traceFields. */
const spanOfLogger = Symbol('span')
interface SpanLogger {
  [spanOfLogger]?: Span
}

/**
 * Pino's `mixin` with tracing on: each line a request's logger writes names the request's
 * `trace_id` and `span_id`. Read when a line is written, not when the request starts: a child
 * logger made for each request with them as bindings cost every request its making, written
 * or not (logs off, sampled or not).
 */
export function traceFields(_fields: object, _level: number, logger: object): Record<string, string> {
  const span = (logger as SpanLogger)[spanOfLogger]
  if (span === undefined) return {}
  const { traceId, spanId } = span.spanContext()
  return { trace_id: traceId, span_id: spanId }
}

/**
 * A server span for each request, made in Fastify's hooks rather than by @fastify/otel: its
 * releases depend on an older major of the OpenTelemetry SDK's packages than sdk-node's, and a
 * span named by the contract's route template needs the contract's operation, which only the
 * routes made from it (operations.ts, route config) know. The span joins the caller's W3C
 * `traceparent`, is named `{METHOD} {route template}` and carries the HTTP semantic conventions'
 * attributes and the operation's (operationAttributes); an Error answer's `code` is its
 * `error.type`; the request's log lines carry its trace_id and span_id (traceFields). Its
 * context is active through the request's hooks and handler, entered again after a body is read
 * (Node's stream events run outside it), so that the store's statements are its children
 * (statement-spans.ts) and the events it records keep its trace.
 * Registered only when tracing is on: otherwise no hook of it runs.
 */
async function requestSpans(app: FastifyInstance, { api }: { api: TraceApi }) {
  const described = new WeakMap<Operation, { route: string; attributes: Attributes }>()
  const describe = (request: FastifyRequest) => {
    const { operation, contract } = request.routeOptions.config
    if (operation === undefined) {
      // a route outside the contract (documentation, probes), or none at all (404)
      const route = request.routeOptions.url
      return { route, attributes: route === undefined ? {} : { 'http.route': route } }
    }
    let found = described.get(operation)
    if (found === undefined) described.set(operation, (found = operationAttributes(operation, contract!)))
    return found
  }
  app.addHook('onRequest', (request, _reply, done) => {
    const parent = api.extract(request.headers)
    const { route, attributes } = describe(request)
    const span = api.tracer.startSpan(route === undefined ? request.method : `${request.method} ${route}`, { kind: api.kinds.server }, parent)
    // the attributes on a span kept only: the SDK copies and checks every attribute given at the
    // start, kept or not, and most requests are not (a sampler; those OTEL_TRACES_SAMPLER names
    // decide by the trace alone)
    if (span.isRecording()) {
      span.setAttributes(attributes)
      span.setAttributes({ 'http.request.method': request.method, 'url.path': request.url.split('?')[0] })
    }
    // every line the request logs (its access-log line too) names its trace and span (traceFields);
    // logs off, its logger is the server's own, and writes nothing
    if (request.log !== app.log) (request.log as SpanLogger)[spanOfLogger] = span
    // A read whose span is not kept needs no context: its statements start no span, and it
    // records no event. (Most reads, at a sampler's ratio: entering one costs a copy of the
    // context and, on Node 22, AsyncLocalStorage's hooks at every promise and tick after it.)
    if (!span.isRecording() && readsOnly(request.method)) {
      request.traced = { span, context: parent }
      return done()
    }
    const context = api.withSpan(parent, span)
    request.traced = { span, context }
    api.within(context, done)
  })
  // A body is read in the socket's own events, which Node runs outside the context onRequest
  // entered: it is entered again once the body is read, on the routes whose requests have one.
  // (The hooks of a GET or a HEAD, whose body is never read, run on in that context.)
  const reenter = (request: FastifyRequest, _reply: unknown, done: () => void) => api.within(request.traced!.context, done)
  app.addHook('onRoute', (route) => {
    if ([route.method].flat().every(readsOnly)) return
    route.preValidation = [reenter, ...[route.preValidation ?? []].flat()]
  })
  app.addHook('onResponse', (request, reply, done) => {
    const span = request.traced!.span
    span.setAttribute('http.response.status_code', reply.statusCode)
    if (request.errorCode !== undefined) span.setAttribute('error.type', request.errorCode)
    if (reply.statusCode >= 500) span.setStatus({ code: api.errorStatus })
    span.end()
    done()
  })
}

export default fp(requestSpans, { name: 'request-spans', fastify: '5.x' })
