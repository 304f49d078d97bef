import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, RouteOptions } from 'fastify'
import openapiGlue from 'fastify-openapi-glue'
import type { MaybePromise } from '../core/maybe-async.js'
import type { Retirement } from './lifecycle.js'
import type { OperationHandlers } from './operations.js'
import { integerParameters, strictIntegers } from './parameters.js'
import { authorize } from './roles.js'
import { type Contract, deref, type Operation } from './spec.js'

/**
 * `Expect: 100-continue`: the client waits for a go before it sends its body. An operation that
 * takes a body gives it once the request is authenticated (the admission hook below), so a refused
 * client never sends its body at all.
 */
function grantContinue(request: FastifyRequest, reply: FastifyReply): void {
  if (request.headers.expect?.toLowerCase() === '100-continue' && !reply.raw.headersSent) reply.raw.writeContinue()
}

/** What an operation's request goes through before its body is read: it lets the request on
 * by returning (at once, or when its promise resolves), or refuses by throwing (an ApiError). */
export type OperationHook = (request: FastifyRequest, reply: FastifyReply) => MaybePromise<void>

export interface ContractOptions {
  contract: Contract
  handlers: OperationHandlers
  /** what requests of operations that require the bearer scheme go through (and its rate
   * limits): it sets request.principal and request.roles, whose roles are then checked against
   * those the operation's `security` names */
  authenticate: OperationHook
  /** what requests of operations that need no key go through: their rate limit */
  anonymous: OperationHook
  /** the lifecycle headers of each operation (lifecycleOfOperations) */
  lifecycle: ReadonlyMap<Operation, Record<string, string> | undefined>
  /** when each deprecated operation is gone (retirementOfOperations) */
  retirements: ReadonlyMap<Operation, Retirement | undefined>
  /** the time, in ms since the epoch: Date.now, or a test's clock */
  clock: () => number
  /** what counts the authenticated calls of an operation, by principal: for one that has a
   * lifecycle to watch (deprecated, experimental, beta), else undefined */
  callsOf: (operation: Operation) => ((principal: string) => void) | undefined
}

/**
 * Serves the operations of openapi.yaml: fastify-openapi-glue makes a route of each, with its
 * schemas and handler; this plugin adds, per operation and from the spec alone, the headers its
 * lifecycle calls for, the authentication and the roles its `security` requires, and the strict reading of
 * its integer parameters. It is an encapsulated context of its own, so its onRoute hook sees
 * the operations' routes only (each GET twice: HEAD is made from it).
 */
export default async function contractPlugin(app: FastifyInstance, { contract, handlers, authenticate, anonymous, lifecycle, retirements, clock, callsOf }: ContractOptions) {
  app.addHook('onRoute', (route) => {
    const operation = contract.operations.get((route.schema as { operationId: string }).operationId)!
    acceptJsonBodyOnly(route, operation, contract)
    answerJsonOnly(route, operation)
    headersInLowerCase(route)
    const guard = requiresBearer(operation, contract) ? authorize(authenticate, operation, contract.roles.required(operation)) : anonymous
    const headers = lifecycle.get(operation)
    const takesBody = (route.schema as { body?: unknown }).body !== undefined
    const integers = strictIntegers(integerParameters(operation, contract))
    const retired = retirements.get(operation)
    const called = callsOf(operation)
    // one hook, not one per concern: every request of the API passes here, and most are let
    // on at once (a guard's throw is Fastify's to catch, as a hook's error)
    const admitted = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
      // (an operation that needs no key has no principal to count)
      if (called !== undefined && request.principal !== '') called(request.principal)
      // past its sunset, an authenticated request of the operation is answered 410, unread
      const gone = retired?.(clock())
      if (gone !== undefined) return done(gone)
      if (integers !== undefined) integers(request)
      if (takesBody) grantContinue(request, reply)
      done()
    }
    const admit: onRequestHookHandler = (request, reply, done) => {
      if (headers !== undefined) reply.headers(headers)
      const guarded = guard(request, reply)
      if (guarded instanceof Promise) guarded.then(() => admitted(request, reply, done), done)
      else admitted(request, reply, done)
    }
    route.onRequest = [admit, ...[route.onRequest ?? []].flat()]
  })
  await app.register(openapiGlue, { specification: contract.document, serviceHandlers: handlers, prefix: contract.basePath })
}

/**
 * Fastify validates a body keyed by media type only when the request declares that type, so a
 * POST without a body would reach its handler unchecked. The server reads JSON only: validate
 * every body, present or not, against the application/json schema.
 */
function acceptJsonBodyOnly(route: RouteOptions, operation: Operation, { document }: Contract) {
  const schema = route.schema as { body?: { content: Record<string, { schema: unknown }> } }
  if (schema.body === undefined) return
  const mediaTypes = Object.keys(schema.body.content).join(', ')
  if (mediaTypes !== 'application/json' || deref(document, operation.definition.requestBody)?.required !== true) {
    throw new Error(`openapi.yaml: ${operation.id} must require an application/json body (it takes ${mediaTypes})`)
  }
  schema.body = schema.body.content['application/json']!.schema as never
}

/**
 * Every answer of the API is JSON. A response schema keyed by media type makes Fastify read the
 * Content-Type of each answer to find its serializer; one schema per status, found at once.
 */
function answerJsonOnly(route: RouteOptions, operation: Operation) {
  const schema = route.schema as { response?: Record<string, { content?: Record<string, { schema: unknown }> }> }
  for (const [status, { content }] of Object.entries(schema.response ?? {})) {
    // (HEAD's route is made from GET's, with the same schema object: done already)
    if (content === undefined) continue
    const mediaTypes = Object.keys(content).join(', ')
    if (mediaTypes !== 'application/json') throw new Error(`openapi.yaml: ${operation.id} must answer ${status} in application/json (it says ${mediaTypes})`)
    schema.response![status] = content['application/json']!.schema as never
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

/** Whether the spec asks for the bearer scheme; any other scheme is one the server lacks. */
function requiresBearer(operation: Operation, { document }: Contract): boolean {
  const requirements = operation.definition.security ?? document.security ?? []
  if (requirements.length === 0 || requirements.some((requirement) => Object.keys(requirement).length === 0)) return false
  for (const name of requirements.flatMap(Object.keys)) {
    const scheme = document.components?.securitySchemes?.[name] as { type?: string; scheme?: string } | undefined
    if (scheme?.type !== 'http' || scheme.scheme?.toLowerCase() !== 'bearer') {
      throw new Error(`openapi.yaml: ${operation.id} requires security scheme ${name}, which this server does not implement`)
    }
  }
  return true
}
