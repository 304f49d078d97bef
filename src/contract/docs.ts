import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { OpenAPIV3 } from 'openapi-types'
import type { Contract } from './spec.js'

export const docsPath = (contract: Contract) => `${contract.basePath}/docs/`
/** openapi.yaml, as published (and beside it, openapi.json) */
export const specPath = (contract: Contract) => `${contract.basePath}/openapi.yaml`

/**
 * The published contract, open to all: `openapi.yaml` byte for byte, the same document as JSON,
 * and a documentation page that shows deprecation and stability markers (`showExtensions`).
 */
async function docsPlugin(app: FastifyInstance, { contract }: { contract: Contract }) {
  await app.register(swagger, { mode: 'static', specification: { document: contract.document } })
  const json = JSON.stringify(app.swagger())

  app.get(`${contract.basePath}/openapi.json`, (_request, reply) => {
    reply.type('application/json; charset=utf-8').send(json)
  })
  app.get(specPath(contract), (_request, reply) => {
    reply.type('application/yaml; charset=utf-8').send(contract.source)
  })

  await app.register(swaggerUi, {
    routePrefix: docsPath(contract).slice(0, -1),
    // (no validator badge: it would send the spec to validator.swagger.io)
    uiConfig: { deepLinking: true, showExtensions: true, showCommonExtensions: true, displayOperationId: true, validatorUrl: null },
    // The page runs only its own scripts and styles (the library's CSP, with the hashes of its
    // inline parts), calls only this server, and may not be framed (clickjacking).
    staticCSP: true,
    transformStaticCSP: strictDocsCsp,
    uiHooks: { onRequest: denyFraming },
    // "Try it out" on the page calls this server first, then the published ones.
    transformSpecification: (document) => ({
      ...document,
      // a spec without servers has no base path, and is refused before this
      servers: [{ url: contract.basePath, description: 'This server' }, ...(document as OpenAPIV3.Document).servers!],
    }),
  })
}

/** A <style> element the Swagger UI bundle adds at run time, which the library's policy
 * forgets (the browser test names the hash when the bundle changes). */
const runtimeStyle = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='"

/** The library's policy, tightened: no framing at all, no third-party images, and no rewriting
 * of http to https (the page may be served over plain HTTP on a private network). */
export function strictDocsCsp(header: string): string {
  return header
    .replace("frame-ancestors 'self'", "frame-ancestors 'none'")
    .replace("style-src 'self'", `style-src 'self' ${runtimeStyle}`)
    .replace(' validator.swagger.io', '')
    .replace(/\s*upgrade-insecure-requests;/, '')
    .concat(" connect-src 'self'; form-action 'none';")
}

function denyFraming(_request: FastifyRequest, reply: FastifyReply, done: () => void) {
  // for browsers older than frame-ancestors
  reply.header('X-Frame-Options', 'DENY')
  done()
}

export default fp(docsPlugin, { name: 'docs', fastify: '5.x' })
