import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { RateLimits, type RateLimitSettings } from './rate-limit.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** the rate limits; their `refused` event fires for every 429 (see RateLimitEvents) */
    rateLimits: RateLimits
  }
}

/** The longest a start waits for Redis to connect; past it the server starts, counting alone. */
const redisConnectBoundMs = 2_000

/** Rate limits per API key and per client address (in Redis when REDIS_URL is set), counted
 * in the metrics as they refuse. */
async function rateLimitsPlugin(app: FastifyInstance, settings: RateLimitSettings) {
  const rateLimits = await RateLimits.open(settings, app.log, redisConnectBoundMs)
  app.decorate('rateLimits', rateLimits)
  rateLimits.on('refused', (policy) => app.metrics.rateLimitRefused(policy))
  app.addHook('onClose', () => rateLimits.close())
}

export default fp(rateLimitsPlugin, { name: 'rate-limits', fastify: '5.x', dependencies: ['metrics'] })
