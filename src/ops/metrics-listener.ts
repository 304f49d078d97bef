import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { collectDefaultMetrics, Registry } from 'prom-client'
import { ApiError } from '../core/errors.js'
import { jsonType } from '../core/media-types.js'
import { protectiveHeaders } from '../http/connections.js'

export interface MetricsListenOptions {
  port: number
  host: string
}

export interface MetricsListener {
  /** http://HOST:PORT/metrics */
  url: string
  close(): Promise<void>
}

const metricsPath = '/metrics'

/** A scraper needs a handful of connections; anything more is not one. */
const maxConnections = 16

/** The process's own metrics (CPU, memory, event-loop lag, GC, handles), collected once per
 * process however many apps it builds: collecting starts observers that are never stopped. */
let processRegistry: Registry | undefined
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

/**
 * The Prometheus endpoint, on a listener of its own, apart from the API: an operator scrapes
 * `GET /metrics` (text exposition format) on a port that API clients are never given. Any
 * other path is a 404, another method a 405, in the service's Error shape.
 */
export async function serveMetrics(appMetrics: () => Promise<string>, { port, host }: MetricsListenOptions, messageLength: number): Promise<MetricsListener> {
  const sources = [appMetrics, () => processMetrics().metrics()]
  const refuse: Refuse = (request, response, error) =>
    send(response, request, error.status, { 'Content-Type': jsonType, ...error.headers }, JSON.stringify(error.bodyWithin(messageLength)))
  const server = createServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, (request, response) => {
    answer(sources, request, response, refuse).catch((error: Error) => {
      // a collector failed: the scrape fails visibly, the listener stays up
      refuse(request, response, new ApiError('internal_error', `Metrics could not be collected: ${error.message}`))
    })
  })
  server.maxConnections = maxConnections
  server.listen(port, host)
  try {
    await once(server, 'listening')
  } catch (error) {
    throw Object.assign(error as Error, { message: `metrics listener (METRICS_HOST, METRICS_PORT): ${(error as Error).message}` })
  }
  const address = server.address() as AddressInfo
  const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    url: `http://${hostPart}:${address.port}${metricsPath}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** Answers a request with an Error body. */
type Refuse = (request: IncomingMessage, response: ServerResponse, error: ApiError) => void

async function answer(sources: (() => Promise<string>)[], request: IncomingMessage, response: ServerResponse, refuse: Refuse) {
  const path = request.url!.split('?')[0]
  if (path !== metricsPath) return refuse(request, response, new ApiError('not_found', `No route ${request.method} ${path}: metrics are at ${metricsPath}`))
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    return refuse(
      request,
      response,
      new ApiError('method_not_allowed', `${request.method} is not served at ${metricsPath}; it takes GET, HEAD`, { Allow: 'GET, HEAD' }),
    )
  }
  const texts = await Promise.all(sources.map((source) => source()))
  send(response, request, 200, { 'Content-Type': Registry.PROMETHEUS_CONTENT_TYPE }, texts.join(''))
}

function send(response: ServerResponse, request: IncomingMessage, status: number, headers: Record<string, string>, body: string) {
  response.writeHead(status, { ...protectiveHeaders, ...headers, 'Content-Length': Buffer.byteLength(body) })
  response.end(request.method === 'HEAD' ? undefined : body)
}
