import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Contract } from '../contract/model.js'

/**
 * The published contract, open to all: `openapi.yaml` byte for byte, the same document as JSON,
 * and a documentation page, titled as the spec is, that shows that same published document
 * (`urls`: Swagger UI would show its own copy, at ./json), with deprecation and stability
 * markers (`showExtensions`); and the changelog of its releases, as Markdown.
 */
async function docsPlugin(app: FastifyInstance, { contract, changelog }: { contract: Contract; changelog: string }) {
  await app.register(swagger, { mode: 'static', specification: { document: contract.document } })
  const json = JSON.stringify(app.swagger())

  const published = contract.service.paths
  app.get(published.json, (_request, reply) => {
    reply.type('application/json; charset=utf-8').send(json)
  })
  app.get(published.yaml, (_request, reply) => {
    reply.type('application/yaml; charset=utf-8').send(contract.source)
  })

  // every release, deprecation and sunset, for consumers (contract/CHANGELOG.md, npm run release)
  app.get(published.changelog, (_request, reply) => {
    reply.type('text/markdown; charset=utf-8').send(changelog)
  })

  const title = contract.document.info.title
  await app.register(swaggerUi, {
    routePrefix: published.docs.replace(/\/$/, ''),
    theme: { title },
    uiConfig: {
      urls: [{ url: published.json, name: title }],
      // "Try it out" offers this server first (see thisServerFirst); Swagger UI needs its
      // plugin that downloads the spec named again, beside it
      plugins: [downloadUrl, thisServerFirst],
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

// The plugins below run in the page, not here: Swagger UI writes their source into the page's
// script, where they can reach nothing of this module. test/docs-browser.test.ts runs them.
/* c8 ignore start */
declare const SwaggerUIBundle: { plugins: { DownloadUrl: (system: unknown) => object } }

/** Swagger UI's own plugin that downloads the spec, which naming plugins would drop. */
function downloadUrl(system: unknown) {
  return SwaggerUIBundle.plugins.DownloadUrl(system)
}

/** "Try it out" calls this server first (the one that serves the page: its CSP lets the page
 * call no other), at the path the spec is published under (`/v1`), then the published servers. */
function thisServerFirst() {
  type Update = (spec: { servers?: unknown[] }) => unknown
  const wrap = (update: Update, system: { specSelectors: { url(): string } }) => (spec: { servers?: unknown[] }) => {
    const specUrl = system.specSelectors.url()
    const url = specUrl.slice(0, specUrl.lastIndexOf('/'))
    return update({ ...spec, servers: [{ url, description: 'This server' }, ...(spec.servers ?? [])] })
  }
  return { statePlugins: { spec: { wrapActions: { updateJsonSpec: wrap } } } }
}
/* c8 ignore stop */

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
