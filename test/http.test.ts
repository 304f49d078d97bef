import { connect } from 'node:net'
import createClient from 'openapi-fetch'
import t, { type Test } from 'tap'
import type { paths } from '../generated/newest.js'
import { aCategory, api, build, newest, testKey } from './helpers/app.js'
import { contractViolations } from './helpers/contract.js'
import { rawExchange } from './helpers/raw-http.js'

/** The app on a real socket, and a typed client generated from the newest version's document, as
 * client teams use it. */
async function serve(t: Test) {
  const app = await build(t)
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  const client = createClient<paths>({ baseUrl: `${origin}${api}`, headers: { Authorization: `Bearer ${testKey}` } })
  client.use({
    async onResponse({ request, response }) {
      const { pathname, search } = new URL(request.url)
      const observed = {
        method: request.method,
        url: pathname + search,
        status: response.status,
        headers: Object.fromEntries(response.headers),
        body: await response.clone().text(),
      }
      t.strictSame(contractViolations(observed), [], `${request.method} ${pathname} ${response.status} keeps the contract`)
    },
  })
  return { app, origin, client }
}

t.test('a generated client makes calls of the interface over HTTP', async (t) => {
  const { app, client } = await serve(t)
  const categoryId = await aCategory(app)
  const created = await client.POST('/pets', { body: { name: 'Rex', categoryId, status: 'available' } })
  t.equal(created.response.status, 201)
  t.strictSame(created.data, { id: 1, name: 'Rex', category: { id: categoryId, name: 'Bird' }, status: 'available' })
  t.equal(created.response.headers.get('location'), `${api}/pets?id=1`)

  const listed = await client.GET('/pets', { params: { query: { status: 'available', limit: 5 } } })
  t.strictSame(listed.data, [created.data])

  const fetched = await client.GET('/pets', { params: { query: { id: 1 } } })
  t.strictSame(fetched.data, [created.data])

  const missing = await client.GET('/store/orders/{orderId}', { params: { path: { orderId: 2 } } })
  t.equal(missing.response.status, 404)
  t.strictSame(missing.error, { code: 'not_found', message: 'Order 2 not found', status: 404 })

  const invalid = await client.POST('/pets', { body: { name: '', categoryId: 1, status: 'sold' } })
  t.equal(invalid.error?.code, 'invalid_request')

  const anonymous = await client.GET('/pets', { headers: { Authorization: null } })
  t.equal(anonymous.response.status, 401)
  t.equal(anonymous.response.headers.get('www-authenticate'), 'Bearer realm="petstore"')
})

