import cors, { type FastifyCorsOptions } from '@fastify/cors'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { OpenAPIV3 } from 'openapi-types'
import type { Contract } from '../contract/model.js'
import { deref } from '../contract/pointer.js'
import { methodsAt as methodsOfContracts } from './error-handler.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** set by @fastify/cors on a preflight it answers */
    corsPreflightEnabled: boolean
  }
}

/** The request headers a browser page may send beyond the CORS-safelisted ones, those that
 * every operation may take: the key and the body's type. */
const alwaysAllowed = ['Authorization', 'Content-Type']

/** What @fastify/cors is told for a request that gets no CORS headers (Vary: Origin still). */
const noCors: FastifyCorsOptions = { origin: false }

/** Response headers a page can read without being told (CORS-safelisted), and CORS's own. */
const readableAnyway = new Set(['cache-control', 'content-language', 'content-length', 'content-type', 'expires', 'last-modified', 'pragma', 'vary'])

/**
 * CORS for browser pages on the configured origins (@fastify/cors): a preflight for an operation
 * of a served document, from an allowed origin, asking for a method served at that path, is answered
 * 204 (no key needed: browsers send none with a preflight) and allows the request headers the
 * spec's operations take (allowedRequestHeaders); the operations' answers to those origins carry
 * `Access-Control-Allow-Origin` and expose the headers the spec documents. The published spec
 * (`openapi.json`, `openapi.yaml`) is readable by the same origins, and no others: it is public,
 * but a server reachable only inside a network would otherwise let any page its users visit read
 * what it serves there. Every other request is as without CORS: an OPTIONS request that is not
 * such a preflight is the 404 or 405 it was, answered before its body is read.
 */
async function corsPlugin(app: FastifyInstance, { origins }: { origins: readonly string[] }): Promise<void> {
  if (origins.length === 0) return
  const { contract, contracts, notFound } = app
  const anyOrigin = origins.includes('*')
  const exposedHeaders = [...new Set(contracts.flatMap(documentedHeaders))].sort().join(', ')
  const allowedHeaders = [...new Set(contracts.flatMap(allowedRequestHeaders))].sort().join(', ')
  const published = new Set(contracts.flatMap(({ service }) => [service.paths.json, service.paths.yaml]))
  const methodsAt = (path: string) => (published.has(path) ? ['GET', 'HEAD'] : methodsOfContracts(contracts, path))

  const optionsFor = (request: FastifyRequest): FastifyCorsOptions => {
    const origin = request.headers.origin
    // (most requests are not a browser's: no Origin, nothing to look up)
    if (origin === undefined) return noCors
    const methods = methodsAt(request.url.split('?')[0]!)
    const preflightMethod = request.method === 'OPTIONS' ? request.headers['access-control-request-method'] : undefined
    const allowed =
      (anyOrigin || origins.includes(origin)) &&
      methods !== undefined &&
      (request.method !== 'OPTIONS' || (preflightMethod !== undefined && methods.includes(preflightMethod)))
    if (!allowed) return noCors
    return {
      origin: anyOrigin ? '*' : origin,
      methods,
      allowedHeaders,
      exposedHeaders,
      maxAge: contract.service.limits.preflightMaxAgeSeconds,
      credentials: false,
    }
  }
  await app.register(cors, { delegator: (request, callback) => callback(null, optionsFor(request)) })
  // (@fastify/cors routes every OPTIONS request to itself: one that is not a preflight it answers
  // goes where it went before, and now, before its body is read)
  app.addHook('onRequest', async (request, reply) => {
    if (request.method === 'OPTIONS' && !request.corsPreflightEnabled) return notFound(request, reply)
  })
}

/** The request headers a page may send beyond the safelisted ones: the key, the body's type,
 * and every header parameter of the spec's operations (`Idempotency-Key`), as written there. */
export function allowedRequestHeaders(contract: Contract): string[] {
  const names = new Map(alwaysAllowed.map((name) => [name.toLowerCase(), name]))
  for (const operation of contract.operations.values()) {
    for (const { in: where, name } of operation.parameters) if (where === 'header') names.set(name.toLowerCase(), name)
  }
  return [...names.values()].sort()
}

/** Every response header a document documents for its operations, as written there, that a
 * page could not read unless exposed. */
export function documentedHeaders({ document, operations }: Contract): string[] {
  const names = new Map<string, string>()
  for (const { definition } of operations.values()) {
    for (const response of Object.values(definition.responses)) {
      for (const name of Object.keys(deref<OpenAPIV3.ResponseObject>(document, response).headers ?? {})) {
        const lower = name.toLowerCase()
        if (!readableAnyway.has(lower) && !lower.startsWith('access-control-')) names.set(lower, name)
      }
    }
  }
  return [...names.values()].sort()
}

export default fp(corsPlugin, { name: 'cors', fastify: '5.x', dependencies: ['http'], decorators: { fastify: ['contract', 'contracts'] } })
