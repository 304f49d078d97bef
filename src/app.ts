import { readFileSync } from 'node:fs'
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyReply, type FastifyServerOptions, LogController } from 'fastify'
import { anyOf, bearerAuth, staticKey, staticKeys, staticPrincipals, storedKeys } from './auth/bearer.js'
import { principalRoles } from './auth/principals.js'
import { type Config, ConfigError } from './config.js'
import { generatedCompilers } from './contract/compilers.js'
import docs, { docsPath } from './contract/docs.js'
import { lifecycleOf, lifecycleOfOperations, retirementOfOperations } from './contract/lifecycle.js'
import contractPlugin from './contract/plugin.js'
import { type Contract, loadContract } from './contract/spec.js'
import { ApiError } from './errors.js'
import { guardServer, openConnections, protectiveHeaders, serverOptions } from './http/connections.js'
import { registerCors } from './http/cors.js'
import { errorHandler, notFoundHandler, unavailableLog } from './http/error-handler.js'
import { jsonBodyParser, otherMediaTypes } from './http/json-body.js'
import { redactUrl } from './http/redact.js'
import { requestHooks } from './http/request-hooks.js'
import { RateLimits } from './limits/rate-limit.js'
import health from './ops/health.js'
import metrics, { observeUnrouted } from './ops/metrics.js'
import { orderHandlers, orderScope } from './orders/handlers.js'
import { changelogPath } from './paths.js'
import { petHandlers } from './pets/handlers.js'
import { openStorage, type Storage } from './storage/index.js'
import { startDispatcher } from './webhooks/dispatcher.js'
import { eventWithheld } from './webhooks/entitled.js'
import { webhookHandlers } from './webhooks/handlers.js'
import { maxRetryDelayMs } from './webhooks/outcome.js'

/** The longest a start waits for Redis to connect; past it the server starts, counting alone. */
const redisConnectBoundMs = 2_000

/** Request bodies above this size are refused with 413 (openapi.yaml says 16 KiB). */
const bodyLimit = 16 * 1024

export interface AppOptions extends Omit<Config, 'PORT' | 'HOST' | 'METRICS_PORT' | 'METRICS_HOST'> {
  /** pino options beside the level, e.g. a destination stream */
  logger?: Exclude<FastifyServerOptions['logger'], boolean>
  /** the compilers of validators and serializers: by default those in generated/ */
  schemaController?: FastifyServerOptions['schemaController']
  /** the contract to serve: by default openapi.yaml */
  contract?: Contract
  /** the time in ms since the epoch, by default Date.now: when sunsets and brownouts begin */
  clock?: () => number
}

/** One access-log line per request, when it is answered ("request completed", with the
 * method, URL, status and time); Fastify's default adds a second line as each request arrives. */
class AccessLog extends LogController {
  override incomingRequest() {}
}

declare module 'fastify' {
  interface FastifyInstance {
    storage: Storage
    contract: Contract
    /** the rate limits; their `refused` event fires for every 429 (see RateLimitEvents) */
    rateLimits: RateLimits
  }
}

/** The service as a Fastify instance, ready to listen or to be injected into. Closing it
 * closes its storage. */
export async function buildApp(options: AppOptions) {
  const contract = options.contract ?? loadContract()
  const storage = await openStorage(options.DATABASE_URL, {
    poolSize: options.DATABASE_POOL_SIZE,
    readConnections: options.DATABASE_READ_CONNECTIONS,
    timeoutMs: options.DATABASE_TIMEOUT_MS,
    webhookRetryPeriodMs: options.WEBHOOK_RETRY_PERIOD_S * 1000,
  })
  try {
    return await assemble(contract, storage, options)
  } catch (error) {
    await storage.close()
    throw error
  }
}

