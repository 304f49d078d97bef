import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Contract } from '../contract/model.js'
import { jsonType } from '../core/media-types.js'
import { pageDocument, pageTitle } from './page-document.js'

/**
 * The published contract, open to all: `openapi.yaml` byte for byte, the same document as JSON,
 * and a documentation page titled with its version, which shows the page's copy of that
 * document (page-document.ts: the versions linked, "Try it out" on this server with no optional
 * parameter filled in), with deprecation and stability markers (`showExtensions`); and the
 * changelog of its releases, as Markdown. `served`: every version served, oldest first.
 */
async function docsPlugin(app: FastifyInstance, { contract, served, changelog }: { contract: Contract; served: readonly Contract[]; changelog: string }) {
  await app.register(swagger, { mode: 'static', specification: { document: contract.document } })
  const json = JSON.stringify(app.swagger())

  const published = contract.service.paths
  app.get(published.json, (_request, reply) => {
    reply.type(jsonType).send(json)
  })
  app.get(published.yaml, (_request, reply) => {
    reply.type('application/yaml; charset=utf-8').send(contract.source)
  })

  // every release, deprecation and sunset, for consumers (contract/CHANGELOG.md, npm run release)
  app.get(published.changelog, (_request, reply) => {
    reply.type('text/markdown; charset=utf-8').send(changelog)
  })

  const title = pageTitle(contract)
  const page = pageDocument(contract, served)
  const routePrefix = published.docs.replace(/\/$/, '')
  await app.register(swaggerUi, {
    routePrefix,
    theme: { title },
    // the page's document is Swagger UI's own (at ./json), made once
    transformSpecification: () => page,
    transformSpecificationClone: false,
    uiConfig: {
      urls: [{ url: `${routePrefix}/json`, name: title }],
      deepLinking: true,
      showExtensions: true,
      showCommonExtensions: true,
      displayOperationId: true,
      // (no validator badge: it would send the spec to validator.swagger.io)
      validatorUrl: null,
    },
    // The page runs only its own scripts and styles (the library's CSP, with the hashes of its
    // inline parts), calls only this server, and may not be framed (clickjacking).
    staticCSP: true,
    transformStaticCSP: strictDocsCsp,
    uiHooks: { onRequest: denyFraming },
  })
}

/** A <style> element the Swagger UI bundle adds at run time, which the library's policy
 * forgets (the browser test names the hash when the bundle changes). */
const runtimeStyle = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='"

/** The library's policy, tightened: no framing at all, no third-party images, and no rewriting
 * of http to https (the page may be served over plain HTTP on a private network). */
function strictDocsCsp(header: string): string {
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
