/**
 * Webhooks with several instances on one PostgreSQL database: they share the deliveries (each
 * made by one of them), an instance that dies leaves its claims to the others once their lease
 * has run out, and a subscription waits for the changes under way before it answers 201, so
 * that every change committed after its 201 has its event.
 */
import pg from 'pg'
import t, { type Test } from 'tap'
import { build, call, testKey } from './helpers/app.js'
import { sleep } from './helpers/concurrency.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { type ServerProcess, startServer, within } from './helpers/processes.js'
import { startReceiver, verified } from './helpers/receiver.js'

const webhookEnv = {
  API_KEYS: testKey,
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_POLL_MS: '50',
  WEBHOOK_RETRY_BASE_MS: '100',
  WEBHOOK_TIMEOUT_MS: '500',
  METRICS_PORT: '0',
}
/** The lease of a claim with WEBHOOK_TIMEOUT_MS 500: twice the timeout and 10 s (dispatcher.ts). */
const leaseMs = 11_000

async function send(server: ServerProcess, method: string, path: string, body?: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${testKey}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  })
  return { status: response.status, json: await response.json() }
}

/** A counter of the instance's metrics. */
async function counter(server: ServerProcess, series: string): Promise<number> {
  const url = /"metricsUrl":"(http:\/\/[^"]+)"/.exec(server.stdout())![1]!
  const text = await (await fetch(url)).text()
  return Number(
    text
      .split('\n')
      .find((line) => line.startsWith(`${series} `))
      ?.split(' ')[1],
  )
}

t.test('two instances share the deliveries: each event is delivered once, by one of them', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  // (time enough for a receiver on a busy machine: an attempt that times out is made again, a repeat)
  const env = { ...webhookEnv, DATABASE_URL: url, WEBHOOK_TIMEOUT_MS: '10000' }
  const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)])
  const receiver = await startReceiver(t)
  const { secret } = (await send(a, 'POST', '/v1/webhooks', { url: receiver.url, events: ['pet.created'] })).json as { secret: string }
  const count = 200
  const pets = await Promise.all(Array.from({ length: count }, (_, i) => send(i % 2 ? a : b, 'POST', '/v1/pets', { name: `Pet ${i}`, categoryId: 1 })))
  await receiver.waitFor(count, 30_000)
  await sleep(500)
  const events = receiver.deliveries.map((delivery) => verified(t, delivery, secret))
  t.equal(events.length, count, 'no event twice')
  t.strictSame(
    events.map((event) => event.data.id).sort((x, y) => x - y),
    pets.map((pet) => (pet.json as { id: number }).id).sort((x, y) => x - y),
    'one event per pet',
  )
  const [byA, byB] = await Promise.all([a, b].map((server) => counter(server, 'petstore_webhook_attempts_total{result="succeeded"}')))
  t.equal(byA! + byB!, count)
  t.ok(byA! > 0 && byB! > 0, `both instances delivered (${byA} and ${byB})`)
})

t.test('a delivery claimed by an instance that died is taken over once its lease has run out', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  const a = await startServer(t, { ...webhookEnv, DATABASE_URL: url })
  // the first attempt never gets an answer: it is under way when its instance dies
  const receiver = await startReceiver(t, (n) => (n === 0 ? 'hang' : 204))
  const { secret } = (await send(a, 'POST', '/v1/webhooks', { url: receiver.url, events: ['pet.created'] })).json as { secret: string }
  const pet = (await send(a, 'POST', '/v1/pets', { name: 'Rex', categoryId: 1 })).json
  await receiver.waitFor(1)
  const diedAt = Date.now()
  a.child.kill('SIGKILL')
  await a.exited
  const b = await startServer(t, { ...webhookEnv, DATABASE_URL: url })
  const [, again] = await receiver.waitFor(2, leaseMs + 15_000)
  const after = again!.at - diedAt
  t.ok(after >= leaseMs - 1_000, `not before the lease ran out (${after} ms after the death)`)
  t.strictSame(verified(t, again!, secret).data, pet, 'the other instance delivered it')
  t.equal(await counter(b, 'petstore_webhook_attempts_total{result="succeeded"}'), 1)
})

