import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { OpenAPIV3 } from 'openapi-types'
import type { Contract } from './spec.js'

export const docsPath = (contract: Contract) => `${contract.basePath}/docs/`

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
  app.get(`${contract.basePath}/openapi.yaml`, (_request, reply) => {
    reply.type('application/yaml; charset=utf-8').send(contract.source)
  })

  await app.register(swaggerUi, {
    routePrefix: docsPath(contract).slice(0, -1),
    uiConfig: { deepLinking: true, showExtensions: true, showCommonExtensions: true, displayOperationId: true },
    // "Try it out" on the page calls this server first, then the published ones.
    transformSpecification: (document) => ({
      ...document,
      // a spec without servers has no base path, and is refused before this
      servers: [{ url: contract.basePath, description: 'This server' }, ...(document as OpenAPIV3.Document).servers!],
    }),
  })
}

export default fp(docsPlugin, { name: 'docs', fastify: '5.x' })
