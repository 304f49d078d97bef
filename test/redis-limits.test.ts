/**
 * Rate limits shared in Redis: two server processes enforce one limit together; Redis closed,
 * cut or frozen never stops the service (each instance then counts alone, says so once in the
 * log, and shares again when Redis is back).
 */
import t, { type Test } from 'tap'
import { retryAfterFailureMs } from '../src/limits/shared-store.js'
import { StorageUnavailable } from '../src/core/errors.js'
import { api, build, call, logCapture, testKey } from './helpers/app.js'
import { atMost, sleep } from './helpers/concurrency.js'
import { contractViolations } from './helpers/contract.js'
import { type ServerProcess, startServer } from './helpers/processes.js'
import { closedPort, tcpProxy } from './helpers/proxy.js'
import { freshPrefix, redisClient, redisMissing } from './helpers/redis.js'

const wrongKey = 'pet_00000000_not-a-key-of-this-store-00000'

/** A GET of the newest version's pets over HTTP; the response is checked against its document. */
async function listPets(t: Test, server: ServerProcess, key: string) {
  const response = await fetch(`${server.url}${api}/pets`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(10_000) })
  const body = await response.text()
  const headers = Object.fromEntries(response.headers)
  const violations = contractViolations({ method: 'GET', url: `${api}/pets`, status: response.status, headers, body })
  if (violations.length > 0) t.strictSame(violations, [], 'keeps the contract')
  return response.status
}

t.test('two instances sharing Redis enforce one limit together, per key and per address', { skip: redisMissing }, async (t) => {
  const { prefix, keys } = await freshPrefix(t)
  const env = {
    API_KEYS: testKey,
    DATABASE_URL: 'sqlite::memory:',
    REDIS_URL: 'redis://127.0.0.1:6379',
    REDIS_KEY_PREFIX: prefix,
    RATE_LIMIT_PER_KEY: '40',
    RATE_LIMIT_PER_ADDRESS: '6',
    RATE_LIMIT_WINDOW_S: '300',
  }
  // one after the other, each given two minutes: the machine may be busy
  const servers = [await startServer(t, env, 120_000), await startServer(t, env, 120_000)]

  // 120 requests with one key, alternating between the instances, 8 at a time
  const statuses = await atMost(8, 120, async (i) => ({ server: i % 2, status: await listPets(t, servers[i % 2]!, testKey) }))
  const allowed = statuses.filter(({ status }) => status === 200)
  const byInstance = [0, 1].map((server) => allowed.filter((outcome) => outcome.server === server).length)
  t.equal(allowed.length, 40, 'exactly the configured 40 allowed across both instances')
  t.equal(statuses.filter(({ status }) => status === 429).length, 80, 'the other 80 refused')
  t.ok(byInstance[0]! > 0 && byInstance[1]! > 0, 'each instance allowed some')
  t.comment(`per key: ${allowed.length} of 120 requests allowed across 2 instances (${byInstance.join(' + ')}), configured limit 40`)

  // 30 wrong keys from one address, alternating
  const guesses = await atMost(4, 30, async (i) => listPets(t, servers[i % 2]!, `${wrongKey}${i}`))
  const unauthorized = guesses.filter((status) => status === 401).length
  t.equal(unauthorized, 6, 'exactly the configured 6 wrong keys answered 401 across both instances')
  t.equal(guesses.filter((status) => status === 429).length, 24, 'the rest 429')
  t.comment(`per address: ${unauthorized} of 30 wrong-key requests answered 401 across 2 instances, configured limit 6`)

  const stored = (await keys()).sort()
  t.strictSame(
    stored,
    [`${prefix}:address:127.0.0.1`, `${prefix}:key:env:${stored[1]!.split(':env:')[1]}`],
    'one counter per client in Redis, under the prefix',
  )
  const redis = await redisClient(t)
  for (const key of stored) {
    const ttl = await redis.ttl(key)
    t.ok(ttl > 0 && ttl <= 300, `${key} expires with its window (${ttl} s)`)
  }
})

t.test('an instance learns from Redis that a client it has not seen is over its quota: 429 at once', { skip: redisMissing }, async (t) => {
  const { prefix } = await freshPrefix(t)
  const settings = { REDIS_URL: 'redis://127.0.0.1:6379', REDIS_KEY_PREFIX: prefix, RATE_LIMIT_PER_KEY: 2, RATE_LIMIT_PER_ADDRESS: 1, RATE_LIMIT_WINDOW_S: 300 }
  const [first, second] = [await build(t, settings), await build(t, settings)]
  t.strictSame(
    [(await call(t, first, { url: `${api}/pets` })).status, (await call(t, first, { url: `${api}/pets` })).status],
    [200, 200],
    'the quota used up on one',
  )
  const refused = await call(t, second, { url: `${api}/pets` })
  t.equal(refused.status, 429, 'the other refuses the key at its first request')
  t.equal(refused.headers.ratelimit, '"key";r=0;t=300')
  t.ok(Number(refused.headers['retry-after']) > 0, 'with Retry-After')
  t.equal((await call(t, first, { url: `${api}/pets`, key: wrongKey })).status, 401, 'a wrong key, once')
  t.equal((await call(t, second, { url: `${api}/pets`, key: wrongKey })).status, 429, 'and past the address quota on the other')
})

