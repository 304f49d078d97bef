import { hash } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { allOrders, type OrderScope } from '../auth/access.js'
import { ApiError } from '../core/errors.js'
import { andThen } from '../core/maybe-async.js'
import { fromStoreAlone } from '../core/store-read.js'
import type { HandlersOf } from '../http/handlers.js'
import { ifMatchMissed, ifMatchOf } from '../http/conditional.js'
import { pageOf } from '../http/pagination.js'
import { storeParts } from '../storage/revision.js'
import type { OrderRepository } from './repository.js'

export type OrderOperation = 'placeOrder' | 'getOrder' | 'listOrders' | 'updateOrder'

/** A body as one text whatever the order of its properties: what "the same body" means for an
 * Idempotency-Key. (The bodies are flat objects, checked by their schema already.) */
const fingerprint = (body: object) => hash('sha256', JSON.stringify(body, Object.keys(body).sort()))

export interface OrderHandlerOptions {
  /** the URL of the list (for its next page) and that of an order (the Location of a 201), from the spec */
  ordersUrl: string
  orderUrl: (orderId: number) => string
  /** whose orders a request sees (src/auth/access.ts) */
  scopeOf: (request: FastifyRequest) => OrderScope
  /** how long an Idempotency-Key is remembered, for the words of a 422 */
  idempotencyKeyHours: number
}

/** The store's orders (experimental in openapi.yaml), which move a pet through its statuses.
 * Each belongs to the key that placed it (its principal). Reads answer at once when the
 * repository does. */
export function orderHandlers(orders: OrderRepository, { ordersUrl, orderUrl, scopeOf, idempotencyKeyHours }: OrderHandlerOptions): HandlersOf<OrderOperation> {
  // (the orders a request sees, as the part of the store they are: staff's every order, a client's its own)
  const ordersSeen = (request: FastifyRequest) => {
    const scope = scopeOf(request)
    return scope === allOrders ? storeParts.everyOrder : storeParts.ordersOf(scope)
  }
  return {
    async placeOrder(request, _reply, answer) {
      const key = request.headers['idempotency-key']
      let outcome = await orders.place(
        request.body,
        request.principal,
        key === undefined ? undefined : { principal: request.principal, key, fingerprint: fingerprint(request.body) },
      )
      // (a retry with the key gets the outcome of the first request, answered the same way, and says so)
      const replayed = 'replayed' in outcome ? ({ 'Idempotent-Replayed': 'true' } as const) : undefined
      if ('replayed' in outcome) outcome = outcome.replayed
      if ('placed' in outcome) return answer(201, outcome.placed, { Location: orderUrl(outcome.placed.id), ...replayed })
      if ('missing' in outcome) return new ApiError('not_found', `Pet ${outcome.missing.petId} not found`, replayed)
      if ('unavailable' in outcome)
        return new ApiError('pet_unavailable', `Pet ${outcome.unavailable.petId} is ${outcome.unavailable.status}, not available`, replayed)
      return new ApiError(
        'idempotency_key_reused',
        `This Idempotency-Key was used in the last ${idempotencyKeyHours} hours for a request with another body: use a new key for a new request`,
      )
    },

    getOrder(request, _reply, answer) {
      return andThen(orders.find(request.params.orderId, scopeOf(request)), (order) =>
        order === undefined ? new ApiError('not_found', `Order ${request.params.orderId} not found`) : answer(200, order),
      )
    },

    // (a page of orders is of the store and the key's view alone: tagged by the revision of the orders it sees)
    listOrders: fromStoreAlone((request, _reply, answer) => {
      const { limit, status, after } = request.query
      return andThen(orders.list({ scope: scopeOf(request), limit: limit + 1, status, after }), (items) => {
        const { page, headers } = pageOf(items, { url: ordersUrl, limit, status })
        return answer(200, page, headers)
      })
    }, ordersSeen),

    async updateOrder(request, reply, answer) {
      const { orderId } = request.params
      const target = request.body.status
      // (If-Match: judged on the order as this request's getOrder would show it, in the change's transaction)
      const outcome = await orders.update(orderId, target, scopeOf(request), ifMatchOf(request, reply))
      if ('moved' in outcome) return answer(200, outcome.moved)
      if ('missing' in outcome) return new ApiError('not_found', `Order ${orderId} not found`)
      // (the field is there: only a request with one can be stale)
      if ('stale' in outcome) return new ApiError('precondition_failed', ifMatchMissed(request.headers['if-match']!, request.apiVersion, `order ${orderId}`))
      return new ApiError('invalid_transition', `Order ${orderId} is ${outcome.stuck.status}: only a placed order can become ${target}`)
    },
  }
}
