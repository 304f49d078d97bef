import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { HandlersOf } from '../http/handlers.js'
import { type OrderOperation, orderHandlers } from './handlers.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** the handlers of the store's order operations, for the operations plugin */
    orderOperations: HandlersOf<OrderOperation>
  }
}

/** The store's orders: their operations, on the store's orders, each seen by the key that placed
 * it (or staff), at the contract's URLs. */
async function ordersPlugin(app: FastifyInstance) {
  const { contract, storage, access } = app
  app.decorate(
    'orderOperations',
    orderHandlers(storage.orders, {
      ordersUrl: contract.urlOf('listOrders'),
      orderUrl: (orderId) => contract.urlOf('getOrder', { orderId }),
      scopeOf: access.orderScope,
      idempotencyKeyHours: contract.service.limits.idempotencyKeyHours,
    }),
  )
}

export default fp(ordersPlugin, { name: 'orders', fastify: '5.x', dependencies: ['storage', 'access'], decorators: { fastify: ['contract'] } })
