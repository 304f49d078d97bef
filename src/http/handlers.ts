import type { FastifyReply, FastifyRequest } from 'fastify'
import type { BodyDefaults, operations, QueryDefaults } from '../../generated/newest.js'
import type { ApiError, ErrorCode, errorStatus } from '../core/errors.js'
import type { MaybePromise } from '../core/maybe-async.js'

/** The operations of the newest document's paths (generated/newest.ts names it), by operationId: those its
 * handlers serve (an older version's are derived from them, src/versions/). (Those of
 * its `webhooks` are in `operations` too, but the server sends them; generate lists only the
 * served ones in QueryDefaults.) */
export type OperationId = keyof operations & keyof QueryDefaults

type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : undefined

/** `T` with its properties `K` made present: validation filled in their defaults. */
type Filled<T, K extends PropertyKey> = [T] extends [object] ? Omit<T, K & keyof T> & Required<Pick<T, K & keyof T>> : T

/** Query parameters after validation: those with a default in the spec are always there. */
type Query<O extends OperationId> = Filled<NonNullable<operations[O]['parameters']['query']>, QueryDefaults[O]>

/** Header parameters, by the lower-case names under which Node hands them over. */
type Headers<O extends OperationId> = [NonNullable<operations[O]['parameters']['header']>] extends [infer H]
  ? [H] extends [never]
    ? unknown
    : { [Name in keyof H as Lowercase<Name & string>]: H[Name] }
  : never

/** The request and the responses of an operation, as Fastify's route generic. */
export interface RouteTypes<O extends OperationId> {
  Querystring: Query<O>
  Params: NonNullable<operations[O]['parameters']['path']>
  Headers: Headers<O>
  /** the body after validation: properties with a default in the spec are always there */
  Body: Filled<JsonOf<operations[O]['requestBody']>, BodyDefaults[O]>
  Reply: { [Status in keyof operations[O]['responses']]: JsonOf<operations[O]['responses'][Status]> }
}

/** The statuses of success an operation answers with. */
type SuccessStatus<O extends OperationId> = Extract<keyof operations[O]['responses'], 200 | 201 | 202 | 203 | 204 | 206>

type ResponseOf<O extends OperationId, S> = operations[O]['responses'][S & keyof operations[O]['responses']]

/** A type without its index signature: openapi-typescript adds `[name: string]: unknown` to
 * every response's headers, which would let any name through. */
type Named<T> = { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] }

/** Marks what `answer` made: a handler's answer is made by it, never written as a literal (whose
 * headers TypeScript would not hold to the documented ones). */
declare const answered: unique symbol

type BodyOf<O extends OperationId, S> = JsonOf<ResponseOf<O, S>>
type HeadersOf<O extends OperationId, S> = ResponseOf<O, S> extends { headers: infer H } ? Partial<Named<H>> : undefined

/** One answer of an operation: a documented status of success, its body, and headers that the
 * spec documents for that status (by name and value; whether a required one is there, the
 * tests check against the spec: openapi-typescript makes every `$ref` header required). */
export interface AnswerOf<O extends OperationId, S> {
  status: S
  body: BodyOf<O, S>
  headers?: HeadersOf<O, S>
  readonly [answered]: true
}

/** What an operation may answer: one of its documented successes. */
export type Answer<O extends OperationId> = { [S in SuccessStatus<O>]: AnswerOf<O, S> }[SuccessStatus<O>]

/** Makes an answer of an operation, held by `tsc` to what the spec documents for its status. */
export type Respond<O extends OperationId> = <S extends SuccessStatus<O>>(status: S, body: BodyOf<O, S>, headers?: HeadersOf<O, S>) => AnswerOf<O, S>

/** The one maker of answers, whatever the operation (its types are the handlers'). */
export const answer = ((status: number, body: unknown, headers?: Record<string, string>) => ({ status, body, headers })) as unknown as Respond<never>

/** The error codes whose status an operation documents: the only refusals its handler may give. */
export type RefusalCode<O extends OperationId> = { [C in ErrorCode]: (typeof errorStatus)[C] extends keyof operations[O]['responses'] ? C : never }[ErrorCode]

/**
 * What serves an operation: one of its documented answers, at once or by a promise; or a refusal,
 * an ApiError whose status the operation documents (given back, not thrown: what a handler may
 * answer is checked by `tsc`). Fastify sends the body with the operation's serializer for that
 * status. (A store that cannot serve throws, as anything may: a 503 every operation documents.)
 */
export type OperationHandler<O extends OperationId> = (
  request: FastifyRequest<RouteTypes<O>>,
  reply: FastifyReply<RouteTypes<O>>,
  answer: Respond<O>,
) => MaybePromise<Answer<O> | ApiError<RefusalCode<O>>>

/** One handler per operation of the spec: a missing, extra or mistyped one fails `tsc`. */
export type OperationHandlers = { [O in OperationId]: OperationHandler<O> }

/** The handlers of some of the operations (those of one concern), to be joined into OperationHandlers. */
export type HandlersOf<O extends OperationId> = Pick<OperationHandlers, O>
