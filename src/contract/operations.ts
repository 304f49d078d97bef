import type { FastifyReply, FastifyRequest } from 'fastify'
import type { operations } from '../../generated/api.js'
import type { BodyDefaults } from '../../generated/body-defaults.js'
import type { QueryDefaults } from '../../generated/query-defaults.js'
import type { MaybePromise } from '../core/maybe-async.js'

/** The operations of openapi.yaml's paths, by operationId: those the server serves. (Those of
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

/** The body an operation answers with when it succeeds. */
export type SuccessBody<O extends OperationId> = JsonOf<operations[O]['responses'][SuccessStatus<O>]>

/**
 * What serves an operation: it answers the body of its success, with the status and headers it
 * sets on `reply` (200 unless it says otherwise), at once or by a promise; it refuses by throwing
 * an ApiError. Fastify sends the body with the operation's serializer for that status.
 */
export type OperationHandler<O extends OperationId> = (
  request: FastifyRequest<RouteTypes<O>>,
  reply: FastifyReply<RouteTypes<O>>,
) => MaybePromise<SuccessBody<O>>

/** One handler per operation of the spec: a missing, extra or mistyped one fails `tsc`. */
export type OperationHandlers = { [O in OperationId]: OperationHandler<O> }

/** The handlers of some of the operations (those of one concern), to be joined into OperationHandlers. */
export type HandlersOf<O extends OperationId> = Pick<OperationHandlers, O>
