import type { FastifyInstance, FastifyReply } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../core/config.js'
import { ApiError } from '../core/errors.js'
import { jsonType } from '../core/media-types.js'

/** A readiness probe is answered within this long at most (or DATABASE_TIMEOUT_MS, if shorter):
 * an orchestrator's probe gives up after 1 s by default (Kubernetes' timeoutSeconds). */
const readyBoundMs = 1_000

export interface HealthOptions {
  /** DATABASE_TIMEOUT_MS */
  timeoutMs: number
  /** LOG_LEVEL */
  logLevel: Config['LOG_LEVEL']
  /** why the instance serves but does part of its work late (webhook deliveries behind), if it does */
  degraded: () => string | undefined
}

const ok = JSON.stringify({ status: 'ok' })

/**
 * The probes, without a key:
 * - `GET /livez`: the process answers (200). It stays 200 while the server drains: a failing
 *   liveness probe gets a process restarted, which would cut the requests it is finishing.
 * - `GET /readyz`: the instance should be sent requests. 200 when the database answers a
 *   trivial statement within the bound; 503 with the Error body and Retry-After when it does
 *   not, or fails, or when the server is shutting down (SIGTERM: a load balancer stops sending
 *   before the connections close).
 *   Ready, but doing part of its work late (`degraded`: webhook deliveries behind), it answers
 *   200 with `{"status":"degraded","reason":...}`: taking it out of the balancer would not help.
 * HEAD works as GET. A probe every few seconds from every balancer would fill the log: at the
 * default level (info) the probes' access lines are not written; a change of readiness is, once.
 */
async function healthPlugin(app: FastifyInstance, { timeoutMs, logLevel, degraded }: HealthOptions) {
  const routeOptions = { logLevel: logLevel === 'info' ? 'warn' : logLevel }
  const isReady = readiness(app, Math.min(readyBoundMs, timeoutMs))
  const json = (reply: FastifyReply) => reply.type(jsonType)

  app.get(app.contract.service.paths.live, routeOptions, (_request, reply) => {
    json(reply).send(ok)
  })
  app.get(app.contract.service.paths.ready, routeOptions, async (_request, reply) => {
    const problem = await isReady()
    if (problem === undefined) {
      const reason = degraded()
      return json(reply).send(reason === undefined ? ok : JSON.stringify({ status: 'degraded', reason }))
    }
    // sent here, not through the error handler, which would log every failed probe
    return json(reply)
      .code(problem.status)
      .headers(problem.headers)
      .send(JSON.stringify(problem.bodyWithin(app.contract.service.limits.errorMessageLength)))
  })
}

/**
 * Whether the instance is ready, as an ApiError saying why not. Probes that arrive while a
 * check is under way wait for that one: a database that hangs holds one statement, not one per
 * probe. A change of state is logged once: the cause when it stops being ready, and its return.
 */
function readiness(app: FastifyInstance, boundMs: number) {
  let checking: Promise<void> | undefined
  let wasReady = true
  const retryAfter = String(app.contract.service.limits.unavailableRetryAfterSeconds)
  const notReady = (message: string) => new ApiError('unavailable', message, { 'Retry-After': retryAfter })

  return async (): Promise<ApiError | undefined> => {
    if (app.draining) return notReady('Not ready: the server is shutting down')
    checking ??= app.storage.ping().finally(() => (checking = undefined))
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${boundMs} ms`)), boundMs)
    })
    const failure = await Promise.race([checking, late]).then(
      () => undefined,
      (error: Error) => error,
    )
    clearTimeout(timer)
    if (failure === undefined) {
      if (!wasReady) app.log.info('ready: the database answers again')
      wasReady = true
      return undefined
    }
    if (wasReady) app.log.warn({ err: failure.cause ?? failure }, 'not ready: the database does not answer')
    wasReady = false
    return notReady('Not ready: the database does not answer')
  }
}

export default fp(healthPlugin, { name: 'health', fastify: '5.x', dependencies: ['storage', 'http'], decorators: { fastify: ['contract', 'draining'] } })
