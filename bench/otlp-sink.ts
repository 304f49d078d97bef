import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A collector's stand-in for the bench: OTLP/HTTP on 127.0.0.1, every POST to /v1/traces read
 * to its end and answered 200 at once, as a collector that keeps up does, its spans counted
 * (not decoded: the bench's own core sends the load). test/helpers/otlp-collector.ts decodes
 * every span, for the tests; the bench imports nothing of test/.
 */
export interface OtlpSink {
  /** for OTEL_EXPORTER_OTLP_ENDPOINT */
  url: string
  /** exports, spans and bytes received so far */
  received(): { exports: number; spans: number; bytes: number }
  close(): Promise<void>
}

/** A varint of protobuf's wire format at `at`: its value and the offset after it. */
function varint(bytes: Buffer, at: number): [number, number] {
  let value = 0
  let shift = 1
  for (;;) {
    const byte = bytes[at++]!
    value += (byte & 0x7f) * shift
    if (byte < 0x80) return [value, at]
    shift *= 128
  }
}

/** The length-delimited fields numbered `field` of the message in `bytes[from, to)`, as ranges. */
function fields(bytes: Buffer, from: number, to: number, field: number): [number, number][] {
  const found: [number, number][] = []
  let at = from
  while (at < to) {
    const [tag, next] = varint(bytes, at)
    at = next
    const wire = tag & 7
    if (wire === 0) at = varint(bytes, at)[1]
    else if (wire === 1) at += 8
    else if (wire === 5) at += 4
    else if (wire === 2) {
      const [length, start] = varint(bytes, at)
      if (tag >>> 3 === field) found.push([start, start + length])
      at = start + length
    } else return found // (groups, long deprecated, are not in OTLP)
  }
  return found
}

/** The spans of an ExportTraceServiceRequest in protobuf: resourceSpans (1), their scopeSpans (2), their spans (2). */
export function protobufSpans(bytes: Buffer): number {
  let spans = 0
  for (const [from, to] of fields(bytes, 0, bytes.length, 1)) {
    for (const [scopeFrom, scopeTo] of fields(bytes, from, to, 2)) spans += fields(bytes, scopeFrom, scopeTo, 2).length
  }
  return spans
}

/** The spans of an export in OTLP/JSON. */
function jsonSpans(body: Buffer): number {
  const exported = JSON.parse(body.toString('utf8')) as { resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[] }
  return (exported.resourceSpans ?? []).reduce((sum, { scopeSpans }) => sum + (scopeSpans ?? []).reduce((n, { spans }) => n + (spans?.length ?? 0), 0), 0)
}

export async function otlpSink(): Promise<OtlpSink> {
  const counts = { exports: 0, spans: 0, bytes: 0 }
  const server = createServer((message, response) => {
    const chunks: Buffer[] = []
    message.on('data', (chunk: Buffer) => chunks.push(chunk))
    message.on('end', () => {
      const body = Buffer.concat(chunks)
      const type = (message.headers['content-type'] ?? '').split(';')[0]!
      if (message.method === 'POST' && message.url === '/v1/traces') {
        counts.exports++
        counts.bytes += body.length
        counts.spans += type === 'application/json' ? jsonSpans(body) : protobufSpans(body)
      }
      // (an empty protobuf message, or {}: an ExportTraceServiceResponse that rejected nothing)
      response.writeHead(200, { 'content-type': type }).end(type === 'application/json' ? '{}' : '')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => ({ ...counts }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