t.test('Redis not reachable at all: the server starts and serves, each instance counting alone, and says so once', async (t) => {
  const { lines, logger } = logCapture()
  const app = await build(t, {
    REDIS_URL: `redis://127.0.0.1:${await closedPort()}`,
    RATE_LIMIT_PER_KEY: 5,
    LOG_LEVEL: 'warn',
    logger,
  })
  const started = Date.now()
  const statuses: number[] = []
  for (let i = 0; i < 8; i++) statuses.push((await call(t, app, { url: `${api}/pets` })).status)
  t.strictSame(statuses, [200, 200, 200, 200, 200, 429, 429, 429], 'the limit still holds, counted here')
  t.ok(Date.now() - started < 2_000, 'without waiting for Redis')
  await sleep(1_500) // ioredis tries to connect again meanwhile
  t.equal((await call(t, app, { url: `${api}/pets` })).status, 429)
  const warnings = lines.filter((line) => String(line.msg).startsWith('Redis is unavailable'))
  t.equal(warnings.length, 1, 'one log line, however many requests and reconnection attempts')
})

t.test(
  'Redis cut, then back, then frozen: no request fails or waits past REDIS_TIMEOUT_MS; counting moves to each instance and back',
  { skip: redisMissing },
  async (t) => {
    const proxy = await tcpProxy(t, 6379)
    const { prefix } = await freshPrefix(t)
    const { lines, logger } = logCapture()
    // (long enough that waiting for it tells apart from not waiting, on a loaded machine too)
    const timeoutMs = 1_000
    const options = {
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
      REDIS_KEY_PREFIX: prefix,
      REDIS_TIMEOUT_MS: timeoutMs,
      RATE_LIMIT_PER_KEY: 100,
      LOG_LEVEL: 'info' as const,
      logger,
    }
    const [a, b] = [await build(t, options), await build(t, options)]
    const changes: boolean[] = []
    a.rateLimits.on('shared', (shared) => changes.push(shared))
    /** the requests left to this key, as an instance's answer says */
    const remaining = async (app: typeof a) => {
      const started = Date.now()
      const response = await call(t, app, { url: `${api}/pets` })
      t.equal(response.status, 200)
      const ms = Date.now() - started
      // (a request that waited for Redis itself would wait for its connect timeout, 10 s, or for ever)
      t.ok(ms <= timeoutMs + 2_000, `answered in ${ms} ms`)
      return Number(/;r=(\d+);/.exec(String(response.headers.ratelimit))![1])
    }
    /** waits (bounded) until `a` counts in Redis again */
    const sharedAgain = async () => {
      for (let tries = 0; tries < 60 && changes.at(-1) !== true; tries++) {
        await sleep(100)
        await remaining(a)
      }
    }
    // both connected to Redis when built
    t.equal(await remaining(a), 99)
    t.equal(await remaining(b), 98, 'the two instances share one count')
    t.equal(await remaining(a), 97)

    await proxy.down()
    const alone = [await remaining(a), await remaining(a), await remaining(b)]
    t.strictSame(alone, [99, 98, 99], 'Redis cut: each instance counts alone, from a whole quota')
    t.strictSame(changes, [false])
    await proxy.up()
    await sleep(retryAfterFailureMs)
    await sharedAgain()
    t.strictSame(changes, [false, true], 'back in Redis once it answers')
    const shared = await remaining(b)
    t.ok(shared < 97, `the shared count goes on from where Redis left it (${shared} left)`)

    proxy.freeze(true)
    const frozenAt = Date.now()
    for (let i = 0; i < 10; i++) await remaining(a)
    t.ok(Date.now() - frozenAt < 10 * timeoutMs, 'ten requests while frozen: one waited for the timeout, the next ones counted alone at once')
    t.equal(changes.at(-1), false)
    proxy.freeze(false)
    await sleep(retryAfterFailureMs)
    await sharedAgain()
    t.equal(changes.at(-1), true, 'and shared again after the freeze')

    const said = lines.map((line) => String(line.msg)).filter((msg) => msg.startsWith('Redis'))
    t.ok(said.filter((msg) => msg.startsWith('Redis is unavailable')).length >= 2, 'each outage is logged (by each instance)')
    t.ok(said.length <= 8, `but once per outage and instance, not per request (${said.length} lines)`)
  },
)

t.test(
  'a key store that cannot answer (503) counts against no one; the answer still says where the address stands, from Redis or alone',
  { skip: redisMissing },
  async (t) => {
    const { prefix } = await freshPrefix(t)
    const proxy = await tcpProxy(t, 6379)
    for (const frozen of [false, true]) {
      const app = await build(t, { REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_KEY_PREFIX: `${prefix}:${frozen}`, RATE_LIMIT_PER_ADDRESS: 3 })
      const name = frozen ? 'Redis frozen' : 'Redis'
      t.equal((await call(t, app, { url: `${api}/pets`, key: wrongKey })).status, 401, `${name}: a wrong key counts`)
      proxy.freeze(frozen)
      // the store down, as PostgreSQL down makes it (test/faults.test.ts)
      app.storage.keys.authenticate = () => Promise.reject(new StorageUnavailable(new Error('ECONNREFUSED')))
      const states = new Set<unknown>()
      for (let i = 0; i < 5; i++) {
        const response = await call(t, app, { url: `${api}/pets`, key: wrongKey })
        t.equal(response.status, 503)
        states.add(/;r=(\d+);/.exec(String(response.headers.ratelimit))?.[1])
      }
      // frozen: Redis times out, and this instance, counting alone, has counted nothing yet
      t.strictSame([...states], [frozen ? '3' : '2'], `${name}: not counted`)
      proxy.freeze(false)
    }
  },
)
