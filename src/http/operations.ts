import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, preHandlerHookHandler, RouteOptions } from 'fastify'
import type { Contract, Operation } from '../contract/model.js'
import { ApiError } from '../core/errors.js'
import type { MaybePromise } from '../core/maybe-async.js'
import { jsonType } from '../core/media-types.js'
import { endOfTurn } from '../core/shared-read.js'
import { type PartOf, storePartOf } from '../core/store-read.js'
import { entityTag, revisionTagging, tagging } from './conditional.js'
import { contractRoutes } from './contract-routes.js'
import { answer, type OperationHandlers } from './handlers.js'
import { strictIntegers } from './integers.js'
import type { KeptAnswers } from './kept-answers.js'
import { lifecycleHeaders, retirement } from './lifecycle-headers.js'

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

declare module 'fastify' {
  interface FastifyRequest {
    /** the major version of the API the request was made through (1 for /v1) */
    apiVersion: number
  }
  interface FastifyContextConfig {
    /** the operation of the contract a route serves, and that contract (a trace's span is named
     * and described by them: ops/request-spans.ts); undefined on a route outside the contract */
    operation?: Operation
    contract?: Contract
  }
}

/** The handlers of a contract's operations, by operationId: the newest version's are typed
 * (OperationHandlers, handlers.ts), an older one's derived from them (src/versions/). */
export type ServedHandlers = OperationHandlers | Readonly<Record<string, GenericHandler>>

export interface OperationsOptions {
  contract: Contract
  handlers: ServedHandlers
  /** what an operation's requests go through first: authentication and the roles its
   * `security` asks, or the rate limit of requests without a key (src/auth/) */
  guardOf: (operation: Operation) => OperationHook
  /** the time, in ms since the epoch: Date.now, or a test's clock */
  clock: () => number
  /** what counts the authenticated calls of an operation, by principal: for one that has a
   * lifecycle to watch (deprecated, experimental, beta), else undefined */
  callsOf: (operation: Operation) => ((principal: string) => void) | undefined
  /** the revision of a part of the store now (Storage.revisions, read at the end of the turn:
   * shared-read.ts): what a page's tag is known by before the page is read */
  revision: (part: string) => Promise<string>
  /** the key of the MAC that tags pages (Storage.tagSecret) */
  tagSecret: string
  /** where the answers of reads made of the store alone are kept for their part's revision (kept-answers.ts) */
  kept: KeptAnswers<KeptAnswer>
}

/**
 * Serves the operations of a contract: contractRoutes makes a route of each, with its schemas
 * and handler; this plugin adds, per operation and from the contract alone, its guard, the
 * headers its lifecycle calls for, its retirement, the strict reading of its integer
 * parameters, and the conditional requests it answers (conditional.ts).
 */
export default async function operationsPlugin(
  app: FastifyInstance,
  { contract, handlers, guardOf, clock, callsOf, revision, tagSecret, kept }: OperationsOptions,
) {
  const major = contract.version[0]
  const served = handlers as unknown as Record<string, GenericHandler>
  // (a read of the key's view whose handler answers from one part of the store alone: a page of
  // it is tagged by its part's revision, and the answers of one object are kept, a page's 200
  // being read anew, its revalidation the cheap answer; a read that shows the clock keeps its
  // bytes' tag)
  const partRead = (operation: Operation): PartOf | undefined =>
    operation.method === 'GET' && operation.roles !== undefined ? storePartOf(served[operation.id]!) : undefined
  const keptHere = (operation: Operation) => !operation.paged && partRead(operation) !== undefined
  const onRoute = (route: RouteOptions, operation: Operation) => {
    // (the access log names the lifecycle of the operation a request was of)
    route.config = { ...route.config, lifecycle: operation.lifecycle.label, operation, contract } as never
    const guard = guardOf(operation)
    const headers = lifecycleHeaders(operation, contract)
    const integers = strictIntegers(operation)
    const retired = retirement(operation, contract)
    const called = callsOf(operation)
    const takesBody = operation.takesBody
    // one hook, not one per concern: every request of the API passes here, and most are let
    // on at once (a guard's throw is Fastify's to catch, as a hook's error)
    const admitted = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
      // (an operation that needs no key has no principal to count)
      if (called !== undefined && request.principal !== '') called(request.principal)
      // past its sunset, an authenticated request of the operation is answered 410, unread
      const gone = retired?.(clock(), request)
      if (gone !== undefined) return done(gone)
      if (integers !== undefined) integers(request)
      if (takesBody) grantContinue(request, reply)
      done()
    }
    const admit: onRequestHookHandler = (request, reply, done) => {
      request.apiVersion = major
      if (headers !== undefined) reply.headers(headers(request))
      const guarded = guard(request, reply)
      if (guarded instanceof Promise) guarded.then(() => admitted(request, reply, done), done)
      else admitted(request, reply, done)
    }
    route.onRequest = [admit, ...[route.onRequest ?? []].flat()]
    // (its 200 tagged, and answered 304 to a matching If-None-Match, where its definition says so)
    const tag = tagging(operation, major)
    if (tag !== undefined) route.onSend = [tag, ...[route.onSend ?? []].flat()]
    // (a page's tag known before it is read, and its 304 answered before the handler runs; the
    // revision is read at the end of the turn, so a page is answered then, as any read is)
    const partOf = partRead(operation)
    const pageTagged = partOf === undefined ? undefined : revisionTagging(operation, contract, { revision, partOf, secret: tagSecret })
    const waited = pageTagged ?? (keptHere(operation) ? revisionRead(revision, partOf!) : operation.method === 'GET' ? answeredAtEndOfTurn : undefined)
    if (waited !== undefined) route.preHandler = [waited, ...[route.preHandler ?? []].flat()]
  }
  const handlerOf = (operationId: string) => {
    const operation = contract.operations.get(operationId)!
    const handler = served[operationId]!
    return answering(keptHere(operation) ? keeping(handler, kept, major) : handler, operation.lifecycle.deprecation !== undefined)
  }
  await contractRoutes(app, { contract, handlerOf, onRoute })
}

