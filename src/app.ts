import { readFileSync } from 'node:fs'
import Fastify, { type FastifyBaseLogger, type FastifyReply, type FastifyServerOptions, LogController } from 'fastify'
import { refuseUnknownRoles } from './auth/access.js'
import access from './auth/plugin.js'
import { type StaticKey, staticKey } from './auth/bearer.js'
import type { Config } from './core/config.js'
import categories from './categories/plugin.js'
import { loadContracts } from './contract/load.js'
import type { Contract } from './contract/model.js'
import type { EventFields, EventType } from './events/outbox.js'
import { servedTogether } from './contract/served.js'
import { changelogPath } from './core/paths.js'
import { sharedReadOf } from './core/shared-read.js'
import docs from './docs/plugin.js'
import { generatedCompilers } from './http/compilers.js'
import type { OperationHandlers } from './http/handlers.js'
import { protectiveHeaders, serverOptions } from './http/connections.js'
import cors from './http/cors.js'
import { errorHandler } from './http/error-handler.js'
import { lifecycleHeaders } from './http/lifecycle-headers.js'
import { keptAnswers } from './http/kept-answers.js'
import operations, { type KeptAnswer } from './http/operations.js'
import http from './http/plugin.js'
import { redactUrl } from './http/redact.js'
import rateLimits from './limits/plugin.js'
import health from './ops/health.js'
import { lifecycleCalls } from './ops/lifecycle-calls.js'
import metrics from './ops/metrics.js'
import requestSpans, { traceFields } from './ops/request-spans.js'
import { statementSpans } from './ops/statement-spans.js'
import { registerTraceMetrics } from './ops/trace-metrics.js'
import type { TraceApi } from './ops/tracing.js'
import { orderEvents } from './orders/events.js'
import orders from './orders/plugin.js'
import { petEvents } from './pets/events.js'
import pets from './pets/plugin.js'
import storagePlugin, { openStorage, type Storage, storedSchemas } from './repositories.js'
import { changes, derivedSchemas } from './versions/index.js'
import { type AnyHandler, deriveVersions, type Versions } from './versions/derive.js'
import { recordedDifferences } from './versions/recorded.js'
import webhooks from './webhooks/plugin.js'
import { refuseUnmapped } from './storage/schema-check.js'

export interface AppOptions extends Omit<Config, 'PORT' | 'HOST' | 'METRICS_PORT' | 'METRICS_HOST'> {
  /** pino options beside the level, e.g. a destination stream */
  logger?: Exclude<FastifyServerOptions['logger'], boolean>
  /** the compilers of validators and serializers: by default those in generated/ */
  schemaController?: FastifyServerOptions['schemaController']
  /** the contracts to serve, oldest first: by default those of contract/load.ts's specPaths */
  contracts?: readonly Contract[]
  /** a contract to serve in place of the one of its major version (a test's edited copy) */
  contract?: Contract
  /** the time in ms since the epoch, by default Date.now: when sunsets and brownouts begin */
  clock?: () => number
  /** tracing on (ops/tracing.ts startTracing): each request a span, each statement its child */
  tracing?: TraceApi
}

declare module 'fastify' {
  interface FastifyInstance {
    /** the contracts the app serves, one per major version, oldest first (src/contract/model.ts) */
    contracts: readonly Contract[]
    /** the newest of them: what the handlers are written against, whose x-service it keeps */
    contract: Contract
  }
}

/** The service as a Fastify instance, ready to listen or to be injected into. Closing it
 * closes its storage. */
export async function buildApp(options: AppOptions) {
  const contracts = servedTogether(
    (options.contracts ?? loadContracts()).map((served) => (options.contract?.version[0] === served.version[0] ? options.contract : served)),
  )
  const contract = contracts.at(-1)!
  // handlers are written once, against the newest version; each older one is derived from them
  // by the declared changes between the two (src/versions/). Derived first: a start that cannot
  // serve an older version names the uncovered difference and the change to write, as
  // check:breaking does, before what that difference leaves unmapped in the store.
  const versions = deriveVersions(contracts, changes, recordedDifferences(contracts))
  refuseUnmapped(
    contracts.map((served) => ({ ...served, derived: derivedSchemas(served.version[0], contract.version[0]) })),
    storedSchemas,
  )
  const apiKeys = options.API_KEYS.map(staticKey)
  refuseUnknownRoles(apiKeys, contract.roles)
  const storage = await openStorage(options.DATABASE_URL, {
    poolSize: options.DATABASE_POOL_SIZE,
    readConnections: options.DATABASE_READ_CONNECTIONS,
    timeoutMs: options.DATABASE_TIMEOUT_MS,
    webhookRetryPeriodMs: options.WEBHOOK_RETRY_PERIOD_S * 1000,
    idempotencyWindowMs: contract.service.limits.idempotencyKeyHours * 3_600_000,
    ...(options.tracing && { watch: statementSpans(options.tracing), trace: { now: options.tracing.traceparent, keep: options.tracing.bind } }),
  })
  try {
    return await assemble(contracts, versions, storage, options, apiKeys)
  } catch (error) {
    await storage.close()
    throw error
  }
}

