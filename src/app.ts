import Fastify, { type FastifyServerOptions, LogController } from 'fastify'
import { anyOf, bearerAuth, staticKeys } from './auth/bearer.js'
import type { Config } from './config.js'
import { generatedCompilers } from './contract/compilers.js'
import docs, { docsPath } from './contract/docs.js'
import contractPlugin from './contract/plugin.js'
import { type Contract, loadContract } from './contract/spec.js'
import { clientErrorHandler, errorHandler, notFoundHandler } from './errors.js'
import { petHandlers } from './pets/handlers.js'
import { openStorage, type Storage } from './storage/index.js'

/** Request bodies above this size are refused with 413 (openapi.yaml says 16 KiB). */
const bodyLimit = 16 * 1024

export interface AppOptions extends Pick<Config, 'DATABASE_URL' | 'DATABASE_POOL_SIZE' | 'API_KEYS' | 'LOG_LEVEL'> {
  /** pino options beside the level, e.g. a destination stream */
  logger?: Exclude<FastifyServerOptions['logger'], boolean>
  /** the compilers of validators and serializers: by default those in generated/ */
  schemaController?: FastifyServerOptions['schemaController']
  /** the contract to serve: by default openapi.yaml */
  contract?: Contract
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
  }
}

/** The service as a Fastify instance, ready to listen or to be injected into. Closing it
 * closes its storage. */
export async function buildApp(options: AppOptions) {
  const contract = options.contract ?? loadContract()
  const storage = await openStorage(options.DATABASE_URL, { poolSize: options.DATABASE_POOL_SIZE })
  try {
    return await assemble(contract, storage, options)
  } catch (error) {
    await storage.close()
    throw error
  }
}

async function assemble(contract: Contract, storage: Storage, options: AppOptions) {
  const app = Fastify({
    logger: {
      level: options.LOG_LEVEL,
      // the key is the one secret a request carries; it is never written down
      redact: { paths: ['req.headers.authorization'], censor: '[redacted]' },
      // the access-log line names the request it answers
      serializers: {
        // (typed partial by Fastify, but a reply always has its request)
        res: ({ statusCode, request }) => ({ statusCode, method: request!.method, url: request!.url }),
      },
      ...options.logger,
    },
    logController: new AccessLog(),
    bodyLimit,
    // a path parameter too long for the router would be a 404 without a word; let validation say why
    routerOptions: { maxParamLength: 16 * 1024 },
    // errors Fastify meets before routing (a malformed URL) leave through the same door as all others
    frameworkErrors: errorHandler,
    clientErrorHandler,
    // requests that arrive while the server drains are answered, not refused with a 503
    return503OnClosing: false,
    // the routes are the operations of the spec and the documentation, without implicit HEADs
    exposeHeadRoutes: false,
    schemaController: options.schemaController ?? generatedCompilers(),
  })
  app.decorate('storage', storage)
  app.decorate('contract', contract)
  app.addHook('onClose', () => storage.close())

  // JSON only: without the text/plain parser, any other body is a 415.
  app.removeContentTypeParser('text/plain')
  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler(notFoundHandler(contract))

  await app.register(docs, { contract })
  await app.register(contractPlugin, {
    contract,
    handlers: petHandlers(storage.pets),
    authenticate: bearerAuth(anyOf(staticKeys(options.API_KEYS), storage.keys.authenticate)),
    docsPath: docsPath(contract),
  })
  return app
}