/**
 * The reads of a turn of the event loop are answered together, at its end, once every
 * connection that was readable has been read: the first half of each request (its checks) runs
 * for all of them, then the second (the store, the answer), each half tens of times in a row,
 * its code and data kept in the processor's caches. Under load, every part of a read then cost
 * 30-50% less than when each ran whole before the next (profiled: docs/benchmarks.md). A request
 * alone waits for the end of its turn: microseconds.
 */
const answeredAtEndOfTurn: preHandlerHookHandler = (_request, _reply, done) => void endOfTurn().then(() => done())

/** The revision of the part of the store the request reads, read for it at the end of its turn
 * (shared-read.ts): what its kept answer, if any, is looked up by (kept-answers.ts). A store that
 * fails rejects: Fastify's error handler answers it, a 503. */
const revisionRead =
  (revision: (part: string) => Promise<string>, partOf: PartOf): preHandlerHookHandler =>
  (request, _reply, done) =>
    void revision(partOf(request)).then((now) => {
      request.storeRevision = now
      done()
    }, done)

/** An answer kept for its revision (kept-answers.ts): its status and headers, and its body as it
 * was sent and that body's tag, so that neither is made again (serializing a pet and hashing it
 * cost about 1.5 µs each, timed alone). */
export interface KeptAnswer {
  status: number
  headers: Record<string, string> | undefined
  payload: string
  tag: string
}

/** `handler`, answering from what it answered before to the same request at the same revision,
 * and keeping what it answers, serialized as the route's schema of its status writes it (a read
 * of one object answers with a body) and tagged as conditional.ts tags a 200 (a refusal, an
 * ApiError, is made again). */
function keeping(handler: GenericHandler, kept: KeptAnswers<KeptAnswer>, major: number): GenericHandler {
  const sent = (request: FastifyRequest, reply: FastifyReply, { status, headers, payload, tag }: KeptAnswer): GenericAnswer => {
    request.knownTag = tag
    reply.type(jsonType)
    return { status, headers, body: payload }
  }
  const keep = (request: FastifyRequest, reply: FastifyReply, answer: GenericAnswer) => {
    if (answer instanceof ApiError) return answer
    const { status, headers, body } = answer
    const payload = reply.serializeInput(body as Record<string, unknown>, String(status)) as string
    const found = { status, headers, payload, tag: entityTag(major, payload) }
    kept.keep(request, found)
    return sent(request, reply, found)
  }
  return (request, reply, respond) => {
    const found = kept.find(request)
    if (found !== undefined) return sent(request, reply, found)
    const answered = handler(request, reply, respond)
    return answered instanceof Promise ? answered.then((settled) => keep(request, reply, settled)) : keep(request, reply, answered)
  }
}

export type GenericAnswer = { status: number; body?: unknown; headers?: Record<string, string> | undefined } | ApiError
type GenericHandler = (request: FastifyRequest, reply: FastifyReply, respond: typeof answer) => MaybePromise<GenericAnswer>

/** A route handler that sends what an operation's handler answers: its status, headers and
 * body, or its refusal through the error handler. At once when the handler answers at once.
 * `deprecated`: a deprecated operation's Link is set on the reply as the request came in; an
 * answer's own Link (a next page) goes first, then it: one field, a list (RFC 8288). */
function answering(handler: GenericHandler, deprecated: boolean) {
  const send = (answer: GenericAnswer, reply: FastifyReply) => {
    if (answer instanceof ApiError) throw answer
    if (answer.headers !== undefined) {
      const link = answer.headers.Link
      reply.headers(deprecated && link !== undefined ? { ...answer.headers, Link: `${link}, ${String(reply.getHeader('Link'))}` } : answer.headers)
    }
    reply.code(answer.status)
    // (a body-less answer, the 204, is sent here: a handler that returns nothing sends nothing)
    if (answer.body === undefined) return void reply.send()
    return answer.body
  }
  return (request: FastifyRequest, reply: FastifyReply) => {
    const answered = handler(request, reply, answer)
    return answered instanceof Promise ? answered.then((settled) => send(settled, reply)) : send(answered, reply)
  }
}
