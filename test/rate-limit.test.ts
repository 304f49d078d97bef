/**
 * Rate limits, one instance counting alone (no REDIS_URL): per API key, and per client address
 * for requests without a valid key, with their headers on every response and a 429 past them.
 * Several instances sharing Redis, and Redis failing: test/redis-limits.test.ts.
 */
import t from 'tap'
import type { OpenAPIV3 } from 'openapi-types'
import { contractOf, newestSpecPath } from '../src/contract/load.js'
import { errorStatus, fitMessage } from '../src/core/errors.js'
import { Counter } from '../src/limits/counter.js'
import { clientAddress, clientsBound } from '../src/limits/rate-limit.js'
import { api, build, call, newest, servedContracts, testKey } from './helpers/app.js'
import { sleep } from './helpers/concurrency.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { editedContract } from './helpers/spec.js'

const limits = { RATE_LIMIT_PER_KEY: 5, RATE_LIMIT_PER_ADDRESS: 3, RATE_LIMIT_WINDOW_S: 60 }
const wrongKey = 'pet_00000000_not-a-key-of-this-store-00000'

/** `"key";r=4;t=60` as { r: 4, t: 60 } */
function rateLimit(header: unknown) {
  const match = /^"(key|address)";r=(\d+);t=(\d+)$/.exec(String(header))
  return match ? { policy: match[1], r: Number(match[2]), t: Number(match[3]) } : undefined
}

t.test('per API key: the quota counted down in RateLimit, then 429 with Retry-After until the window ends; other keys unaffected', async (t) => {
  const refused: string[] = []
  const app = await build(t, { ...limits, API_KEYS: [testKey, 'other-key'] })
  app.rateLimits.on('refused', (policy, request) => refused.push(`${policy} ${request.method} ${request.url}`))
  const remaining: number[] = []
  for (let i = 0; i < 5; i++) {
    const response = await call(t, app, { url: `${api}/pets` })
    t.equal(response.status, 200)
    t.equal(response.headers['ratelimit-policy'], '"key";q=5;w=60')
    remaining.push(rateLimit(response.headers.ratelimit)!.r)
  }
  t.strictSame(remaining, [4, 3, 2, 1, 0], 'RateLimit counts down')
  for (const request of [
    { url: `${api}/pets` },
    { method: 'POST' as const, url: `${api}/pets`, payload: { name: 'Rex', categoryId: 1 } },
    { url: `${api}/store/orders/1` },
  ]) {
    const over = await call(t, app, request)
    t.equal(over.status, 429, `${request.method ?? 'GET'} ${request.url}: past the quota`)
    t.equal(over.json.code, 'too_many_requests')
    t.match(over.json.message, /^Rate limit reached: 5 requests per 60 s for this API key; try again in \d+ s$/)
    const { r, t: reset } = rateLimit(over.headers.ratelimit)!
    t.equal(r, 0)
    t.ok(reset >= 59 && reset <= 60, `the window ends in ${reset} s`)
    t.equal(over.headers['retry-after'], String(reset), 'Retry-After: when the window ends')
  }
  t.strictSame(refused, [`key GET ${api}/pets`, `key POST ${api}/pets`, `key GET ${api}/store/orders/1`], 'each refusal is announced (for metrics)')
  const other = await call(t, app, { url: `${api}/pets`, key: 'other-key' })
  t.equal(other.status, 200, 'another key has its own quota')
  t.equal(rateLimit(other.headers.ratelimit)!.r, 4)
  t.equal((await call(t, app, { url: `${api}/pets`, key: wrongKey })).status, 401, 'a key over its quota does not count against its address')
})

t.test('requests arriving together past a quota: exactly the quota is allowed, per key, per address, and on an open operation', async (t) => {
  const together = (count: number, request: (i: number) => Parameters<typeof call>[2], app: Awaited<ReturnType<typeof build>>) =>
    Promise.all(Array.from({ length: count }, async (_, i) => (await call(t, app, request(i))).status))
  const tally = (statuses: number[]) => statuses.reduce<Record<number, number>>((counts, status) => ({ ...counts, [status]: (counts[status] ?? 0) + 1 }), {})
  const app = await build(t, limits)
  t.strictSame(tally(await together(12, () => ({ url: `${api}/pets` }), app)), { 200: 5, 429: 7 }, 'one key')
  t.strictSame(
    tally(await together(10, (i) => ({ url: `${api}/pets`, key: `${wrongKey}${i}`, remoteAddress: '192.0.2.50' }), app)),
    { 401: 3, 429: 7 },
    'wrong keys from one address',
  )
  const open = await build(t, { ...limits, contract: editedContract((d) => void (d.paths['/pets']!.get!.security = []), newestSpecPath) })
  t.strictSame(tally(await together(8, () => ({ url: `${api}/pets`, key: null }), open)), { 200: 3, 429: 5 }, 'an open operation')
})

