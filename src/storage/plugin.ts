import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Storage } from './index.js'
import { registerStorageMetrics } from './metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    storage: Storage
  }
}

/** What the service keeps, open already (a store that cannot open stops the start before the
 * app is built): its repositories for every concern, its metrics, and its close with the app's
 * (the last onClose to run: what writes to it stops first). */
async function storagePlugin(app: FastifyInstance, { storage }: { storage: Storage }) {
  app.decorate('storage', storage)
  registerStorageMetrics(app.metrics.registry, storage.stats)
  app.addHook('onClose', () => storage.close())
}

export default fp(storagePlugin, { name: 'storage', fastify: '5.x', dependencies: ['metrics'] })
