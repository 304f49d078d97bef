import { subscriptionRefusal } from '../auth/access.js'
import { ApiError } from '../core/errors.js'
import { andThen } from '../core/maybe-async.js'
import type { HandlersOf } from '../http/handlers.js'
import { pageOf } from '../http/pagination.js'
import type { StoredDelivery, WebhookRepository } from './repository.js'
import { newSecret } from './signing.js'
import { parseUrl, type Resolve, resolveTarget, systemResolve, type TargetPolicy, TargetRefused } from './target.js'

export interface WebhookHandlerOptions {
  policy: TargetPolicy
  /** WEBHOOK_MAX_PER_KEY */
  maxPerKey: number
  /** WEBHOOK_SECRET_OVERLAP_S, in ms */
  secretOverlapMs: number
  /** the URL of a subscription (the Location of a 201) and of its deliveries (for their next page), from the spec */
  webhookUrl: (webhookId: number) => string
  deliveriesUrl: (webhookId: number) => string
  /** a delivery was made due: look for it now */
  dueNow: () => void
  /** the roles a key needs to receive an event of `type` (openapi.yaml: its x-roles) */
  eventRoles: (type: string) => readonly string[]
  /** Retry-After of a 503 (the contract's x-service.limits) */
  retryAfterSeconds: number
  /** what an event's id begins with (the contract's x-service.events.idPrefix) */
  eventIdPrefix: string
  resolve?: Resolve
}

export type WebhookOperation =
  'createWebhook' | 'listWebhooks' | 'getWebhook' | 'deleteWebhook' | 'rotateWebhookSecret' | 'enableWebhook' | 'listWebhookDeliveries' | 'redeliverWebhook'

const notFound = (webhookId: number) => new ApiError('not_found', `Webhook ${webhookId} not found`)

/** The webhook subscriptions of openapi.yaml (experimental): each request sees only those of
 * its own API key (its principal). Reads answer at once when the repository does. */
export function webhookHandlers(
  webhooks: WebhookRepository,
  {
    policy,
    maxPerKey,
    secretOverlapMs,
    webhookUrl,
    deliveriesUrl,
    dueNow,
    eventRoles,
    retryAfterSeconds,
    eventIdPrefix,
    resolve = systemResolve,
  }: WebhookHandlerOptions,
): HandlersOf<WebhookOperation> {
  /** Undefined for a URL events may be sent to, or the 422 that says why not; a resolver that
   * cannot answer now is a 503. */
  async function targetRefusal(url: string) {
    try {
      await resolveTarget(url, policy, resolve)
      return undefined
    } catch (error) {
      if (error instanceof TargetRefused) return new ApiError('webhook_url_not_allowed', error.message)
      return new ApiError('unavailable', 'The host of this URL cannot be resolved for now: try again later', { 'Retry-After': String(retryAfterSeconds) })
    }
  }

  const shown = (delivery: StoredDelivery) => ({ ...delivery, eventId: `${eventIdPrefix}${delivery.eventId}` })

  return {
    async createWebhook(request, _reply, answer) {
      try {
        parseUrl(request.body.url)
      } catch (error) {
        return new ApiError('invalid_request', `body/url: ${(error as Error).message}`)
      }
      const refusal = subscriptionRefusal(request.roles, request.body.events, eventRoles) ?? (await targetRefusal(request.body.url))
      if (refusal !== undefined) return refusal
      const secret = newSecret()
      const outcome = await webhooks.create(request.principal, request.body, secret, maxPerKey, request.apiVersion)
      if ('limitReached' in outcome) {
        return new ApiError('webhook_limit_reached', `This API key holds ${outcome.limitReached} webhook subscriptions, the most it may: delete one first`)
      }
      return answer(201, { ...outcome.created, secret }, { Location: webhookUrl(outcome.created.id) })
    },

    listWebhooks: (request, _reply, answer) => andThen(webhooks.list(request.principal), (page) => answer(200, page)),

    getWebhook: (request, _reply, answer) =>
      andThen(webhooks.find(request.principal, request.params.webhookId), (webhook) =>
        webhook === undefined ? notFound(request.params.webhookId) : answer(200, webhook),
      ),

    async deleteWebhook(request, _reply, answer) {
      if (!(await webhooks.remove(request.principal, request.params.webhookId))) return notFound(request.params.webhookId)
      return answer(204, undefined)
    },

    async rotateWebhookSecret(request, _reply, answer) {
      const secret = newSecret()
      const rotated = await webhooks.rotate(request.principal, request.params.webhookId, secret, secretOverlapMs)
      if (rotated === undefined) return notFound(request.params.webhookId)
      return answer(200, { secret, ...rotated })
    },

    async enableWebhook(request, _reply, answer) {
      const enabled = await webhooks.enable(request.principal, request.params.webhookId)
      return enabled === undefined ? notFound(request.params.webhookId) : answer(200, enabled)
    },

    listWebhookDeliveries(request, _reply, answer) {
      const { webhookId } = request.params
      const { limit, after } = request.query
      return andThen(webhooks.deliveries(request.principal, webhookId, { limit: limit + 1, after }), (items) => {
        if (items === undefined) return notFound(webhookId)
        const { page, headers } = pageOf(items, { url: deliveriesUrl(webhookId), limit })
        return answer(200, page.map(shown), headers)
      })
    },

    async redeliverWebhook(request, _reply, answer) {
      const { webhookId, deliveryId } = request.params
      const delivery = await webhooks.redeliver(request.principal, webhookId, deliveryId)
      if (delivery === undefined) return new ApiError('not_found', `Delivery ${deliveryId} of webhook ${webhookId} not found`)
      dueNow()
      return answer(202, shown(delivery))
    },
  }
}
