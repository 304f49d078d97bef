/**
 * Issue 9, health: `/livez` (the process answers) and `/readyz` (the database answers, and the
 * server is not shutting down), without a key, outside the API's base path; on both stores, over real HTTP.
 */
import { request as httpRequest, Agent } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { drain } from '../src/shutdown.js'
import { openStorage } from '../src/repositories.js'
import { api, build, call, logCapture } from './helpers/app.js'
import { sleep } from './helpers/concurrency.js'
import { databaseProxy } from './helpers/database-proxy.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'

const ok = { status: 'ok' }

t.test('on SQLite: /livez and /readyz answer 200 {"status":"ok"} without a key, HEAD as GET, with the protective headers', async (t) => {
  const app = await build(t)
  for (const url of ['/livez', '/readyz']) {
    const got = await call(t, app, { url, key: null })
    t.equal(got.status, 200, url)
    t.strictSame(got.json, ok)
    t.match(got.headers, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' })
    const head = await call(t, app, { method: 'HEAD', url, key: null })
    t.equal(head.status, 200, `HEAD ${url}`)
    t.equal(head.body, '')
    t.equal(head.headers['content-length'], got.headers['content-length'], 'HEAD announces the length GET sends')
  }
  t.equal((await call(t, app, { url: `${api}/livez`, key: null })).status, 404, `outside the API base path: ${api}/livez is no route`)
})

t.test('probes are not written in the access log at the default level (info); at debug they are', async (t) => {
  for (const [level, logged] of [
    ['info', false],
    ['debug', true],
  ] as const) {
    const { lines, logger } = logCapture()
    const app = await build(t, { LOG_LEVEL: level, logger })
    await call(t, app, { url: '/livez', key: null })
    await call(t, app, { url: '/readyz', key: null })
    await call(t, app, { url: `${api}/pets` })
    const urls = lines.filter((line) => line.msg === 'request completed').map((line) => (line.res as { url: string }).url)
    t.strictSame(urls, logged ? ['/livez', '/readyz', `${api}/pets`] : [`${api}/pets`], `LOG_LEVEL=${level}`)
  }
})

/** GET `path` on a connection of `agent`, over real HTTP. */
function get(port: number, path: string, agent?: Agent) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; json: unknown }>((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path, agent }, (response) => {
      let body = ''
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, json: JSON.parse(body) }))
    })
      .on('error', reject)
      .end()
  })
}

t.test('draining (SIGTERM): /readyz is 503 with the Error body and Retry-After at once, /livez stays 200', async (t) => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const agent = new Agent({ keepAlive: true, maxSockets: 2 })
  t.teardown(() => agent.destroy())
  // two keep-alive connections, open before the signal: a balancer's probes arrive on them
  // (readyz both times: a request answered before Node marks it complete closes its connection,
  // which a livez answered in the same turn can be, see request-hooks.ts)
  const before = await Promise.all([get(port, '/readyz', agent), get(port, '/readyz', agent)])
  t.strictSame(
    before.map(({ status }) => status),
    [200, 200],
  )
  await sleep(100) // (the agent takes its sockets back just after the answers end)

  const drained = drain(app, 3_000)
  const [ready, live] = await Promise.all([get(port, '/readyz', agent), get(port, '/livez', agent)])
  t.equal(ready.status, 503)
  t.strictSame(ready.json, { code: 'unavailable', message: 'Not ready: the server is shutting down', status: 503 })
  t.equal(ready.headers['retry-after'], '5')
  t.equal(ready.headers.connection, 'close')
  t.equal(live.status, 200, 'alive while draining: a restart now would cut the requests being finished')
  await drained
})

