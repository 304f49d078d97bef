/**
 * Issue 9, metrics: Prometheus text on a listener of its own, scraped over real HTTP after real
 * requests, on both stores.
 */
import { once } from 'node:events'
import { connect, createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { Gauge } from 'prom-client'
import { aCategory, api, build, newest, testKey } from './helpers/app.js'
import { databaseProxy } from './helpers/database-proxy.js'
import { freshPostgres, postgresMissing, query } from './helpers/postgres.js'
import { sleep } from './helpers/concurrency.js'
import { startServer, within } from './helpers/processes.js'

/** One sample of the exposition: name, labels, value. */
interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

function parse(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
      if (match === null) throw new Error(`not a sample: ${line}`)
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map(([, name, value]) => [name!, value!]))
      return { name: match[1]!, labels, value: Number(match[3]) }
    })
}

/** The value of the one sample named so with these labels (undefined when absent). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted))
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`)
  return found[0]?.value
}

async function scrape(url: string): Promise<Sample[]> {
  const response = await fetch(url)
  if (response.status !== 200) throw new Error(`scrape: ${response.status}`)
  return parse(await response.text())
}

/** An app listening on a free port, and its metrics listener on another. */
async function served(t: Test, options: Parameters<typeof build>[1] = {}) {
  const app = await build(t, options)
  const origin = await app.listen({ port: 0, host: '127.0.0.1' })
  const metrics = await app.metrics.listen({ port: 0, host: '127.0.0.1' })
  const send = (path: string, init: RequestInit & { key?: string | null } = {}) => {
    const { key = testKey, ...rest } = init
    return fetch(`${origin}${path}`, {
      ...rest,
      headers: { ...(key !== null && { authorization: `Bearer ${key}` }), 'content-type': 'application/json', ...rest.headers },
    }).then(async (response) => ({ status: response.status, body: await response.text() }))
  }
  return { app, origin, metrics, send }
}

const requests = 'petstore_http_request_duration_seconds'

