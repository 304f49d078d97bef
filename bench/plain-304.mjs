// A revalidation answered by plain Fastify 5 with one route, GET /v1/pets, that checks nothing
// and reads nothing: it tags a constant page and answers 304 to a matching If-None-Match, with
// the headers the service's 304 carries (the same names, values of the same length), and writes
// the same one-line access log. What a 304 costs here is what a Fastify server pays to answer
// one before any work of its own; the bench sets the service's 304 beside it.
//
// Environment: PORT, HOST (127.0.0.1), LOG_LEVEL (info).
import Fastify from 'fastify'
import { accessLogged } from './peer-app.mjs'

const page = '[]'
const tag = '"v1-AAAAAAAAAAAAAAAAAAAAAAAAAAA"'
const headers = {
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'private, no-cache',
  'RateLimit-Policy': '"key";q=1000000000;w=60',
  RateLimit: '"key";r=999999999;t=60',
  ETag: tag,
}

const app = Fastify(accessLogged())
app.get('/v1/pets', (request, reply) => {
  reply.headers(headers)
  if (request.headers['if-none-match'] === tag) return reply.code(304).send()
  reply.type('application/json; charset=utf-8').send(page)
})
await app.listen({ port: Number(process.env.PORT ?? 3002), host: process.env.HOST ?? '127.0.0.1' })
