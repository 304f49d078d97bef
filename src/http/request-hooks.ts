import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.js'
import { protectiveHeaders } from './connections.js'
import { lingerAfterResponse } from './linger.js'
import { occurrences } from './raw-headers.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** set when the server stops: every answer then closes its connection */
    draining: boolean
  }
}

/**
 * What every request goes through, an operation's or not, before anything else: HTTP/1.1 rules
 * Node no longer checks for us, the protective headers, and the connection's fate.
 */
export function requestHooks(app: FastifyInstance): void {
  app.decorate('draining', false)

  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(protectiveHeaders)
    if (app.draining) reply.header('Connection', 'close')
    done(hostProblem(request.raw) ?? undefined)
  })

  // `Expect: 100-continue`: the client waits for a go before sending its body. It is given once
  // the request is authenticated (preParsing comes after onRequest), so a refused client never
  // sends a body at all.
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (request.headers.expect?.toLowerCase() === '100-continue' && !reply.raw.headersSent) reply.raw.writeContinue()
    done(null, payload)
  })

  // Answered before its body has all arrived (401, 413, 415, 408, 404…): the rest of the body
  // will not be read as a request, so the connection closes, without losing the answer.
  app.addHook('onSend', (request, reply, payload, done) => {
    // (`complete` is false only on a real socket: injected requests have none)
    if (request.raw.complete === false) {
      reply.header('Connection', 'close')
      lingerAfterResponse(request.raw)
    }
    done(null, payload)
  })
}

/** RFC 9112: an HTTP/1.1 request has exactly one Host header. */
function hostProblem(raw: IncomingMessage): ApiError | null {
  const hosts = occurrences(raw.rawHeaders, 'host')
  if (hosts === 1 || (hosts === 0 && raw.httpVersion === '1.0')) return null
  return new ApiError('invalid_request', hosts === 0 ? 'An HTTP/1.1 request needs a Host header' : 'Send one Host header, not several')
}