t.test('HTTP details: chunked bodies are read, a short body is a 400, keep-alive connections are reused', async (t) => {
  const { app, origin } = await serve(t)
  const { port } = new URL(origin)
  /** Sends raw bytes and returns the raw answer: what a hand-written client would see. */
  const raw = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1')
      let answer = ''
      socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk))
      socket.on('end', () => resolve(answer)).on('error', reject)
      socket.end(request)
    })
  const body = JSON.stringify({ name: 'Rex', categoryId: await aCategory(app) })
  const head = `POST ${api}/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${testKey}\r\nContent-Type: application/json\r\nConnection: close\r\n`
  const chunked = await raw(`${head}Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)
  t.match(chunked, /^HTTP\/1\.1 201 Created/)
  const short = await raw(`${head}Content-Length: ${body.length + 5}\r\n\r\n${body}`)
  t.match(
    short,
    /^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*\r\n\r\n\{"code":"invalid_request","message":"The HTTP request could not be read \(HPE_INVALID_EOF_STATE\)","status":400\}$/,
  )
  const huge = await raw(`GET ${api}/pets HTTP/1.1\r\nHost: x\r\nX-Padding: ${'x'.repeat(17 * 1024)}\r\n\r\n`)
  t.match(huge, /"message":"The request headers are larger than 16 KiB","status":400\}$/)
  const reset = connect(Number(port), '127.0.0.1')
  await new Promise((resolve) => reset.on('connect', resolve))
  reset.write(`GET ${api}/pets HTTP/1.1\r\nHost: x\r\n`)
  reset.resetAndDestroy() // the server sees a reset mid-request and has no one to answer
  const after = await fetch(`${origin}${api}/pets`, { headers: { authorization: `Bearer ${testKey}` } })
  t.equal(after.status, 200, 'the server goes on')

  const first = await fetch(`${origin}${api}/pets`, { headers: { authorization: `Bearer ${testKey}` } })
  t.equal(first.headers.get('connection'), 'keep-alive')
  await first.arrayBuffer()
})

t.test(
  'an operation that takes no body is not refused for a media type it was not sent: a chunked empty body is none, an untyped one is ignored',
  async (t) => {
    const { app, origin } = await serve(t)
    const { port } = new URL(origin)
    const exchange = (method: string, url: string, fields: string[], body: string) => rawExchange(t, Number(port), method, url, fields, body)
    const chunked = (text: string) => `${text === '' ? '' : `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`}0\r\n\r\n`
    const te = 'Transfer-Encoding: chunked'
    const json = 'Content-Type: application/json'
    const webhook = await app.inject({
      method: 'POST',
      url: newest.urlOf('createWebhook'),
      headers: { authorization: `Bearer ${testKey}` },
      payload: { url: 'https://93.184.215.14/hooks', events: ['pet.created'] },
    })
    const rotate = newest.urlOf('rotateWebhookSecret', { webhookId: webhook.json().id })
    t.notOk(newest.operations.get('rotateWebhookSecret')!.takesBody, 'rotateWebhookSecret takes no body')

    const untypedEmpty = await exchange('POST', rotate, [te], chunked(''))
    t.equal(untypedEmpty.status, 200, 'chunked, empty, no Content-Type: no body, the secret rotated')
    t.match(untypedEmpty.json, { secret: String })
    t.equal((await exchange('POST', rotate, [te, json], chunked(''))).status, 200, 'chunked and empty, as JSON: no body either (not "send a JSON object")')
    t.equal((await exchange('POST', rotate, [te], chunked('stray bytes'))).status, 200, 'an untyped body it does not take: read, and ignored')
    t.equal((await exchange('POST', rotate, ['Content-Length: 3'], 'abc')).status, 200, 'so with a Content-Length')
    const limit = newest.service.limits.requestBodyBytes
    t.match(await exchange('POST', rotate, [te], chunked('x'.repeat(limit + 1))), { status: 413, json: { code: 'payload_too_large' } }, 'within the limit')
    t.match(await exchange('POST', rotate, [`Content-Length: ${limit + 1}`], 'x'.repeat(limit + 1)), { status: 413, json: { code: 'payload_too_large' } })
    t.match(
      await exchange('POST', rotate, [te, 'Content-Type: text/plain'], chunked('abc')),
      { status: 415, json: { message: 'Unsupported media type "text/plain": send application/json' } },
      'a type it was sent, that no operation takes, is still a 415',
    )
    t.match(
      await exchange('POST', newest.urlOf('createPet'), [te], chunked('{}')),
      { status: 415, json: { message: 'Unsupported media type "none": send application/json' } },
      'an operation that takes a body is still told to send JSON',
    )

    // every operation that takes no body, with a method that may carry one: a chunked empty body is none,
    // answered as a request without one (and, checked above, with a status the operation documents)
    for (const operation of [...newest.operations.values()]
      .filter(({ takesBody, method }) => !takesBody && ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method))
      .sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'))) {
      const params = Object.fromEntries((operation.path.match(/\{[^}]+\}/g) ?? []).map((name) => [name.slice(1, -1), webhook.json().id]))
      const url = newest.urlOf(operation.id, params)
      const answer = await exchange(operation.method, url, [te], chunked(''))
      // (deleteWebhook last, the subscription there until then; no delivery has this id)
      t.ok(answer.status < 300 || answer.status === 404, `${operation.id}: ${answer.status}, as without a body`)
    }
  },
)