t.test('the quota is whole again when the window ends', async (t) => {
  const app = await build(t, { ...limits, RATE_LIMIT_PER_KEY: 2, RATE_LIMIT_WINDOW_S: 1 })
  const statuses = async () => {
    const seen: number[] = []
    for (let i = 0; i < 3; i++) seen.push((await call(t, app, { url: `${api}/pets` })).status)
    return seen
  }
  t.strictSame(await statuses(), [200, 200, 429])
  await sleep(1_100)
  t.strictSame(await statuses(), [200, 200, 429], 'a new window')
})

for (const store of ['SQLite', 'PostgreSQL'] as const) {
  t.test(
    `${store}: wrong keys, per address: 401 up to the quota, then 429 without asking the key store; a key known at once is still let on`,
    { skip: store === 'PostgreSQL' && postgresMissing },
    async (t) => {
      const app = await build(t, { ...limits, ...(store === 'PostgreSQL' && { DATABASE_URL: await freshPostgres(t) }) })
      const { key } = await app.storage.keys.issue('ci', app.contract.roles.defaults)
      const unseen = (await app.storage.keys.issue('not used yet', app.contract.roles.defaults)).key
      let lookups = 0
      const authenticate = app.storage.keys.authenticate.bind(app.storage.keys)
      app.storage.keys.authenticate = (digest) => {
        lookups++
        return authenticate(digest)
      }
      t.equal((await call(t, app, { url: `${api}/pets`, key, remoteAddress: '203.0.113.8' })).status, 200, 'the key is used (from elsewhere), and so known')
      lookups = 0
      const guesser = '203.0.113.7'
      const statuses: number[] = []
      const remaining: number[] = []
      for (let i = 0; i < 10; i++) {
        const response = await call(t, app, { url: `${api}/pets`, key: `${wrongKey}${i}`, remoteAddress: guesser })
        statuses.push(response.status)
        t.equal(response.headers['ratelimit-policy'], '"address";q=3;w=60')
        remaining.push(rateLimit(response.headers.ratelimit)!.r)
      }
      t.strictSame(statuses, [401, 401, 401, 429, 429, 429, 429, 429, 429, 429])
      t.strictSame(remaining, [2, 1, 0, 0, 0, 0, 0, 0, 0, 0])
      t.equal(lookups, 3, 'only the 3 counted were looked up in the key store')
      for (const request of [{ key: null }, { key: 'Basic Zm9v' }, { key: unseen }]) {
        const response = await call(t, app, { url: `${api}/pets`, ...request, remoteAddress: guesser })
        t.equal(
          response.status,
          429,
          `refused at once: ${request.key === unseen ? 'a valid key this instance has not seen yet, like any other it would have to look up' : `key ${request.key}`}`,
        )
        t.match(response.json.message, 'for requests without a valid API key from this address')
      }
      t.equal(lookups, 3, 'still 3: no guess past the quota reaches the key store')

      // a client that holds a key this instance knows is not locked out by its neighbours' failures
      for (const known of [key, testKey]) {
        const response = await call(t, app, { url: `${api}/pets`, key: known, remoteAddress: guesser })
        t.equal(response.status, 200, `from the spent address, ${known === key ? 'a stored key in use' : 'a key of API_KEYS'} is let on`)
        t.equal(response.headers['ratelimit-policy'], '"key";q=5;w=60', 'counted against its own quota')
      }
      t.equal(lookups, 3, 'without asking the key store')
      t.equal((await call(t, app, { url: `${api}/pets`, key: wrongKey, remoteAddress: guesser })).status, 429, 'and guesses are still refused')
      t.equal(
        (await call(t, app, { url: `${api}/pets`, key: unseen, remoteAddress: '203.0.113.9' })).status,
        200,
        'the unseen key works from any other address',
      )

      const neighbour = await call(t, app, { url: `${api}/pets`, key, remoteAddress: '203.0.113.8' })
      t.equal(neighbour.status, 200, 'another address is not refused')
      t.equal(neighbour.headers['ratelimit-policy'], '"key";q=5;w=60', 'an authenticated request shows its key quota')
      // a valid key's requests do not use its address's quota of failures
      const valid = '198.51.100.1'
      for (let i = 0; i < 3; i++) t.equal((await call(t, app, { url: `${api}/pets`, key: unseen, remoteAddress: valid })).status, 200)
      t.equal((await call(t, app, { url: `${api}/pets`, key: wrongKey, remoteAddress: valid })).status, 401, 'its first failure is a 401')
    },
  )
}

