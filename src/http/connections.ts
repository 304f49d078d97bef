import { type IncomingMessage, type Server, STATUS_CODES, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger, FastifyHttpOptions } from 'fastify'
import type { Config } from '../core/config.js'
import { ApiError } from '../core/errors.js'
import { jsonType } from '../core/media-types.js'
import { linger } from './linger.js'

/** The limits a connection lives under, from the configuration. */
export type ConnectionLimits = Pick<Config, 'HEADERS_TIMEOUT_MS' | 'REQUEST_TIMEOUT_MS' | 'KEEP_ALIVE_TIMEOUT_MS' | 'MAX_CONNECTIONS'>

/** Headers on every answer the server gives, Node-level ones included: a client must not guess
 * a type, nor anything in between keep an answer meant for one client. */
export const protectiveHeaders = { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' } as const

/** How often Node looks for expired requests (by default every 30 s, far past the limits). */
const connectionsCheckingIntervalMs = 1_000

/**
 * Fastify's and Node's options for the HTTP server. Every phase of a request is bounded: the
 * headers must arrive within HEADERS_TIMEOUT_MS and the whole request within REQUEST_TIMEOUT_MS
 * (Node answers 408 through clientErrorHandler), a body may not pause longer than
 * BODY_IDLE_TIMEOUT_MS (json-body.ts), and a connection silent longer than a whole request
 * (a client that does not read its answer) is closed.
 */
export function serverOptions(limits: ConnectionLimits, messageLength: number): Partial<FastifyHttpOptions<Server>> {
  return {
    requestTimeout: limits.REQUEST_TIMEOUT_MS,
    keepAliveTimeout: limits.KEEP_ALIVE_TIMEOUT_MS,
    // Past the request's limit by two of Node's checks: the check that answers 408 comes first,
    // even on a busy event loop, and a silent connection is never cut without its answer.
    connectionTimeout: limits.REQUEST_TIMEOUT_MS + 2 * connectionsCheckingIntervalMs,
    http: {
      headersTimeout: limits.HEADERS_TIMEOUT_MS,
      connectionsCheckingInterval: connectionsCheckingIntervalMs,
      // Node would answer a request without Host itself, with an empty 400; requestChecks does
      requireHostHeader: false,
    },
    clientErrorHandler: clientErrorHandler(messageLength),
  }
}

/**
 * What Node would otherwise do on its own, without the Error body or in silence: refuse
 * connections past MAX_CONNECTIONS (now with a log line), answer `Expect` (now after
 * authentication) and CONNECT (now with an answer).
 */
export function guardServer(server: Server, log: FastifyBaseLogger, limits: ConnectionLimits, messageLength: number): void {
  server.maxConnections = limits.MAX_CONNECTIONS
  // One line a second at most, however many are refused: a flood must not flood the log too.
  let refused = 0
  let reporting: NodeJS.Timeout | undefined
  server.on('drop', () => {
    refused++
    reporting ??= setTimeout(() => {
      log.warn({ refused, maxConnections: limits.MAX_CONNECTIONS }, 'refused connections: too many open (MAX_CONNECTIONS)')
      refused = 0
      reporting = undefined
    }, 1_000).unref()
  })
  // `Expect: 100-continue` is granted once the request is authenticated (grantContinue, called
  // by the admitting hook of an operation that takes a body, contract/plugin.ts); any other
  // expectation is ignored, as RFC 9110 allows.
  const dispatch = (request: IncomingMessage, response: ServerResponse) => server.emit('request', request, response)
  server.on('checkContinue', dispatch)
  server.on('checkExpectation', dispatch)
  server.on('connect', (_request: IncomingMessage, socket: Socket) => {
    answerRaw(socket, new ApiError('invalid_request', 'CONNECT is not supported: this server is not a proxy'), messageLength)
  })
}

declare module 'fastify' {
  interface FastifyInstance {
    /** the connections of the server open now (openConnections) */
    connections: ReadonlySet<Socket>
  }
}

/** The connections of `server` open now, kept as they come and go: a connection costs an entry
 * and a listener, a request nothing. What a shutdown needs to reach the requests in flight. */
export function openConnections(server: Server): ReadonlySet<Socket> {
  const open = new Set<Socket>()
  function forget(this: Socket) {
    open.delete(this)
  }
  server.on('connection', (socket: Socket) => {
    open.add(socket)
    socket.once('close', forget)
  })
  return open
}

/**
 * The answers in flight on `connections`, not yet begun, say `Connection: close`; Node then ends
 * each connection once its answer is written (as with the answers given after the signal,
 * request-hooks.ts). Without this, a request still arriving when the shutdown began would be
 * answered keep-alive, and its idle connection held open until the grace period ended. (A
 * connection's answer in progress is Node's `_httpMessage`, there since its first versions.)
 */
export function closeAfterAnswersInFlight(connections: Iterable<Socket>): void {
  for (const socket of connections) {
    const response = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage
    if (response && !response.headersSent) response.setHeader('Connection', 'close')
  }
}

/** Why Node's HTTP parser gave up on a request, where the code alone would puzzle a client. */
const unreadable: Record<string, string> = { HPE_HEADER_OVERFLOW: 'The request headers are larger than 16 KiB' }

/**
 * A request Node cannot read as HTTP (truncated, oversized headers, or too slow) never reaches
 * Fastify: it is answered here, in the Error shape too, and the connection closed.
 */
const clientErrorHandler = (messageLength: number) => (error: NodeJS.ErrnoException, socket: Socket) => {
  // Node reports each later chunk of a broken request again, and a request too slow to finish
  // after its answer (which closes the connection, see linger.ts): the first answer stands.
  if (socket.writableEnded || socket.destroyed) return
  answerRaw(
    socket,
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ApiError('request_timeout', 'The request did not arrive in time')
      : new ApiError('invalid_request', unreadable[error.code!] ?? `The HTTP request could not be read (${error.code})`),
    messageLength,
  )
}

/** An answer written straight to the socket, for requests Fastify never sees; then the
 * connection is closed without losing it. */
function answerRaw(socket: Socket, error: ApiError, messageLength: number): void {
  const body = JSON.stringify(error.bodyWithin(messageLength))
  const headers = {
    'Content-Type': jsonType,
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
    ...protectiveHeaders,
    ...error.headers,
  }
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`)
  socket.write(`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\n${head.join('')}\r\n${body}`)
  linger(socket)
}
