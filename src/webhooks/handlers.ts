import type { HandlersOf } from '../contract/operations.js'
import { lackingRoles } from '../contract/roles.js'
import { ApiError, retryAfterSeconds } from '../errors.js'
import { pageOf } from '../http/pagination.js'
import { andThen } from '../maybe-async.js'
import type { WebhookRepository } from '../storage/webhooks.js'
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
  resolve?: Resolve
}

const notFound = (webhookId: number) => new ApiError('not_found', `Webhook ${webhookId} not found`)

/** The webhook subscriptions of openapi.yaml (experimental): each request sees only those of
 * its own API key (its principal). Reads answer at once when the repository does. */
export function webhookHandlers(
  webhooks: WebhookRepository,
  { policy, maxPerKey, secretOverlapMs, webhookUrl, deliveriesUrl, dueNow, eventRoles, resolve = systemResolve }: WebhookHandlerOptions,
): HandlersOf<
  'createWebhook' | 'listWebhooks' | 'getWebhook' | 'deleteWebhook' | 'rotateWebhookSecret' | 'enableWebhook' | 'listWebhookDeliveries' | 'redeliverWebhook'
> {
  return {
    async createWebhook(request, reply) {
      try {
        parseUrl(request.body.url)
      } catch (error) {
        throw new ApiError('invalid_request', `body/url: ${(error as Error).message}`)
      }
      for (const type of request.body.events) {
        const lacking = lackingRoles(request.roles, eventRoles(type))
        if (lacking.length > 0) throw new ApiError('forbidden', `This API key lacks the role ${lacking.join(' and ')}, which the event ${type} needs`)
      }
      await checkTarget(request.body.url, policy, resolve)
      const secret = newSecret()
      const outcome = await webhooks.create(request.principal, request.body, secret, maxPerKey)
      if ('limitReached' in outcome) {
        throw new ApiError('webhook_limit_reached', `This API key holds ${outcome.limitReached} webhook subscriptions, the most it may: delete one first`)
      }
      reply.header('Location', webhookUrl(outcome.created.id)).code(201)
      return { ...outcome.created, secret }
    },

    listWebhooks: (request) => webhooks.list(request.principal),

    getWebhook: (request) =>
      andThen(webhooks.find(request.principal, request.params.webhookId), (webhook) => {
        if (webhook === undefined) throw notFound(request.params.webhookId)
        return webhook
      }),

    async deleteWebhook(request, reply) {
      if (!(await webhooks.remove(request.principal, request.params.webhookId))) throw notFound(request.params.webhookId)
      reply.code(204)
    },

    async rotateWebhookSecret(request) {
      const secret = newSecret()
      const rotated = await webhooks.rotate(request.principal, request.params.webhookId, secret, secretOverlapMs)
      if (rotated === undefined) throw notFound(request.params.webhookId)
      return { secret, ...rotated }
    },

    async enableWebhook(request) {
      const enabled = await webhooks.enable(request.principal, request.params.webhookId)
      if (enabled === undefined) throw notFound(request.params.webhookId)
      return enabled
    },

    listWebhookDeliveries(request, reply) {
      const { webhookId } = request.params
      const { limit, after } = request.query
      return andThen(webhooks.deliveries(request.principal, webhookId, { limit: limit + 1, after }), (items) => {
        if (items === undefined) throw notFound(webhookId)
        const { page, link } = pageOf(items, { url: deliveriesUrl(webhookId), limit })
        if (link !== undefined) reply.header('Link', link)
        return page
      })
    },

    async redeliverWebhook(request, reply) {
      const { webhookId, deliveryId } = request.params
      const delivery = await webhooks.redeliver(request.principal, webhookId, deliveryId)
      if (delivery === undefined) throw new ApiError('not_found', `Delivery ${deliveryId} of webhook ${webhookId} not found`)
      dueNow()
      reply.code(202)
      return delivery
    },
  }
}

/** A URL events may be sent to, or the 422 that says why not; a resolver that cannot answer now is a 503. */
async function checkTarget(url: string, policy: TargetPolicy, resolve: Resolve) {
  try {
    await resolveTarget(url, policy, resolve)
  } catch (error) {
    if (error instanceof TargetRefused) throw new ApiError('webhook_url_not_allowed', error.message)
    throw new ApiError('unavailable', 'The host of this URL cannot be resolved for now: try again later', {
      'Retry-After': String(retryAfterSeconds),
    })
  }
}
