import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'
import type { Contract } from '../contract/model.js'
import { ApiError } from '../core/errors.js'
import { protectiveHeaders } from './connections.js'
import { closeAfterAnswer, declaresBody } from './linger.js'
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
export function requestHooks(app: FastifyInstance, contracts: readonly Contract[]): void {
  app.decorate('draining', false)
  // the methods whose requests' bodies the server reads: those of the spec's operations that take one
  const readsBody = new Set(
    contracts
      .flatMap(({ operations }) => [...operations.values()])
      .filter((operation) => operation.takesBody)
      .map(({ method }) => method),
  )

  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(protectiveHeaders)
    if (app.draining) reply.header('Connection', 'close')
    // A body this server never reads (a GET's, say) is not read as a request either: the
    // connection closes after the answer. (Refused before it is read, the body of a POST is
    // the error handler's to see to, see error-handler.ts.)
    if (!readsBody.has(request.method) && declaresBody(request.raw)) closeAfterAnswer(request.raw, reply)
    done(hostProblem(request.raw) ?? undefined)
  })
}

/** RFC 9112: an HTTP/1.1 request has exactly one Host header. */
function hostProblem(raw: IncomingMessage): ApiError | null {
  const hosts = occurrences(raw.rawHeaders, 'host')
  if (hosts === 1 || (hosts === 0 && raw.httpVersion === '1.0')) return null
  return new ApiError('invalid_request', hosts === 0 ? 'An HTTP/1.1 request needs a Host header' : 'Send one Host header, not several')
}
