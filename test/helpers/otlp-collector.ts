import { once } from 'node:events'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import protobuf from 'protobufjs'
import type { Test } from 'tap'

/** A span as the collector received it, whichever the protocol: ids in hex, attributes by key. */
export interface ReceivedSpan {
  traceId: string
  spanId: string
  /** '' for a root span */
  parentSpanId: string
  name: string
  /** OTLP's SpanKind: 2 server, 3 client */
  kind: number
  attributes: Record<string, string | number | boolean>
  /** OTLP's StatusCode: 0 unset, 1 ok, 2 error */
  statusCode: number
  /** the service.name of its resource */
  service: string
}

/**
 * The part of OpenTelemetry's trace.proto (opentelemetry-proto, v1) a test reads, with its
 * field numbers: ExportTraceServiceRequest and what it holds.
 */
const traceProto = {
  nested: {
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
    ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
    Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    ScopeSpans: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    Span: {
      fields: {
        traceId: { type: 'bytes', id: 1 },
        spanId: { type: 'bytes', id: 2 },
        parentSpanId: { type: 'bytes', id: 4 },
        name: { type: 'string', id: 5 },
        kind: { type: 'int32', id: 6 },
        attributes: { rule: 'repeated', type: 'KeyValue', id: 9 },
        status: { type: 'Status', id: 15 },
      },
    },
    Status: { fields: { message: { type: 'string', id: 2 }, code: { type: 'int32', id: 3 } } },
    KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
    AnyValue: {
      oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue'] } },
      fields: {
        stringValue: { type: 'string', id: 1 },
        boolValue: { type: 'bool', id: 2 },
        intValue: { type: 'int64', id: 3 },
        doubleValue: { type: 'double', id: 4 },
      },
    },
  },
}
const request = protobuf.Root.fromJSON(traceProto).lookupType('ExportTraceServiceRequest')

interface KeyValue {
  key: string
  value: { stringValue?: string; boolValue?: boolean; intValue?: string | number; doubleValue?: number }
}
interface Exported {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] }
    scopeSpans?: {
      spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: KeyValue[]; status?: { code?: number } }[]
    }[]
  }[]
}

const valueOf = ({ value }: KeyValue) => value.stringValue ?? value.boolValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.doubleValue!)
const attributesOf = (list: KeyValue[] = []) => Object.fromEntries(list.map((pair) => [pair.key, valueOf(pair)]))

/** The spans of an export, as OTLP/JSON writes them (ids in hex already) or as decoded from
 * protobuf (ids as bytes, written in hex here). */
function spansOf(exported: Exported): ReceivedSpan[] {
  return (exported.resourceSpans ?? []).flatMap(({ resource, scopeSpans }) => {
    const service = String(attributesOf(resource?.attributes)['service.name'])
    return (scopeSpans ?? []).flatMap(({ spans }) =>
      (spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        name: span.name,
        kind: span.kind,
        attributes: attributesOf(span.attributes),
        statusCode: span.status?.code ?? 0,
        service,
      })),
    )
  })
}

async function bodyOf(message: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of message) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

export interface Collector {
  /** http://127.0.0.1:PORT, for OTEL_EXPORTER_OTLP_ENDPOINT */
  url: string
  spans: ReceivedSpan[]
  /** the content types the exports came with */
  contentTypes: Set<string>
  /** resolves once `found` is true of the spans received (checked at each export), within `ms` */
  until(found: (spans: ReceivedSpan[]) => boolean, ms?: number): Promise<ReceivedSpan[]>
}

/** A tiny OTLP/HTTP collector on 127.0.0.1: POST /v1/traces, in http/json or http/protobuf. */
export async function otlpCollector(t: Test): Promise<Collector> {
  const spans: ReceivedSpan[] = []
  const contentTypes = new Set<string>()
  const waiters = new Set<() => void>()
  const server = createServer((message, response) => {
    void bodyOf(message).then((body) => {
      const type = (message.headers['content-type'] ?? '').split(';')[0]!
      contentTypes.add(type)
      if (message.method === 'POST' && message.url === '/v1/traces') {
        const exported =
          type === 'application/json'
            ? (JSON.parse(body.toString('utf8')) as Exported)
            : (request.toObject(request.decode(body), { bytes: String, longs: String }) as Exported)
        if (type !== 'application/json') for (const resource of exported.resourceSpans ?? []) hexIds(resource)
        spans.push(...spansOf(exported))
      }
      response.writeHead(200, { 'content-type': type }).end(type === 'application/json' ? '{}' : '')
      for (const waiter of waiters) waiter()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    contentTypes,
    until(found, ms = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!found(spans)) return
          waiters.delete(check)
          clearTimeout(timer)
          resolve(spans)
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`the spans looked for did not arrive within ${ms} ms; received: ${spans.map(({ name }) => name).join(', ')}`))
        }, ms)
        waiters.add(check)
        check()
      })
    },
  }
}

/** protobufjs gives bytes as base64 (bytes: String): OTLP/JSON's ids are hex. */
function hexIds(resource: NonNullable<Exported['resourceSpans']>[number]) {
  const hex = (base64: string | undefined) => (base64 === undefined ? undefined : Buffer.from(base64, 'base64').toString('hex'))
  for (const { spans } of resource.scopeSpans ?? []) {
    for (const span of spans ?? []) Object.assign(span, { traceId: hex(span.traceId), spanId: hex(span.spanId), parentSpanId: hex(span.parentSpanId) })
  }
}