t.test(
  'SQLite: requests counted by operationId and status, unmatched ones as "unmatched", probes and docs by route; histogram buckets cumulative',
  async (t) => {
    const { app, metrics, send } = await served(t)
    const rex = JSON.stringify({ name: 'Rex', categoryId: await aCategory(app) })
    const creates = await Promise.all(Array.from({ length: 5 }, () => send(`${api}/pets`, { method: 'POST', body: rex })))
    t.strictSame(
      creates.map(({ status }) => status),
      [201, 201, 201, 201, 201],
    )
    const published = newest.service.paths.json
    for (let i = 0; i < 3; i++) await send(`${api}/pets?limit=2`)
    await send(`${api}/store/orders/999`)
    await send(`${api}/pets`, { key: null })
    await send(`${api}/pets`, { method: 'POST', body: '{"name":', key: testKey })
    await send('/nowhere')
    await send(`${api}/pets`, { method: 'DELETE' })
    await send(`${api}/store/orders/%zz`)
    await send('/livez', { key: null })
    await send('/readyz', { key: null, method: 'HEAD' })
    await send(published, { key: null })

    const samples = await scrape(metrics)
    const count = (operation: string, status: string) => value(samples, `${requests}_count`, { operation, status })
    t.equal(count('createPet', '201'), 5)
    t.equal(count('listPets', '200'), 3)
    t.equal(count('getOrder', '404'), 1)
    t.equal(count('listPets', '401'), 1, 'a refused request is counted under its operation')
    t.equal(count('createPet', '400'), 1)
    t.equal(count('unmatched', '404'), 1, 'a path the API lacks')
    t.equal(count('unmatched', '405'), 1, 'a method the path lacks')
    t.equal(count('unmatched', '400'), 1, 'a malformed URL, answered before routing')
    t.equal(count('/livez', '200'), 1)
    t.equal(count('/readyz', '200'), 1, 'HEAD as GET')
    t.equal(count(published, '200'), 1)
    const operations = new Set(samples.filter((s) => s.name === `${requests}_count`).map((s) => s.labels.operation))
    t.strictSame(
      [...operations].sort(),
      ['/livez', '/readyz', published, 'createPet', 'getOrder', 'listPets', 'unmatched'].sort(),
      'no path or id becomes a label',
    )

    const buckets = samples.filter((s) => s.name === `${requests}_bucket` && s.labels.operation === 'listPets' && s.labels.status === '200')
    t.strictSame(
      buckets.map((b) => b.labels.le),
      ['0.001', '0.0025', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf'],
    )
    t.ok(
      buckets.every((b, i) => i === 0 || b.value >= buckets[i - 1]!.value),
      'cumulative',
    )
    t.equal(buckets.at(-1)!.value, 3, '+Inf holds every request')
    const sum = value(samples, `${requests}_sum`, { operation: 'listPets', status: '200' })!
    t.ok(sum > 0 && sum < 3 * 10, `seconds, not milliseconds (sum ${sum})`)

    t.equal(value(samples, 'petstore_db_commits_total')! >= 1, true, 'creates were committed')
    t.ok(value(samples, 'petstore_db_commits_total')! <= 5, 'in at most one commit each')
    t.equal(value(samples, 'petstore_db_committed_writes_total'), 5)
    t.ok(value(samples, 'petstore_db_commit_seconds_total')! > 0)
    t.equal(value(samples, 'petstore_db_commit_queued_writes'), 0)
    t.equal(value(samples, 'petstore_db_pool_open_connections'), undefined, 'SQLite has no pool to report')
    t.ok(value(samples, 'process_resident_memory_bytes')! > 0, "the process's own metrics too")
    t.ok(value(samples, 'nodejs_eventloop_lag_seconds') !== undefined)

    // counters keep counting across scrapes
    await send(`${api}/pets`, { method: 'POST', body: rex })
    const later = await scrape(metrics)
    t.equal(value(later, 'petstore_db_committed_writes_total'), 6)
    t.equal(value(later, `${requests}_count`, { operation: 'createPet', status: '201' }), 6)
  },
)

t.test('rate-limit refusals: both reasons from 0; the limiter counts through app.metrics.rateLimitRefused', async (t) => {
  const { app, metrics } = await served(t)
  t.equal(value(await scrape(metrics), 'petstore_rate_limit_refusals_total', { reason: 'key' }), 0)
  t.equal(value(await scrape(metrics), 'petstore_rate_limit_refusals_total', { reason: 'address' }), 0)
  app.metrics.rateLimitRefused('key')
  app.metrics.rateLimitRefused('key')
  app.metrics.rateLimitRefused('address')
  const samples = await scrape(metrics)
  t.equal(value(samples, 'petstore_rate_limit_refusals_total', { reason: 'key' }), 2)
  t.equal(value(samples, 'petstore_rate_limit_refusals_total', { reason: 'address' }), 1)
})

t.test('connections refused past MAX_CONNECTIONS are counted', async (t) => {
  const { origin, metrics } = await served(t, { MAX_CONNECTIONS: 1 })
  const { port } = new URL(origin)
  const first = connect(Number(port), '127.0.0.1')
  t.teardown(() => first.destroy())
  await once(first, 'connect')
  await sleep(50)
  const second = connect(Number(port), '127.0.0.1')
  second.on('error', () => {})
  await once(second, 'close')
  let refused: number | undefined
  for (let tries = 0; tries < 20 && refused !== 1; tries++) {
    refused = value(await scrape(metrics), 'petstore_http_refused_connections_total')
    if (refused !== 1) await sleep(50)
  }
  t.equal(refused, 1)
})

t.test(
  'PostgreSQL: pool and read-connection gauges, read at scrape time; writes waiting for the one connection show, and reads waiting for their answers',
  { skip: postgresMissing },
  async (t) => {
    const proxy = await databaseProxy(t, new URL(await freshPostgres(t)))
    // (the webhook dispatcher looks for deliveries on the same pool: once a minute here, so that the
    // requests below are the only ones waiting for its connection)
    const { app, metrics, send } = await served(t, {
      DATABASE_URL: proxy.url,
      DATABASE_POOL_SIZE: 1,
      DATABASE_READ_CONNECTIONS: 1,
      DATABASE_TIMEOUT_MS: 3_000,
      WEBHOOK_POLL_MS: 60_000,
    })
    const rex = { method: 'POST', body: JSON.stringify({ name: 'Rex', categoryId: await aCategory(app) }) }
    const pet = JSON.parse((await send(`${api}/pets`, rex)).body) as { id: number }
    // (the service's own background reads, the webhook dispatcher's first look among them, may be
    // on their way at the first scrape: they are answered within moments)
    let samples = await scrape(metrics)
    for (let tries = 0; tries < 40 && value(samples, 'petstore_db_read_unanswered_statements') !== 0; tries++) {
      await sleep(25)
      samples = await scrape(metrics)
    }
    t.equal(value(samples, 'petstore_db_pool_max_connections'), 1)
    t.equal(value(samples, 'petstore_db_pool_open_connections'), 1)
    t.equal(value(samples, 'petstore_db_pool_idle_connections'), 1)
    t.equal(value(samples, 'petstore_db_pool_waiting_requests'), 0)
    t.equal(value(samples, 'petstore_db_read_max_connections'), 1)
    t.equal(value(samples, 'petstore_db_read_open_connections'), 1, 'opened by the check at start')
    t.equal(value(samples, 'petstore_db_read_unanswered_statements'), 0)
    t.equal(value(samples, 'petstore_db_commits_total'), undefined, 'PostgreSQL groups commits itself')
    t.equal(value(samples, `${requests}_count`, { operation: 'createPet', status: '201' }), 1)

    // the database hangs: the first order (a transaction) holds the connection, three more wait for
    // it; the reads are all sent, on the one read connection, and wait for their answers
    proxy.freeze(true)
    const order = { method: 'POST', body: JSON.stringify({ petId: pet.id }) }
    const stuck = [...Array.from({ length: 4 }, () => send(`${api}/store/orders`, order)), ...Array.from({ length: 2 }, () => send(`${api}/pets?limit=1`))]
    let waiting: [number | undefined, number | undefined] = [undefined, undefined]
    for (let tries = 0; tries < 40 && !(waiting[0] === 3 && waiting[1] === 2); tries++) {
      await sleep(25)
      samples = await scrape(metrics)
      waiting = [value(samples, 'petstore_db_pool_waiting_requests'), value(samples, 'petstore_db_read_unanswered_statements')]
    }
    t.strictSame(waiting, [3, 2], 'three orders wait for the connection, two reads for their answers')
    t.equal(value(samples, 'petstore_db_pool_idle_connections'), 0, 'none idle')
    t.equal(value(samples, 'petstore_db_pool_open_connections'), 1)
    const statuses = (await Promise.all(stuck)).map(({ status }) => status)
    t.ok(
      statuses.every((status) => status === 503),
      `each answered 503 (${statuses.join(',')})`,
    )
    proxy.freeze(false)
    samples = await scrape(metrics)
    t.equal(value(samples, `${requests}_count`, { operation: 'placeOrder', status: '503' }), 4)
    t.equal(value(samples, `${requests}_count`, { operation: 'listPets', status: '503' }), 2)
    t.equal(value(samples, 'petstore_db_read_unanswered_statements'), 0, 'none left unanswered')
  },
)

t.test('PostgreSQL with DATABASE_READ_CONNECTIONS=0: reads use the pool, and there are no read gauges', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  const { metrics, send } = await served(t, { DATABASE_URL: url, DATABASE_POOL_SIZE: 1, DATABASE_READ_CONNECTIONS: 0, WEBHOOK_POLL_MS: 60_000 })
  t.equal((await send(`${api}/pets?limit=1`)).status, 200)
  const samples = await scrape(metrics)
  t.equal(value(samples, 'petstore_db_pool_open_connections'), 1, 'the read was made on the pool')
  t.equal(value(samples, 'petstore_db_read_max_connections'), undefined)
  t.equal(value(samples, 'petstore_db_read_open_connections'), undefined)
  const { rows } = await query(
    url,
    "select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and query not ilike 'listen %'",
  )
  t.equal(rows[0].n, 1, 'one connection: the pool’s')
})

