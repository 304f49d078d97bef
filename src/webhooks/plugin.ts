import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { eventWithheld } from '../auth/access.js'
import type { Config } from '../core/config.js'
import type { HandlersOf } from '../http/handlers.js'
import type { TraceApi } from '../ops/tracing.js'
import { attemptSpans } from './attempt-spans.js'
import { type DispatcherOptions, startDispatcher } from './dispatcher.js'
import { type WebhookOperation, webhookHandlers } from './handlers.js'
import { webhookMetrics } from './metrics.js'
import { maxRetryDelayMs } from './outcome.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** the handlers of the webhook operations, for the operations plugin */
    webhookOperations: HandlersOf<WebhookOperation>
    /** why the webhook deliveries are behind, or undefined (for /readyz) */
    webhooksBehind: () => string | undefined
  }
}

export type WebhookSettings = Pick<
  Config,
  | 'WEBHOOK_ALLOW_HTTP'
  | 'WEBHOOK_ALLOW_PRIVATE'
  | 'WEBHOOK_TIMEOUT_MS'
  | 'WEBHOOK_RETRY_BASE_MS'
  | 'WEBHOOK_RETRY_AFTER_MAX_S'
  | 'WEBHOOK_POLL_MS'
  | 'WEBHOOK_CONCURRENCY'
  | 'WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION'
  | 'WEBHOOK_CIRCUIT_FAILURES'
  | 'WEBHOOK_CIRCUIT_OPEN_MS'
  | 'WEBHOOK_DISABLE_AFTER_S'
  | 'WEBHOOK_BEHIND_S'
  | 'WEBHOOK_MAX_PER_KEY'
  | 'WEBHOOK_SECRET_OVERLAP_S'
>

/**
 * Events: the subscriptions' operations, and the dispatcher that sends the events the changes
 * record to them (src/webhooks/), each only while the subscription's key may receive it. The
 * dispatcher stops before the storage it writes to closes (onClose hooks run last registered
 * first).
 */
async function webhooksPlugin(app: FastifyInstance, settings: WebhookSettings & Pick<DispatcherOptions, 'show'> & { tracing?: TraceApi | undefined }) {
  const { contract, storage, access } = app
  const { limits } = contract.service
  const policy = { allowHttp: settings.WEBHOOK_ALLOW_HTTP, allowPrivate: settings.WEBHOOK_ALLOW_PRIVATE }
  const dispatcher = startDispatcher(
    storage.deliveries,
    {
      policy,
      timeoutMs: settings.WEBHOOK_TIMEOUT_MS,
      retryBaseMs: settings.WEBHOOK_RETRY_BASE_MS,
      retryAfterMaxMs: settings.WEBHOOK_RETRY_AFTER_MAX_S * 1000,
      pollMs: settings.WEBHOOK_POLL_MS,
      concurrency: settings.WEBHOOK_CONCURRENCY,
      perSubscription: settings.WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION,
      circuit: {
        failures: settings.WEBHOOK_CIRCUIT_FAILURES,
        openMs: settings.WEBHOOK_CIRCUIT_OPEN_MS,
        maxOpenMs: maxRetryDelayMs,
        disableAfterMs: settings.WEBHOOK_DISABLE_AFTER_S * 1000,
      },
      behindMs: settings.WEBHOOK_BEHIND_S * 1000,
      keepFinishedMs: limits.finishedDeliveriesKeptDays * 86_400_000,
      lastErrorLength: limits.lastErrorLength,
      eventIdPrefix: contract.service.eventIdPrefix,
      show: settings.show,
      withheld: (owner, type) => eventWithheld(owner, type, access.rolesNow, contract.rolesOfEvent(type), limits.lastErrorLength),
      disable: (subscriptionId, reason) =>
        storage.webhooks.disable(subscriptionId, reason, `not sent: the subscription was disabled (${reason})`.slice(0, limits.lastErrorLength)),
      ...(settings.tracing && { traceAttempt: attemptSpans(settings.tracing) }),
    },
    app.log,
    webhookMetrics(app.metrics.registry),
  )
  app.addHook('onClose', () => dispatcher.close())
  app.decorate('webhooksBehind', dispatcher.degraded)
  app.decorate(
    'webhookOperations',
    webhookHandlers(storage.webhooks, {
      policy,
      maxPerKey: settings.WEBHOOK_MAX_PER_KEY,
      secretOverlapMs: settings.WEBHOOK_SECRET_OVERLAP_S * 1000,
      webhookUrl: (webhookId) => contract.urlOf('getWebhook', { webhookId }),
      deliveriesUrl: (webhookId) => contract.urlOf('listWebhookDeliveries', { webhookId }),
      dueNow: dispatcher.wake,
      eventRoles: contract.rolesOfEvent,
      retryAfterSeconds: limits.unavailableRetryAfterSeconds,
      eventIdPrefix: contract.service.eventIdPrefix,
    }),
  )
}

export default fp(webhooksPlugin, { name: 'webhooks', fastify: '5.x', dependencies: ['storage', 'access', 'metrics'], decorators: { fastify: ['contract'] } })