/** The plugins of the service, in order: each feature declares what it needs of those before it. */
async function assemble(contracts: readonly Contract[], versions: Versions, storage: Storage, options: AppOptions, apiKeys: readonly StaticKey[]) {
  const contract = contracts.at(-1)!
  const app = Fastify(fastifyOptions(contracts, options, apiKeys))
  app.decorate('contracts', contracts)
  app.decorate('contract', contract)
  // tracing first: a request's span is active through every other hook
  if (options.tracing !== undefined) await app.register(requestSpans, { api: options.tracing })
  // operating it first: each route counts its own requests
  await app.register(metrics)
  if (options.tracing !== undefined) registerTraceMetrics(app.metrics.registry, options.tracing)
  await app.register(storagePlugin, { storage })
  await app.register(http, { ...options, bodyIdleTimeoutMs: options.BODY_IDLE_TIMEOUT_MS })
  await app.register(rateLimits, options)
  await app.register(access, { apiKeys })
  await app.register(cors, { origins: options.CORS_ORIGINS })
  const changelog = readFileSync(changelogPath, 'utf8')
  for (const served of contracts) await app.register(async (version) => version.register(docs, { contract: served, served: contracts, changelog }))
  await app.register(pets)
  await app.register(categories)
  await app.register(orders)
  // an event is recorded once, as its rows are stored; each subscription is sent it as its version shows it
  const newestEvents: Record<EventType, (fields: EventFields) => EventFields> = { ...petEvents, ...orderEvents }
  await app.register(webhooks, { ...options, show: (type, fields, major) => versions.showEvent(type, newestEvents[type](fields), major) })
  await app.register(health, { timeoutMs: options.DATABASE_TIMEOUT_MS, logLevel: options.LOG_LEVEL, degraded: app.webhooksBehind })
  const newest: OperationHandlers = { ...app.petOperations, ...app.categoryOperations, ...app.orderOperations, ...app.webhookOperations }
  // (asked of app.storage each time: a test may interleave a write with it; one read serves
  // every request of a turn that asks, whatever part each asks for, see shared-read.ts)
  const revision = sharedReadOf((parts) => app.storage.revisions(parts))
  // (one keeper for every version: the URL tells their answers apart)
  const kept = keptAnswers<KeptAnswer>()
  for (const served of contracts) {
    await app.register(operations, {
      contract: served,
      handlers: served === contract ? newest : versions.derive(newest as unknown as Record<string, AnyHandler>, served),
      guardOf: app.access.guardOf,
      clock: options.clock ?? Date.now,
      callsOf: lifecycleCalls(app.metrics, storage.usage, served.version[0]),
      revision,
      tagSecret: storage.tagSecret,
      kept,
    })
  }
  return app
}

/** One access-log line per request, when it is answered ("request completed", with the
 * method, URL, status and time); Fastify's default adds a second line as each request arrives. */
class AccessLog extends LogController {
  override incomingRequest() {}
}

/** Fastify's options: the log, the HTTP server's limits, the compilers from generated/, and the
 * way out of errors met before routing. */
function fastifyOptions(contracts: readonly Contract[], options: AppOptions, apiKeys: readonly StaticKey[]): FastifyServerOptions {
  const contract = contracts.at(-1)!
  const secrets = apiKeys.map(({ key }) => key)
  // the access-log line of a request of a deprecated, experimental or beta operation says so
  const lifecycleField = (reply: FastifyReply) => {
    const label = (reply.request.routeOptions.config as { lifecycle?: string } | undefined)?.lifecycle
    return label === undefined ? undefined : { lifecycle: label }
  }
  const lifecycle = new Map(contracts.flatMap((served) => [...served.operations.values()].map((operation) => [operation, lifecycleHeaders(operation, served)])))
  return {
    logger: {
      level: options.LOG_LEVEL,
      // the key is the one secret a request carries; it is never written down
      redact: { paths: ['req.headers.authorization'], censor: '[redacted]' },
      // the access-log line names the request it answers, without a credential it may carry
      serializers: {
        // (typed partial by Fastify, but a reply always has its request)
        res: (reply) => ({
          statusCode: reply.statusCode,
          method: reply.request!.method,
          url: redactUrl(reply.request!.url, secrets),
          ...lifecycleField(reply as FastifyReply),
        }),
      },
      // tracing on: a request's lines name its trace and span
      ...(options.tracing && { mixin: traceFields }),
      ...options.logger,
    },
    logController: new AccessLog(),
    // logs off, a request's logger would write nothing: it needs no child logger of its own
    // (one, with its request id, costs a µs per request)
    ...(options.LOG_LEVEL === 'silent' && { childLoggerFactory: (logger: FastifyBaseLogger) => logger }),
    ...serverOptions(options, contract.service.limits.errorMessageLength),
    bodyLimit: contract.service.limits.requestBodyBytes,
    // a path parameter too long for the router would be a 404 without a word; let validation say why
    routerOptions: { maxParamLength: 16 * 1024 },
    // errors Fastify meets before routing (a malformed URL) leave through the same door as all
    // others, with the headers the request's operation and every answer carry
    frameworkErrors: (error, request, reply) => {
      const path = request.url.split('?')[0]!
      const served = contracts.find(({ basePath }) => path.startsWith(`${basePath}/`))
      const operation = served?.operationAt(request.method, path)
      // (the router read no parameters: a deprecated operation's Link takes them from the path)
      reply.headers({ ...protectiveHeaders, ...(operation && lifecycle.get(operation)?.({ params: served!.pathParamsOf(operation, path) })) })
      request.server.metrics.observeUnrouted(reply)
      // (Fastify reads nothing frameworkErrors returns: the reply, a thenable, is not waited for)
      void errorHandler(error, request, reply)
    },
    // a bound for a plugin that never starts, not a speed: on a loaded 2-core machine the
    // documentation of three versions took more than Fastify's default 10 s to start
    pluginTimeout: 120_000,
    // requests that arrive while the server drains are answered, not refused with a 503
    return503OnClosing: false,
    // HEAD works wherever GET does (RFC 9110)
    exposeHeadRoutes: true,
    // the client's address (for its rate limit) from X-Forwarded-For, when set by these proxies only
    trustProxy: options.TRUST_PROXY.length > 0 ? options.TRUST_PROXY : false,
    schemaController: options.schemaController ?? generatedCompilers(),
  }
}