t.test('the metrics listener: GET and HEAD /metrics in the text format; 404 elsewhere, 405 for other methods, in the Error shape', async (t) => {
  const { metrics } = await served(t)
  const got = await fetch(metrics)
  t.equal(got.status, 200)
  t.equal(got.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8')
  t.equal(got.headers.get('cache-control'), 'no-store')
  t.match(await got.text(), /^# HELP petstore_http_request_duration_seconds /m)
  const head = await fetch(metrics, { method: 'HEAD' })
  t.equal(head.status, 200)
  t.equal(await head.text(), '')

  const elsewhere = await fetch(new URL(`${api}/pets`, metrics))
  t.equal(elsewhere.status, 404)
  t.strictSame(await elsewhere.json(), { code: 'not_found', message: `No route GET ${api}/pets: metrics are at /metrics`, status: 404 })
  const posted = await fetch(metrics, { method: 'POST', body: 'x' })
  t.equal(posted.status, 405)
  t.equal(posted.headers.get('allow'), 'GET, HEAD')
  t.match(await posted.json(), { code: 'method_not_allowed', status: 405 })
})

t.test('a collector that fails: the scrape is a 500 in the Error shape, the listener stays up', async (t) => {
  const { app, metrics } = await served(t)
  new Gauge({
    name: 'broken',
    help: 'fails',
    registers: [app.metrics.registry],
    collect() {
      throw new Error('no numbers today')
    },
  })
  const failed = await fetch(metrics)
  t.equal(failed.status, 500)
  t.strictSame(await failed.json(), { code: 'internal_error', message: 'Metrics could not be collected: no numbers today', status: 500 })
  app.metrics.registry.removeSingleMetric('broken')
  t.equal((await fetch(metrics)).status, 200)
})

t.test('the listener closes with the app; IPv6 hosts are written in brackets; a port in use is an error naming the variables', async (t) => {
  const app = await build(t)
  const url = await app.metrics.listen({ port: 0, host: '::1' })
  t.match(url, /^http:\/\/\[::1\]:\d+\/metrics$/)
  t.equal((await fetch(url)).status, 200)

  const taken = createServer().listen(0, '127.0.0.1')
  await once(taken, 'listening')
  t.teardown(() => taken.close())
  const { port } = taken.address() as AddressInfo
  await t.rejects(app.metrics.listen({ port, host: '127.0.0.1' }), {
    code: 'EADDRINUSE',
    syscall: 'listen',
    message: /^metrics listener \(METRICS_HOST, METRICS_PORT\): listen EADDRINUSE/,
  })

  await app.close()
  await t.rejects(fetch(url), { message: 'fetch failed' }, 'closed')
})

t.test('the server: METRICS_PORT starts the listener (logged), SIGTERM closes it; unset, there is none', async (t) => {
  const server = await startServer(t, { DATABASE_URL: 'sqlite::memory:', API_KEYS: testKey, METRICS_PORT: '0' })
  const metricsUrl = /"metricsUrl":"(http:\/\/127\.0\.0\.1:\d+\/metrics)"/.exec(server.stdout())?.[1]
  t.ok(metricsUrl, 'its URL is logged')
  await fetch(`${server.url}${api}/pets`, { headers: { authorization: `Bearer ${testKey}` } })
  t.equal(value(await scrape(metricsUrl!), `${requests}_count`, { operation: 'listPets', status: '200' }), 1)
  t.not(new URL(metricsUrl!).port, new URL(server.url).port, 'not the API port')
  t.equal((await fetch(`${server.url}/metrics`)).status, 404, 'the API port does not serve metrics')
  server.child.kill('SIGTERM')
  t.equal((await within(20_000, server.exited)).code, 0)
  await t.rejects(fetch(metricsUrl!), { message: 'fetch failed' }, 'closed with the server')

  const plain = await startServer(t, { DATABASE_URL: 'sqlite::memory:', API_KEYS: testKey })
  t.notMatch(plain.stdout(), /metricsUrl/, 'off unless METRICS_PORT is set')
})