t.test('IPv6 clients are counted by their /64: a guesser cannot take a fresh address for each try', async (t) => {
  const app = await build(t, limits)
  const statuses: number[] = []
  for (let i = 1; i <= 5; i++) statuses.push((await call(t, app, { url: `${api}/pets`, key: wrongKey, remoteAddress: `2001:db8:1:2::${i}` })).status)
  t.strictSame(statuses, [401, 401, 401, 429, 429])
  t.equal((await call(t, app, { url: `${api}/pets`, key: wrongKey, remoteAddress: '2001:db8:1:3::1' })).status, 401, 'the next /64 is another client')
})

t.test('the client address', async (t) => {
  t.equal(clientAddress('192.0.2.1'), '192.0.2.1')
  t.equal(clientAddress('::ffff:192.0.2.1'), '192.0.2.1', 'IPv4-mapped IPv6 is the IPv4 client')
  t.equal(clientAddress('2001:db8::1'), '2001:db8:0:0::/64')
  t.equal(clientAddress('2001:db8:aa:bb:cc:dd:ee:ff'), '2001:db8:aa:bb::/64')
  t.equal(clientAddress('not an address'), 'not an address', 'what a proxy says, kept as it is')
  t.equal(clientAddress('x'.repeat(300)).length, 100, 'and bounded')
  // remembered up to a bound, then started over: the answers stay the same across it
  for (let i = 0; i <= clientsBound; i++) clientAddress(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)
  t.equal(clientAddress('10.0.39.16'), '10.0.39.16', 'past the bound')
  t.equal(clientAddress('2001:db8::1'), '2001:db8:0:0::/64', 'and one read before it, read again')
})

t.test('behind a trusted proxy (TRUST_PROXY), the client is the address X-Forwarded-For names; otherwise the header is ignored', async (t) => {
  const guess = (app: Awaited<ReturnType<typeof build>>, client: string) =>
    call(t, app, { url: `${api}/pets`, key: wrongKey, remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': client } })
  const proxied = await build(t, { ...limits, TRUST_PROXY: ['10.0.0.0/8'] })
  const direct = await build(t, limits)
  const behind: number[] = []
  const bare: number[] = []
  for (let i = 1; i <= 4; i++) {
    behind.push((await guess(proxied, `192.0.2.${i}`)).status)
    bare.push((await guess(direct, `192.0.2.${i}`)).status)
  }
  t.strictSame(behind, [401, 401, 401, 401], 'four clients behind the proxy, one failure each')
  t.strictSame(bare, [401, 401, 401, 429], 'without TRUST_PROXY, the proxy itself is the client')
})

t.test('an operation that needs no key counts every request against its address', async (t) => {
  const open = editedContract((d) => {
    d.paths['/pets']!.get!.security = []
  }, newestSpecPath)
  const app = await build(t, { ...limits, contract: open })
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await call(t, app, { url: `${api}/pets`, key: null })).status)
  t.strictSame(statuses, [200, 200, 200, 429, 429])
})

t.test('the RateLimit fields, and the 429 in the catalogue', async (t) => {
  const app = await build(t, { RATE_LIMIT_PER_KEY: 1000, RATE_LIMIT_WINDOW_S: 60 })
  for (const remaining of [999, 998]) {
    const { headers } = await call(t, app, { url: `${api}/pets` })
    t.equal(headers['ratelimit-policy'], '"key";q=1000;w=60')
    t.match(headers.ratelimit, new RegExp(`^"key";r=${remaining};t=([1-9]|[1-5][0-9]|60)$`))
  }
  t.equal(errorStatus.too_many_requests, 429)
})

