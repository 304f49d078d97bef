import { hash } from 'node:crypto'
import type { HandlersOf } from '../contract/operations.js'
import { ApiError } from '../core/errors.js'
import { pageOf } from '../http/pagination.js'
import { andThen } from '../core/maybe-async.js'
import type { FastifyRequest } from 'fastify'
import { allOrders, type OrderRepository, type OrderScope } from '../storage/orders.js'

/** A body as one text whatever the order of its properties: what "the same body" means for an
 * Idempotency-Key. (The bodies are flat objects, checked by their schema already.) */
const fingerprint = (body: object) => hash('sha256', JSON.stringify(body, Object.keys(body).sort()))

/** Whose orders a request sees: every order for a key holding one of `staffRoles` (the roles
 * openapi.yaml marks `seesEveryOrder`), else those of its own key. */
export function orderScope(staffRoles: readonly string[]): (request: FastifyRequest) => OrderScope {
  return (request) => {
    for (const role of staffRoles) if (request.roles.has(role)) return allOrders
    return request.principal
  }
}

/** The store's orders (experimental in openapi.yaml), which move a pet through its statuses.
 * Each belongs to the key that placed it (its principal). Reads answer at once when the
 * repository does. */
export function orderHandlers(
  orders: OrderRepository,
  /** the URL of the list (for its next page) and that of an order (the Location of a 201), from
   * the spec; whose orders a request sees (orderScope) */
  { ordersUrl, orderUrl, scopeOf }: { ordersUrl: string; orderUrl: (orderId: number) => string; scopeOf: (request: FastifyRequest) => OrderScope },
): HandlersOf<'placeOrder' | 'getOrder' | 'listOrders' | 'updateOrder'> {
  return {
    async placeOrder(request, reply) {
      const key = request.headers['idempotency-key']
      let outcome = await orders.place(
        request.body,
        request.principal,
        key === undefined ? undefined : { principal: request.principal, key, fingerprint: fingerprint(request.body) },
      )
      // (a retry with the key gets the outcome of the first request, answered the same way, and says so)
      if ('replayed' in outcome) {
        reply.header('Idempotent-Replayed', 'true')
        outcome = outcome.replayed
      }
      if ('placed' in outcome) {
        reply.header('Location', orderUrl(outcome.placed.id)).code(201)
        return outcome.placed
      }
      if ('missing' in outcome) throw new ApiError('not_found', `Pet ${outcome.missing.petId} not found`)
      if ('unavailable' in outcome) {
        throw new ApiError('pet_unavailable', `Pet ${outcome.unavailable.petId} is ${outcome.unavailable.status}, not available`)
      }
      throw new ApiError(
        'idempotency_key_reused',
        'This Idempotency-Key was used in the last 24 hours for a request with another body: use a new key for a new request',
      )
    },

    getOrder(request) {
      return andThen(orders.find(request.params.orderId, scopeOf(request)), (order) => {
        if (order === undefined) throw new ApiError('not_found', `Order ${request.params.orderId} not found`)
        return order
      })
    },

    listOrders(request, reply) {
      const { limit, status, after } = request.query
      return andThen(orders.list({ scope: scopeOf(request), limit: limit + 1, status, after }), (items) => {
        const { page, link } = pageOf(items, { url: ordersUrl, limit, status })
        if (link !== undefined) reply.header('Link', link)
        return page
      })
    },

    async updateOrder(request) {
      const { orderId } = request.params
      const target = request.body.status
      const outcome = await orders.update(orderId, target, scopeOf(request))
      if ('moved' in outcome) return outcome.moved
      if ('missing' in outcome) throw new ApiError('not_found', `Order ${orderId} not found`)
      throw new ApiError('invalid_transition', `Order ${orderId} is ${outcome.stuck.status}: only a placed order can become ${target}`)
    },
  }
}