async function assemble(contract: Contract, storage: Storage, options: AppOptions) {
  const apiKeys = options.API_KEYS.map(staticKey)
  for (const { roles = [] } of apiKeys) {
    const unknown = contract.roles.unknown(roles)
    if (unknown.length > 0) {
      throw new ConfigError(`invalid configuration: API_KEYS names the role ${unknown.join(', ')}, which is not one of ${[...contract.roles.catalogue.keys()].join(', ')}`)
    }
  }
  const secrets = apiKeys.map(({ key }) => key)
  const lifecycle = lifecycleOfOperations(contract, docsPath(contract))
  // the access-log line of a request of a deprecated, experimental or beta operation says so
  const lifecycleLabels = new Map([...contract.operations.values()].map((operation) => [operation.id, lifecycleOf(operation)]))
  const lifecycleField = (reply: FastifyReply) => {
    const label = lifecycleLabels.get((reply.request.routeOptions.schema as { operationId?: string } | undefined)?.operationId as string)
    return label === undefined ? undefined : { lifecycle: label }
  }
  const app = Fastify({
    logger: {
      level: options.LOG_LEVEL,
      // the key is the one secret a request carries; it is never written down
      redact: { paths: ['req.headers.authorization'], censor: '[redacted]' },
      // the access-log line names the request it answers, without a credential it may carry
      serializers: {
        // (typed partial by Fastify, but a reply always has its request)
        res: (reply) => ({ statusCode: reply.statusCode, method: reply.request!.method, url: redactUrl(reply.request!.url, secrets), ...lifecycleField(reply as FastifyReply) }),
      },
      ...options.logger,
    },
    logController: new AccessLog(),
    // logs off, a request's logger would write nothing: it needs no child logger of its own
    // (one, with its request id, costs a µs per request)
    ...(options.LOG_LEVEL === 'silent' && { childLoggerFactory: (logger: FastifyBaseLogger) => logger }),
    ...serverOptions(options),
    bodyLimit,
    // a path parameter too long for the router would be a 404 without a word; let validation say why
    routerOptions: { maxParamLength: 16 * 1024 },
    // errors Fastify meets before routing (a malformed URL) leave through the same door as all
    // others, with the headers the request's operation and every answer carry
    frameworkErrors: (error, request, reply) => {
      const operation = contract.operationAt(request.method, request.url.split('?')[0]!)
      reply.headers({ ...protectiveHeaders, ...(operation && lifecycle.get(operation)) })
      observeUnrouted(reply)
      return errorHandler(error, request, reply)
    },
    // requests that arrive while the server drains are answered, not refused with a 503
    return503OnClosing: false,
    // HEAD works wherever GET does (RFC 9110)
    exposeHeadRoutes: true,
    // the client's address (for its rate limit) from X-Forwarded-For, when set by these proxies only
    trustProxy: options.TRUST_PROXY.length > 0 ? options.TRUST_PROXY : false,
    schemaController: options.schemaController ?? generatedCompilers(),
  })
  guardServer(app.server, app.log, options)
  app.decorate('connections', openConnections(app.server))
  app.decorate('storage', storage)
  app.decorate('contract', contract)
  app.decorateRequest('principal', '')
  // (set by authentication with the key's own set; none on operations that need no key)
  app.decorateRequest('roles', null as unknown as ReadonlySet<string>)
  app.decorate('reportUnavailable', unavailableLog(app.log))
  const rateLimits = await RateLimits.open(options, app.log, redisConnectBoundMs)
  app.decorate('rateLimits', rateLimits)
  app.addHook('onClose', () => {
    rateLimits.close()
    return storage.close()
  })

  // JSON only, read by one parser that knows the limits: any other body is a 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', jsonBodyParser({ bodyLimit, idleTimeoutMs: options.BODY_IDLE_TIMEOUT_MS }))
  app.addContentTypeParser('*', otherMediaTypes)
  requestHooks(app, contract)
  // operating it: request metrics (before any route: each route counts its own requests)
  await app.register(metrics)
  rateLimits.on('refused', (policy) => app.metrics.rateLimitRefused(policy))

  // the events the changes record, sent to their subscriptions (src/webhooks/)
  const webhookPolicy = { allowHttp: options.WEBHOOK_ALLOW_HTTP, allowPrivate: options.WEBHOOK_ALLOW_PRIVATE }
  const rolesNow = principalRoles(staticPrincipals(apiKeys, contract.roles.defaults), storage.keys)
  const dispatcher = startDispatcher(
    storage.deliveries,
    {
      policy: webhookPolicy,
      timeoutMs: options.WEBHOOK_TIMEOUT_MS,
      retryBaseMs: options.WEBHOOK_RETRY_BASE_MS,
      retryAfterMaxMs: options.WEBHOOK_RETRY_AFTER_MAX_S * 1000,
      pollMs: options.WEBHOOK_POLL_MS,
      concurrency: options.WEBHOOK_CONCURRENCY,
      perSubscription: options.WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION,
      circuit: {
        failures: options.WEBHOOK_CIRCUIT_FAILURES,
        openMs: options.WEBHOOK_CIRCUIT_OPEN_MS,
        maxOpenMs: maxRetryDelayMs,
        disableAfterMs: options.WEBHOOK_DISABLE_AFTER_S * 1000,
      },
      behindMs: options.WEBHOOK_BEHIND_S * 1000,
      withheld: (owner, type) => eventWithheld(owner, type, rolesNow, contract.roles.ofEvent(type)),
      disable: (subscriptionId, reason) => storage.webhooks.disable(subscriptionId, reason),
    },
    app.log,
    app.metrics.webhooks,
  )
  // (onClose hooks run last registered first: it stops before the storage it writes to closes)
  app.addHook('onClose', () => dispatcher.close())

  const notFound = notFoundHandler(contract)
  // A request no operation serves is a 404 or 405, whatever Fastify finds wrong with its body
  // (an unreadable request, our own ApiError, stays what it is). No route counts it: it is
  // counted here.
  app.setErrorHandler<FastifyError | ApiError>((error, request, reply) => {
    if (!request.is404) return errorHandler(error, request, reply)
    observeUnrouted(reply)
    return error instanceof ApiError ? errorHandler(error, request, reply) : notFound(request, reply)
  })
  app.setNotFoundHandler((request, reply) => {
    observeUnrouted(reply)
    return notFound(request, reply)
  })
  await registerCors(app, contract, options.CORS_ORIGINS, notFound)

  // health probes (src/ops/)
  await app.register(health, { timeoutMs: options.DATABASE_TIMEOUT_MS, logLevel: options.LOG_LEVEL, degraded: dispatcher.degraded })

  await app.register(docs, { contract, changelog: readFileSync(changelogPath, 'utf8') })
  await app.register(contractPlugin, {
    contract,
    handlers: {
      ...petHandlers(storage.pets, { petsUrl: contract.urlOf('listPets'), petUrl: (petId) => contract.urlOf('getPet', { petId }) }),
      ...orderHandlers(storage.orders, {
        ordersUrl: contract.urlOf('listOrders'),
        orderUrl: (orderId) => contract.urlOf('getOrder', { orderId }),
        scopeOf: orderScope(contract.roles.seeEveryOrder),
      }),
      ...webhookHandlers(storage.webhooks, {
        policy: webhookPolicy,
        maxPerKey: options.WEBHOOK_MAX_PER_KEY,
        secretOverlapMs: options.WEBHOOK_SECRET_OVERLAP_S * 1000,
        webhookUrl: (webhookId) => contract.urlOf('getWebhook', { webhookId }),
        deliveriesUrl: (webhookId) => contract.urlOf('listWebhookDeliveries', { webhookId }),
        dueNow: dispatcher.wake,
        eventRoles: contract.roles.ofEvent,
      }),
    },
    authenticate: rateLimits.around(bearerAuth(anyOf(staticKeys(apiKeys, contract.roles.defaults), storedKeys(storage.keys)))),
    anonymous: rateLimits.anonymous,
    lifecycle,
    retirements: retirementOfOperations(contract),
    clock: options.clock ?? Date.now,
    callsOf(operation) {
      const label = lifecycleOf(operation)
      if (label === undefined) return undefined
      const counted = app.metrics.lifecycleRequests(operation.id, label)
      return (principal) => {
        counted()
        storage.usage.note(principal, operation.id)
      }
    },
  })
  return app
}