t.test("an Error message keeps to its schema: at most the schema's maxLength characters, no control characters", async (t) => {
  const { errorMessageLength } = newest.service.limits
  t.equal(errorMessageLength, 500, 'the Error.message of the documents (one Error, shared)')
  t.equal(fitMessage('tab\there\nand \u007f', 500), 'tab\uFFFDhere\uFFFDand \uFFFD')
  const long = fitMessage('x'.repeat(600), 500)
  t.equal(long.length, 500)
  t.ok(long.endsWith('…'))
  const cutPair = fitMessage(`${'x'.repeat(500 - 2)}😀😀`, 500)
  t.notOk(/[\uD800-\uDBFF]…$/.test(cutPair), 'never half a surrogate pair')
  const app = await build(t)
  const response = await call(t, app, { url: `${api}/${'a'.repeat(2_000)}` })
  t.equal(response.status, 404)
  t.equal(response.json.message.length, errorMessageLength, 'a long path quoted in a 404 is cut (the contract check holds it to maxLength)')
  // the schema decides: documents whose Error.message holds 100 characters are served so
  const shorter = servedContracts.map(({ document, file }) => {
    const edited = structuredClone(document)
    ;((edited.components!.schemas!.Error as OpenAPIV3.SchemaObject).properties!.message as OpenAPIV3.SchemaObject).maxLength = 100
    return contractOf(edited, { file })
  })
  const cut = await call(t, await build(t, { contracts: shorter }), { url: `${api}/${'a'.repeat(2_000)}` })
  t.strictSame([cut.status, cut.json.message.length], [404, 100], 'cut at the maxLength the documents give')
  const body = await call(t, app, { method: 'POST', url: `${api}/pets`, payload: { name: 'Rex', categoryId: 1, 'a\nb': 1 } })
  t.equal(body.status, 400)
  t.equal(body.json.message, "body must NOT have additional property 'a\uFFFDb'")
})

t.test('the clients remembered as over their quota are bounded: past 10,000, those whose window ended are dropped', async (t) => {
  const counter = new Counter({ name: 'address', quota: 1, windowS: 2 }, undefined, 'unused')
  const spent = (counter as unknown as { spent: Map<string, number> }).spent
  for (let i = 0; i < 10_000; i++) await counter.consume(`client-${i}`)
  t.equal(spent.size, 10_000)
  t.ok(counter.exhausted('client-9999'), 'each is refused without counting')
  await sleep(2_100)
  await counter.consume('one more')
  t.equal(spent.size, 1, 'the expired ones are gone')
  t.notOk(counter.exhausted('client-9999'), 'and their window is over')
  counter.close()
})

t.test('counted alone, in memory: at once, no promise; windows that ended are dropped once per window length', async (t) => {
  const counter = new Counter({ name: 'key', quota: 2, windowS: 1 }, undefined, 'unused')
  t.teardown(() => counter.close())
  const windows = (counter as unknown as { local: { windows: Map<string, unknown> } }).local.windows
  const first = counter.consume('a')
  t.notOk(first instanceof Promise, 'a count kept in memory is answered at once')
  t.match(first, { remaining: 1, resetS: 1, exceeded: false })
  t.match(counter.consume('a'), { remaining: 0, exceeded: false })
  t.match(counter.consume('a'), { remaining: 0, exceeded: true }, 'past the quota')
  t.match(counter.peek('b'), { remaining: 2, resetS: 1, exceeded: false }, 'a client without a window has the whole quota')
  void counter.consume('b') // (in memory: answered at once, see above)
  t.match(counter.peek('b'), { remaining: 1 }, 'peek does not count')
  t.equal(windows.size, 2)
  await sleep(1_500)
  t.match(counter.peek('a'), { remaining: 2 }, 'a window that ended is whole again')
  void counter.consume('c')
  // the sweeps at 1 s and 2 s drop a and b, whose windows ended at 1 s (the first sweep may come
  // between their two ends); c's ends at 2.5 s, after both
  for (const began = Date.now(); (windows.has('a') || windows.has('b')) && Date.now() - began < 1_400;) await sleep(20)
  t.same([...windows.keys()], ['c'], 'the ended windows are gone; the open one stays')
})
