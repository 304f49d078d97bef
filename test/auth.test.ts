import { Agent, get as httpGet } from 'node:http'
import t from 'tap'
import { api, build, call, servedContracts, testKey } from './helpers/app.js'
import { anyOf, staticKeys, storedKeys } from '../src/auth/bearer.js'
import { hashKey } from '../src/auth/secrets.js'

const challenge = 'Bearer realm="petstore"'
const invalidToken = 'Bearer realm="petstore", error="invalid_token"'

t.test('every operation answers a missing, wrong or malformed key with 401 and a bearer challenge', async (t) => {
  const app = await build(t, { API_KEYS: [testKey, 'second-key'] })
  const cases: [string | undefined, string, RegExp][] = [
    [undefined, challenge, /^Missing API key/],
    ['', challenge, /^Missing API key/],
    ['Bearer wrong-key', invalidToken, /^Invalid API key$/],
    [`Bearer ${testKey}x`, invalidToken, /^Invalid API key$/],
    ['Bearer', invalidToken, /^Malformed bearer token/],
    [`Bearer ${testKey} extra`, invalidToken, /^Malformed bearer token/],
    ['Bearer k€y', invalidToken, /^Malformed bearer token/],
    [`Basic ${Buffer.from(`user:${testKey}`).toString('base64')}`, challenge, /^Unsupported authorization scheme/],
    [testKey, challenge, /^Unsupported authorization scheme/],
    [`Token ${testKey}`, challenge, /^Unsupported authorization scheme/],
  ]
  for (const url of servedContracts.flatMap((contract) => [contract.urlOf('listPets'), contract.urlOf('getOrder', { orderId: 1 })])) {
    for (const [authorization, wwwAuthenticate, message] of cases) {
      const headers = authorization === undefined ? {} : { authorization }
      const response = await call(t, app, { url, key: null, headers })
      t.equal(response.status, 401, `${url} with ${JSON.stringify(authorization)}`)
      t.equal(response.headers['www-authenticate'], wwwAuthenticate)
      t.equal(response.json.code, 'unauthorized')
      t.match(response.json.message, message)
    }
  }
  const create = await call(t, app, { method: 'POST', url: `${api}/pets`, key: 'nope', payload: { name: 'Rex', categoryId: 1 } })
  t.equal(create.status, 401)
  const list = await call(t, app, { url: `${api}/pets`, key: null })
  t.equal(list.status, 401)
})

t.test('the scheme is case-insensitive, spaces after it are allowed, and every configured key works', async (t) => {
  const app = await build(t, { API_KEYS: [testKey, 'second-key'] })
  for (const authorization of [`Bearer ${testKey}`, `bearer ${testKey}`, `BEARER ${testKey}`, `Bearer   ${testKey}`, 'Bearer second-key']) {
    const response = await call(t, app, { url: `${api}/pets`, key: null, headers: { authorization } })
    t.equal(response.status, 200, authorization)
  }
})

t.test('authentication comes first: an unauthenticated bad request is a 401, never a 400, 413 or 415', async (t) => {
  const app = await build(t)
  const requests = [
    { method: 'GET' as const, url: `${api}/pets?limit=0` },
    { method: 'GET' as const, url: `${api}/store/orders/abc` },
    { method: 'POST' as const, url: `${api}/pets`, payload: { name: '' } },
    { method: 'POST' as const, url: `${api}/pets`, headers: { 'content-type': 'application/json' }, payload: '{not json' },
    { method: 'POST' as const, url: `${api}/pets`, headers: { 'content-type': 'text/plain' }, payload: 'Rex' },
    { method: 'POST' as const, url: `${api}/pets`, headers: { 'content-type': 'application/json' }, payload: 'x'.repeat(20_000) },
  ]
  for (const request of requests) {
    const response = await call(t, app, { ...request, key: null })
    t.equal(response.status, 401, `${request.method} ${request.url} ${JSON.stringify(request.payload ?? '').slice(0, 20)}`)
  }
})

t.test('with no key configured and none stored, every operation is refused', async (t) => {
  const app = await build(t, { API_KEYS: [] })
  const response = await call(t, app, { url: `${api}/pets`, key: 'anything' })
  t.equal(response.status, 401)
})

t.test('a request is known by its key as a principal that is not the secret', async (t) => {
  const app = await build(t, { API_KEYS: [testKey] })
  const issued = await app.storage.keys.issue('client', app.contract.roles.defaults)
  const check = anyOf(staticKeys([{ key: testKey }], ['pets:read']), storedKeys(app.storage.keys))
  t.match(await check(hashKey(testKey)), { principal: `env:${hashKey(testKey).slice(0, 12)}` }, 'an API_KEYS key by its hash')
  t.strictSame([...(await check(hashKey(testKey)))!.roles], ['pets:read'], 'with the default roles when it names none')
  t.match(await check(hashKey(issued.key)), { principal: `key:${issued.record.id}` }, 'a stored key by its id')
  t.equal(await check(hashKey('wrong')), undefined, 'no principal for a wrong key')
})

t.test('on one keep-alive connection, each request is checked by its own key, whatever the last one sent', async (t) => {
  const app = await build(t, { API_KEYS: [testKey] })
  const issued = await app.storage.keys.issue('client', app.contract.roles.defaults)
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const ports = new Set<number>()
  const get = (authorization: string) =>
    new Promise<number>((resolve, reject) => {
      const request = httpGet(`${origin}${api}/store/orders/1`, { agent, headers: { authorization } }, (response) => {
        ports.add(response.socket.localPort!)
        response.resume().on('end', () => resolve(response.statusCode!))
      })
      request.on('error', reject)
    })
  const sequence: [string, number][] = [
    [`Bearer ${testKey}`, 404],
    [`Bearer ${testKey}`, 404],
    ['Bearer wrong-key', 401],
    [`Bearer ${testKey}`, 404],
    [`Bearer ${issued.key}`, 404],
    [`Bearer ${issued.key}`, 404],
    [`Bearer ${testKey}x`, 401],
    ['Basic abc', 401],
    [`Bearer ${issued.key}`, 404],
  ]
  for (const [authorization, status] of sequence) t.equal(await get(authorization), status, authorization.slice(0, 20))
  // a key revoked between two requests of the connection is refused at the next
  t.equal(await app.storage.keys.revoke(issued.record.id), 'revoked')
  t.equal(await get(`Bearer ${issued.key}`), 401, 'revoked key')
  t.equal(await get(`Bearer ${testKey}`), 404)
  t.equal(ports.size, 1, 'every request went over the one connection')
})
