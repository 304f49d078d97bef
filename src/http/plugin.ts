import type { FastifyError, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../core/errors.js'
import { type ConnectionLimits, guardServer, openConnections } from './connections.js'
import { errorHandler, notFoundHandler, unavailableLog } from './error-handler.js'
import { jsonBodyParser, otherMediaTypes } from './json-body.js'
import { requestHooks } from './request-hooks.js'

export interface HttpOptions extends ConnectionLimits {
  /** BODY_IDLE_TIMEOUT_MS */
  bodyIdleTimeoutMs: number
}

declare module 'fastify' {
  interface FastifyInstance {
    /** the sockets open now (for draining) */
    connections: ReadonlySet<import('node:net').Socket>
    /** answers a request no route serves: 404, or 405 on a path of a served contract */
    notFound: ReturnType<typeof notFoundHandler>
  }
}

/**
 * HTTP as the service speaks it, for every request: the connections' limits, the rules Node no
 * longer checks, JSON bodies only (any other is a 415), and one way out for every error, in the
 * Error shape, for routes and for requests no route serves.
 */
async function httpPlugin(app: FastifyInstance, { bodyIdleTimeoutMs, ...limits }: HttpOptions) {
  guardServer(app.server, app.log, limits, app.contract.service.limits.errorMessageLength)
  app.decorate('connections', openConnections(app.server))
  app.decorate('reportUnavailable', unavailableLog(app.log))
  app.decorateRequest('apiVersion', 0)
  app.decorateRequest('knownTag', '')
  app.decorateRequest('storeRevision', '')
  requestHooks(app, app.contracts)

  app.removeAllContentTypeParsers()
  const bodyLimits = { bodyLimit: app.contract.service.limits.requestBodyBytes, idleTimeoutMs: bodyIdleTimeoutMs }
  app.addContentTypeParser('application/json', jsonBodyParser(bodyLimits))
  app.addContentTypeParser('*', otherMediaTypes(bodyLimits))

  const notFound = notFoundHandler(app.contracts)
  app.decorate('notFound', notFound)
  // A request no operation serves is a 404 or 405, whatever Fastify finds wrong with its body
  // (an unreadable request, our own ApiError, stays what it is). No route counts it: it is
  // counted here.
  app.setErrorHandler<FastifyError | ApiError>((error, request, reply) => {
    if (!request.is404) return errorHandler(error, request, reply)
    app.metrics.observeUnrouted(reply)
    return error instanceof ApiError ? errorHandler(error, request, reply) : notFound(request, reply)
  })
  app.setNotFoundHandler((request, reply) => {
    app.metrics.observeUnrouted(reply)
    return notFound(request, reply)
  })
}

export default fp(httpPlugin, { name: 'http', fastify: '5.x', dependencies: ['metrics'], decorators: { fastify: ['contract', 'contracts'] } })
