// The hand-written peer of the service, as someone would write it without openapi.yaml: plain
// Fastify 5, JSON schemas on the routes (params, query, body, headers and responses), an
// onRequest hook comparing one bearer key, the same one-line access log, and the same response
// headers and bodies as the service on the paths the bench drives: the pets, and the store
// orders with their Idempotency-Key. The storage is given by the entry file (peer-sqlite.mjs,
// peer-postgres.mjs). Plain JavaScript, run with node: no TypeScript loader.
//
// Environment: PORT, HOST (127.0.0.1), DATABASE_URL, API_KEYS (the one key), LOG_LEVEL (info).
import { createHash } from 'node:crypto'
import Fastify, { LogController } from 'fastify'

/** One access-log line per request ("request completed"), as the service writes it. */
class AccessLog extends LogController {
  incomingRequest() {}
  routeNotFound() {}
}

const maxId = 9007199254740991
const status = { type: 'string', enum: ['available', 'pending', 'sold'] }
const pet = {
  type: 'object',
  required: ['id', 'name', 'categoryId'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    categoryId: { type: 'integer' },
    status: { type: 'string' },
  },
}
// version 2's pet: its category as {id, name}, the name when the category exists
const petV2 = {
  type: 'object',
  required: ['id', 'name', 'category'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    category: { type: 'object', required: ['id'], properties: { id: { type: 'integer' }, name: { type: 'string' } } },
    status: { type: 'string' },
  },
}
const newPet = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'categoryId'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100, pattern: '^[^\\x00-\\x1F\\x7F]*[^\\s\\x00-\\x1F\\x7F][^\\x00-\\x1F\\x7F]*$' },
    categoryId: { type: 'integer', minimum: 1, maximum: maxId },
    status: { ...status, default: 'available' },
  },
}
const order = {
  type: 'object',
  required: ['id', 'petId', 'status', 'placedAt'],
  properties: {
    id: { type: 'integer' },
    petId: { type: 'integer' },
    status: { type: 'string' },
    placedAt: { type: 'string' },
  },
}
const orderStatus = { type: 'string', enum: ['placed', 'delivered', 'cancelled'] }
const error = {
  type: 'object',
  required: ['code', 'message', 'status'],
  properties: { code: { type: 'string' }, message: { type: 'string' }, status: { type: 'integer' } },
}