t.test(
  'on PostgreSQL: 200; down: 503 at once, logged once with the cause; frozen: 503 within the bound; back: 200, logged once',
  { skip: postgresMissing },
  async (t) => {
    const proxy = await databaseProxy(t, new URL(await freshPostgres(t)))
    const { lines, logger } = logCapture()
    // (a statement's timeout far from the probe's 1 s bound, so that a machine slowed by other work
    // cannot blur the two: CI's machine has taken 2.5 times an idle one's time for the whole suite)
    const app = await build(t, { DATABASE_URL: proxy.url, API_KEYS: [], DATABASE_TIMEOUT_MS: 5_000, LOG_LEVEL: 'info', logger })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const readiness = () => lines.filter((line) => /^(not )?ready/.test(String(line.msg)))

    t.equal((await get(port, '/readyz')).status, 200)

    await proxy.down()
    for (let i = 0; i < 3; i++) {
      const started = Date.now()
      const { status, json, headers } = await get(port, '/readyz')
      t.equal(status, 503, `down, probe ${i + 1}`)
      t.strictSame(json, { code: 'unavailable', message: 'Not ready: the database does not answer', status: 503 })
      t.equal(headers['retry-after'], '5')
      t.ok(Date.now() - started < 2_500, 'a refused connection is a 503 at once, not after the 5 s timeout')
    }
    t.equal((await get(port, '/livez')).status, 200, 'alive: the process answers')
    t.equal(readiness().length, 1, 'three failed probes, one log line')
    t.match(
      readiness()[0],
      { level: 40, msg: 'not ready: the database does not answer', err: { message: /ECONNREFUSED|Connection terminated/ } },
      'a warning with the cause',
    )

    await proxy.up()
    let status = 0
    for (let tries = 0; tries < 50 && status !== 200; tries++) {
      status = (await get(port, '/readyz')).status
      if (status !== 200) await sleep(100)
    }
    t.equal(status, 200, 'ready again by itself')
    t.match(readiness()[1], { level: 30, msg: 'ready: the database answers again' })

    proxy.freeze(true)
    // concurrent probes share one statement; each is answered within the 1 s bound, not the 5 s timeout
    const started = Date.now()
    const frozen = await Promise.all([get(port, '/readyz'), get(port, '/readyz'), get(port, '/readyz')])
    const ms = Date.now() - started
    t.strictSame(
      frozen.map((probe) => probe.status),
      [503, 503, 503],
    )
    // (by the 1 s bound, not the statement's 5 s timeout: the log names the bound that ended it)
    t.ok(ms >= 900, `frozen: answered after the 1 s bound (${ms} ms)`)
    t.match(readiness()[2], { level: 40, err: { message: 'no answer within 1000 ms' } })
    proxy.freeze(false)
    status = 0
    for (let tries = 0; tries < 80 && status !== 200; tries++) {
      status = (await get(port, '/readyz')).status
      if (status !== 200) await sleep(100)
    }
    t.equal(status, 200, 'thawed: ready again')
    t.equal(readiness().length, 4, 'one line per change, none per probe')
  },
)

t.test('the readiness bound is DATABASE_TIMEOUT_MS when that is shorter than 1 s', { skip: postgresMissing }, async (t) => {
  const proxy = await databaseProxy(t, new URL(await freshPostgres(t)))
  // migrated first, with the default timeout: a busy machine may take longer than 400 ms for that
  await (await openStorage(proxy.url, { poolSize: 1 })).close()
  const { lines, logger } = logCapture()
  const app = await build(t, { DATABASE_URL: proxy.url, API_KEYS: [], DATABASE_TIMEOUT_MS: 400, LOG_LEVEL: 'info', logger })
  proxy.freeze(true)
  const started = Date.now()
  const response = await call(t, app, { url: '/readyz', key: null })
  t.equal(response.status, 503)
  const ms = Date.now() - started
  // (the log names the bound that ended it: a loaded machine may answer later than 1 s all the same)
  t.ok(ms >= 350, `answered after the 400 ms bound (${ms} ms)`)
  t.match(
    lines.find((line) => line.msg === 'not ready: the database does not answer'),
    { err: { message: 'no answer within 400 ms' } },
    'the 400 ms bound, not the 1 s one',
  )
  proxy.freeze(false)
  // thawed, the pool recovers before the test ends: nothing is left waiting on a dropped statement
  let status = 0
  for (let tries = 0; tries < 80 && status !== 200; tries++) {
    status = (await call(t, app, { url: '/readyz', key: null })).status
    if (status !== 200) await sleep(100)
  }
  t.equal(status, 200, 'thawed: ready again')
})