t.test('createWebhook waits for a change under way: a change committed after its 201 has its event', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  const server = await build(t, { DATABASE_URL: url, DATABASE_POOL_SIZE: 4, WEBHOOK_ALLOW_HTTP: true, WEBHOOK_ALLOW_PRIVATE: true, WEBHOOK_POLL_MS: 20 })
  const receiver = await startReceiver(t)
  // A change on another connection, as an instance whose in-memory view is older would make it:
  // it has decided that no subscription takes pet.created, and has not committed yet.
  const other = new pg.Client({ connectionString: url })
  await other.connect()
  t.teardown(() => other.end())
  await other.query('begin')
  await other.query(
    `insert into pets (name, category_id, status) select 'Under way', 1, 'available'
     where not exists (select 1 from webhook_subscription_events where type = 'pet.created')`,
  )
  let answered = false
  const subscribing = call(t, server, { method: 'POST', url: '/v1/webhooks', payload: { url: receiver.url, events: ['pet.created'] } }).then((answer) => {
    answered = true
    return answer
  })
  await sleep(500)
  t.notOk(answered, 'createWebhook waits while the change is under way')
  await other.query('commit')
  const { json } = await within(10_000, subscribing)
  t.ok(answered, 'and answers once it has committed')
  // every change from now on is recorded for it
  const pet = (await call(t, server, { method: 'POST', url: '/v1/pets', payload: { name: 'After', categoryId: 1 } })).json
  const [delivery] = await receiver.waitFor(1)
  t.strictSame(verified(t, delivery!, json.secret).data, pet)
  await sleep(200)
  t.equal(receiver.deliveries.length, 1, 'the change committed before the 201 may go without')
})

async function raceOn(t: Test, options: Record<string, unknown>) {
  const server = await build(t, { ...options, WEBHOOK_ALLOW_HTTP: true, WEBHOOK_ALLOW_PRIVATE: true, WEBHOOK_POLL_MS: 20 })
  const receiver = await startReceiver(t)
  let subscribedAt = Number.POSITIVE_INFINITY
  const startedAfter: number[] = []
  let secret = ''
  const creating = Array.from({ length: 4 }, async (_, client) => {
    for (let i = 0; i < 60; i++) {
      const sentAt = Date.now()
      const pet = (await call(t, server, { method: 'POST', url: '/v1/pets', payload: { name: `Pet ${client}-${i}`, categoryId: 1 } })).json
      if (sentAt > subscribedAt) startedAfter.push(pet.id)
    }
  })
  await sleep(30)
  const subscribed = await call(t, server, { method: 'POST', url: '/v1/webhooks', payload: { url: receiver.url, events: ['pet.created'] } })
  subscribedAt = Date.now()
  secret = subscribed.json.secret
  await Promise.all(creating)
  t.ok(startedAfter.length > 0, `${startedAfter.length} creates were sent after the 201`)
  const ids = () => new Set(receiver.deliveries.map((delivery) => JSON.parse(delivery.body).data.id as number))
  const deadline = Date.now() + 20_000
  while (startedAfter.some((id) => !ids().has(id)) && Date.now() < deadline) await sleep(20)
  const delivered = new Set(receiver.deliveries.map((delivery) => verified(t, delivery, secret).data.id))
  t.strictSame(
    startedAfter.filter((id) => !delivered.has(id)),
    [],
    `every create sent after the 201 has its event (${delivered.size} delivered)`,
  )
}

t.test('SQLite: creates racing a subscription: every one sent after its 201 has its event', async (t) => {
  await raceOn(t, {})
})

t.test('PostgreSQL: creates racing a subscription: every one sent after its 201 has its event', { skip: postgresMissing }, async (t) => {
  await raceOn(t, { DATABASE_URL: await freshPostgres(t), DATABASE_POOL_SIZE: 4 })
})
