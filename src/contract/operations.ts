import type { FastifyReply, FastifyRequest } from 'fastify'
import type { operations } from '../../generated/api.js'
import type { QueryDefaults } from '../../generated/query-defaults.js'

/** The operations of openapi.yaml, by operationId. */
export type OperationId = keyof operations

type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : undefined

/** Query parameters after validation: those with a default in the spec are always there. */
type Query<O extends OperationId> =
  NonNullable<operations[O]['parameters']['query']> extends infer Q
    ? Omit<Q, QueryDefaults[O] & keyof Q> & Required<Pick<Q, QueryDefaults[O] & keyof Q>>
    : never

/** The request and the responses of an operation, as Fastify's route generic. */
export interface RouteTypes<O extends OperationId> {
  Querystring: Query<O>
  Params: NonNullable<operations[O]['parameters']['path']>
  Body: JsonOf<operations[O]['requestBody']>
  Reply: { [Status in keyof operations[O]['responses']]: JsonOf<operations[O]['responses'][Status]> }
}

export type OperationHandler<O extends OperationId> = (
  request: FastifyRequest<RouteTypes<O>>,
  reply: FastifyReply<RouteTypes<O>>,
) => Promise<FastifyReply<RouteTypes<O>>>

/** One handler per operation of the spec: a missing, extra or mistyped one fails `tsc`. */
export type OperationHandlers = { [O in OperationId]: OperationHandler<O> }
