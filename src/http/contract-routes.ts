import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import type { Contract, Operation } from '../contract/model.js'

export interface ContractRoutesOptions {
  contract: Contract
  /** the route handler of an operation; none when only the schemas are wanted (`npm run
   * generate`): glue's "not implemented" stands in */
  handlerOf?: (operationId: string) => (request: FastifyRequest, reply: FastifyReply) => unknown
  /** what else the route of an operation is given (its hooks, its config) */
  onRoute?: (route: RouteOptions, operation: Operation) => void
}

/**
 * The routes of a contract's operations, made by fastify-openapi-glue, with the schemas the
 * server compiles: the operations plugin serves them, and `npm run generate` compiles the same
 * schemas into generated/ with nothing else built around them. Called in an encapsulated
 * context of its own, whose onRoute hook sees the operations' routes only (each GET twice:
 * HEAD is made from it).
 */
export async function contractRoutes(app: FastifyInstance, { contract, handlerOf, onRoute }: ContractRoutesOptions) {
  app.addHook('onRoute', (route) => {
    jsonBodyOnly(route)
    jsonAnswersOnly(route)
    headersInLowerCase(route)
    onRoute?.(route, contract.operations.get((route.schema as { operationId: string }).operationId)!)
  })
  const handlers = handlerOf === undefined ? { serviceHandlers: {} } : { operationResolver: handlerOf }
  await app.register(openapiGlue, { specification: contract.document, ...handlers, prefix: contract.basePath })
}

/**
 * Fastify validates a body keyed by media type only when the request declares that type, so a
 * POST without a body would reach its handler unchecked. The server reads JSON only (the
 * contract model refuses any other body): validate every body, present or not, against the
 * application/json schema.
 */
function jsonBodyOnly(route: RouteOptions) {
  const schema = route.schema as { body?: { content: Record<string, { schema: unknown }> } }
  if (schema.body !== undefined) schema.body = schema.body.content['application/json']!.schema as never
}

/**
 * Every answer of the API is JSON (the contract model refuses any other). A response schema
 * keyed by media type makes Fastify read the Content-Type of each answer to find its
 * serializer; one schema per status, found at once.
 */
function jsonAnswersOnly(route: RouteOptions) {
  const schema = route.schema as { response?: Record<string, { content?: Record<string, { schema: unknown }> }> }
  for (const [status, { content }] of Object.entries(schema.response ?? {})) {
    // (HEAD's route is made from GET's, with the same schema object: done already)
    if (content !== undefined) schema.response![status] = content['application/json']!.schema as never
  }
}

/**
 * Node gives header names in lower case, and Fastify leaves the header schema of a route alone
 * when the validators come from elsewhere (ours, from generated/): `Idempotency-Key` in the
 * spec must be looked for as `idempotency-key`, or its rules would never apply.
 */
function headersInLowerCase(route: RouteOptions) {
  const schema = route.schema as { headers?: { properties: Record<string, unknown>; required?: string[] } }
  if (schema.headers === undefined) return
  const { properties, required } = schema.headers
  schema.headers = {
    ...schema.headers,
    properties: Object.fromEntries(Object.entries(properties).map(([name, property]) => [name.toLowerCase(), property])),
    ...(required && { required: required.map((name) => name.toLowerCase()) }),
  }
}