// the literal headers the service sends (openapi.yaml: protective headers on every answer,
// lifecycle headers on getPet, which is deprecated)
const protective = { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' }
const lifecycle = {
  Deprecation: '@1795219200',
  Sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
}
// its successor's request that reads the same pet
const successorLink = (petId) => `</v1/pets?id=${petId}>; rel="successor-version", </v1/docs/>; rel="deprecation"; type="text/html"`

// the store orders are experimental (openapi.yaml: x-stability)
const experimental = { 'API-Stability': 'experimental' }

class HttpError extends Error {
  constructor(statusCode, code, message) {
    super(message)
    this.statusCode = statusCode
    this.code = code
  }
}

/** Fastify's options for the access log the service writes: one line per request, at LOG_LEVEL
 * (info by default), the key redacted. */
export const accessLogged = () => ({
  logger: {
    level: process.env.LOG_LEVEL || 'info',
    redact: { paths: ['req.headers.authorization'], censor: '[redacted]' },
    serializers: { res: (reply) => ({ statusCode: reply.statusCode, method: reply.request.method, url: reply.request.url }) },
  },
  logController: new AccessLog(),
})

/**
 * Starts the peer on `store`: { find(id), list(limit, status, after), create(pet), close() },
 * each returning a value or a promise of one, with pets shaped as the API shows them; and for
 * the orders { findOrder(id), listOrders(limit, status, after), placeOrder(petId, idempotency),
 * updateOrder(id, status) }, the last two returning what the service's repository does:
 * { placed } | { missing } | { unavailable } | { reused }, and { moved } | { missing } | { stuck }.
 */
export async function startPeer(store) {
  const key = (process.env.API_KEYS ?? '').trim()
  if (key === '' || key.includes(',')) throw new Error('API_KEYS must hold the one key of the peer')
  const expected = `Bearer ${key}`

  const app = Fastify({
    ...accessLogged(),
    bodyLimit: 16 * 1024,
    // unknown properties are refused, as the service does, not dropped
    ajv: { customOptions: { removeAdditional: false } },
  })

  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(protective)
    done()
  })
  // a read's 200 tagged (a SHA-1 of its body, as the service's), and 304 to a matching If-None-Match
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.method !== 'GET' || reply.statusCode !== 200) return done(null, payload)
    const tag = `"v${request.url[2]}-${createHash('sha1').update(payload).digest('base64url')}"`
    reply.headers({ ETag: tag, 'Cache-Control': 'private, no-cache' })
    const field = request.headers['if-none-match']
    if (field === undefined || !(field.trim() === '*' || field.split(',').some((listed) => listed.trim().replace(/^W\//, '') === tag)))
      return done(null, payload)
    reply.code(304).removeHeader('content-type')
    done(null, null)
  })
  // the auth hook of every route: one key, compared
  const authenticate = (request, reply, done) => {
    if (request.headers.authorization === expected) return done()
    reply.header('WWW-Authenticate', 'Bearer realm="petstore", error="invalid_token"')
    done(new HttpError(401, 'unauthorized', 'Invalid API key'))
  }

  app.setErrorHandler((err, _request, reply) => {
    const statusCode = err.statusCode ?? 500
    const code = err.code && !String(err.code).startsWith('FST_') ? err.code : statusCode < 500 ? 'invalid_request' : 'internal_error'
    reply.code(statusCode).send({ code, message: statusCode < 500 ? err.message : 'Internal server error', status: statusCode })
  })
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ code: 'not_found', message: `No route ${request.method} ${request.url.split('?')[0]}`, status: 404 })
  })

  app.get(
    '/v1/pets',
    {
      schema: {
        querystring: {
          type: 'object',
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
            status,
            after: { type: 'integer', minimum: 0, maximum: maxId },
          },
        },
        response: { 200: { type: 'array', items: pet }, '4xx': error },
      },
      onRequest: authenticate,
    },
    async (request, reply) => {
      const { limit, status, after = 0 } = request.query
      const page = await store.list(limit + 1, status, after)
      if (page.length > limit) {
        page.length = limit
        const query = status === undefined ? `limit=${limit}` : `limit=${limit}&status=${status}`
        reply.header('Link', `</v1/pets?${query}&after=${page[limit - 1].id}>; rel="next"`)
      }
      return page
    },
  )

  // version 2's listPets by status, as the bench drives it: the category of each pet, by name
  app.get(
    '/v2/pets',
    {
      schema: {
        querystring: {
          type: 'object',
          required: ['status'],
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
            status,
            after: { type: 'integer', minimum: 0, maximum: maxId },
          },
        },
        response: { 200: { type: 'array', items: petV2 }, '4xx': error },
      },
      onRequest: authenticate,
    },
    async (request, reply) => {
      const { limit, status, after = 0 } = request.query
      const rows = await store.listV2(limit + 1, status, after)
      if (rows.length > limit) {
        rows.length = limit
        reply.header('Link', `</v2/pets?limit=${limit}&status=${status}&after=${rows[limit - 1].id}>; rel="next"`)
      }
      return rows.map(({ id, name, categoryId, categoryName, status }) => ({
        id,
        name,
        category: categoryName === null ? { id: categoryId } : { id: categoryId, name: categoryName },
        status,
      }))
    },
  )

  app.post('/v1/pets', { schema: { body: newPet, response: { 201: pet, '4xx': error } }, onRequest: authenticate }, async (request, reply) => {
    const created = await store.create(request.body)
    reply.code(201).header('Location', `/v1/pets/${created.id}`)
    return created
  })

  app.get(
    '/v1/pets/:petId',
    {
      schema: {
        params: { type: 'object', required: ['petId'], properties: { petId: { type: 'integer', minimum: 1, maximum: maxId } } },
        response: { 200: pet, '4xx': error },
      },
      onRequest: [
        (request, reply, done) => {
          reply.headers(lifecycle).header('Link', successorLink(request.params.petId))
          done()
        },
        authenticate,
      ],
    },
    async (request) => {
      const found = await store.find(request.params.petId)
      if (found === undefined) throw new HttpError(404, 'not_found', `Pet ${request.params.petId} not found`)
      return found
    },
  )

  const markExperimental = (_request, reply, done) => {
    reply.headers(experimental)
    done()
  }
  const pageQuery = (statusSchema) => ({
    type: 'object',
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
      status: statusSchema,
      after: { type: 'integer', minimum: 0, maximum: maxId },
    },
  })
  const orderParams = { type: 'object', required: ['orderId'], properties: { orderId: { type: 'integer', minimum: 1, maximum: maxId } } }
  const fingerprint = (body) =>
    createHash('sha256')
      .update(JSON.stringify(body, Object.keys(body).sort()))
      .digest('hex')

  app.get(
    '/v1/store/orders',
    {
      schema: { querystring: pageQuery(orderStatus), response: { 200: { type: 'array', items: order }, '4xx': error } },
      onRequest: [markExperimental, authenticate],
    },
    async (request, reply) => {
      const { limit, status, after = 0 } = request.query
      const page = await store.listOrders(limit + 1, status, after)
      if (page.length > limit) {
        page.length = limit
        const query = status === undefined ? `limit=${limit}` : `limit=${limit}&status=${status}`
        reply.header('Link', `</v1/store/orders?${query}&after=${page[limit - 1].id}>; rel="next"`)
      }
      return page
    },
  )

  app.post(
    '/v1/store/orders',
    {
      schema: {
        headers: { type: 'object', properties: { 'idempotency-key': { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' } } },
        body: { type: 'object', additionalProperties: false, required: ['petId'], properties: { petId: { type: 'integer', minimum: 1, maximum: maxId } } },
        response: { 201: order, '4xx': error },
      },
      onRequest: [markExperimental, authenticate],
    },
    async (request, reply) => {
      const { petId } = request.body
      const key = request.headers['idempotency-key']
      const outcome = await store.placeOrder(petId, key === undefined ? undefined : { key, fingerprint: fingerprint(request.body) })
      if (outcome.placed) {
        reply.code(201).header('Location', `/v1/store/orders/${outcome.placed.id}`)
        return outcome.placed
      }
      if (outcome.missing) throw new HttpError(404, 'not_found', `Pet ${outcome.missing.petId} not found`)
      if (outcome.unavailable) throw new HttpError(409, 'pet_unavailable', `Pet ${outcome.unavailable.petId} is ${outcome.unavailable.status}, not available`)
      throw new HttpError(
        422,
        'idempotency_key_reused',
        'This Idempotency-Key was used in the last 24 hours for a request with another body: use a new key for a new request',
      )
    },
  )

  app.get(
    '/v1/store/orders/:orderId',
    { schema: { params: orderParams, response: { 200: order, '4xx': error } }, onRequest: [markExperimental, authenticate] },
    async (request) => {
      const found = await store.findOrder(request.params.orderId)
      if (found === undefined) throw new HttpError(404, 'not_found', `Order ${request.params.orderId} not found`)
      return found
    },
  )

  app.patch(
    '/v1/store/orders/:orderId',
    {
      schema: {
        params: orderParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['status'],
          properties: { status: { type: 'string', enum: ['delivered', 'cancelled'] } },
        },
        response: { 200: order, '4xx': error },
      },
      onRequest: [markExperimental, authenticate],
    },
    async (request) => {
      const { orderId } = request.params
      const target = request.body.status
      const outcome = await store.updateOrder(orderId, target)
      if (outcome.moved) return outcome.moved
      if (outcome.missing) throw new HttpError(404, 'not_found', `Order ${orderId} not found`)
      throw new HttpError(409, 'invalid_transition', `Order ${orderId} is ${outcome.stuck.status}: only a placed order can become ${target}`)
    },
  )

  app.addHook('onClose', () => store.close())
  const stop = () => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    )
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)

  await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST || '127.0.0.1' })
}
