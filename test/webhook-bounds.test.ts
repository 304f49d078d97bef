/**
 * A delivery's record says what was sent and answered, and deliveries keep their bounds, on
 * each store with real receivers: attempts under way when a 410 disables their subscription are
 * recorded as they ended; a receiver whose attempts fail gets no new batch while they are under
 * way, nor while its circuit is open; a held delivery (Retry-After, an open circuit) shows when
 * it will be attempted, and ends `failed` when its retry period ends; a host that cannot be a
 * host name is the client's error.
 */
import type { ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { build, call } from './helpers/app.js'
import { sleep } from './helpers/concurrency.js'
import { createPets, deliveriesOf, metric, type Store, stores, subscribed, until } from './helpers/webhooks.js'
import { postgresMissing } from './helpers/postgres.js'
import { startReceiver } from './helpers/receiver.js'

/** Receivers on 127.0.0.1 over http, looked for often, retried soon. */
const quick = { WEBHOOK_ALLOW_HTTP: true, WEBHOOK_ALLOW_PRIVATE: true, WEBHOOK_POLL_MS: 20, WEBHOOK_RETRY_BASE_MS: 50 }

const webhookOf = async (t: Test, server: FastifyInstance, id: number) => (await call(t, server, { url: `/v1/webhooks/${id}` })).json

interface Shown {
  id: number
  status: string
  attempts: number
  lastStatus?: number
  lastError?: string
  nextAttemptAt?: string
  createdAt: string
}

function boundsOn(name: string, store: Store) {
  t.test(`${name}: attempts under way when a 410 disables the subscription are recorded as they ended`, async (t) => {
    const server = await build(t, { ...(await store(t)), ...quick, WEBHOOK_CIRCUIT_FAILURES: 1_000 })
    const held: ServerResponse[] = []
    const receiver = await startReceiver(t, (_n, _delivery, response) => (held.push(response), 'handled'))
    const { id } = await subscribed(t, server, receiver.url)
    await createPets(server, 4)
    await receiver.waitFor(4)
    // the first is answered 410; the others, under way meanwhile, once the subscription is disabled
    held[0]!.writeHead(410).end()
    await until('disabled', async () => ((await webhookOf(t, server, id)).status === 'disabled' ? true : undefined))
    held[1]!.writeHead(200).end()
    held[2]!.writeHead(204).end()
    held[3]!.writeHead(500).end()
    const ended = await until('all ended', async () => {
      const found: Shown[] = await deliveriesOf(t, server, id)
      return found.every((delivery) => delivery.status !== 'pending') ? found : undefined
    })
    const byStatus = new Map(ended.map((delivery) => [delivery.lastStatus, delivery]))
    t.match(byStatus.get(410), { status: 'failed', attempts: 1, lastError: 'answered 410 Gone: the subscription is disabled' })
    t.match(byStatus.get(200), { status: 'succeeded', attempts: 1 }, 'sent and answered 200: succeeded')
    t.notOk('lastError' in byStatus.get(200)!)
    t.match(byStatus.get(204), { status: 'succeeded', attempts: 1 })
    t.match(byStatus.get(500), { status: 'failed', attempts: 1, lastError: 'answered 500, not retried: the subscription is disabled' }, 'not retried')
    await sleep(200)
    t.equal(receiver.deliveries.length, 4, 'nothing more is sent')
    t.equal(await metric(server, 'petstore_webhook_deliveries_total{result="succeeded"}'), 2)
    t.equal(await metric(server, 'petstore_webhook_deliveries_total{result="failed"}'), 2, 'the 410, and the retry not made')
  })

  t.test(`${name}: hanging receivers get no new attempt once one has failed, nor while their circuits are open`, async (t) => {
    // attempts time out after 2 s; circuits open for longer than the test
    const server = await build(t, { ...(await store(t)), ...quick, WEBHOOK_TIMEOUT_MS: 2_000, WEBHOOK_CIRCUIT_OPEN_MS: 60_000 })
    const hanging = await Promise.all(Array.from({ length: 5 }, () => startReceiver(t, () => 'hang')))
    const fast = await startReceiver(t)
    for (const receiver of hanging) await subscribed(t, server, receiver.url)
    await subscribed(t, server, fast.url)
    // each hanging receiver holds 16 attempts (WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION), then more
    // pets are due, one every 20 ms, as those attempts time out one by one
    await createPets(server, 16)
    const lastOfFirst = Math.max(...(await Promise.all(hanging.map(async (receiver) => (await receiver.waitFor(16, 1_800)).at(-1)!.at))))
    for (let i = 0; i < 24; i++) {
      await createPets(server, 1)
      await sleep(20)
    }
    await fast.waitFor(40)
    await sleep(lastOfFirst + 2_500 - Date.now()) // every attempt made has timed out, its outcome written
    t.strictSame(
      hanging.map((receiver) => receiver.deliveries.length),
      [16, 16, 16, 16, 16],
      'each hanging receiver got its 16, and nothing more before its probe',
    )
  })

  t.test(`${name}: a delivery held by a Retry-After shows when it will be attempted, and ends failed when its retry period ends`, async (t) => {
    const server = await build(t, { ...(await store(t)), ...quick, WEBHOOK_RETRY_PERIOD_S: 2 })
    const receiver = await startReceiver(t, (n, _delivery, response) => (n === 0 ? (response.writeHead(503, { 'retry-after': '120' }).end(), 'handled') : 204))
    const { id } = await subscribed(t, server, receiver.url)
    await createPets(server, 1)
    await until('the first failed', async () => ((await deliveriesOf(t, server, id))[0]?.status === 'failed' ? true : undefined))
    await createPets(server, 1)
    const [first, second] = (await deliveriesOf(t, server, id)) as Shown[]
    t.match(
      first,
      { status: 'failed', attempts: 1, lastStatus: 503, lastError: 'answered 503, Retry-After 120' },
      'a wait past the retry period ends it at once',
    )
    t.match(second, { status: 'pending', attempts: 0 })
    t.notOk('nextAttemptAt' in second!, 'no attempt will be made before its retry period ends: no nextAttemptAt')
    const ended = await until('the second ended', async () => {
      const found = (await deliveriesOf(t, server, id))[1] as Shown
      return found.status === 'failed' ? found : undefined
    })
    t.strictSame(
      { status: ended.status, attempts: ended.attempts, lastError: ended.lastError },
      { status: 'failed', attempts: 0, lastError: "its retry period ended while its receiver's Retry-After held it" },
    )
    t.equal(receiver.deliveries.length, 1, 'never sent')
  })

  t.test(`${name}: a delivery held by a Retry-After within its retry period shows when the wait ends`, async (t) => {
    const server = await build(t, { ...(await store(t)), ...quick })
    const receiver = await startReceiver(t, (n, _delivery, response) => (n === 0 ? (response.writeHead(429, { 'retry-after': '3' }).end(), 'handled') : 204))
    const { id } = await subscribed(t, server, receiver.url)
    await createPets(server, 1)
    await receiver.waitFor(1)
    const first = await until('the first answered', async () => {
      const found = (await deliveriesOf(t, server, id))[0] as Shown
      return found.lastStatus === 429 ? found : undefined
    })
    await createPets(server, 1)
    const second = ((await deliveriesOf(t, server, id)) as Shown[])[1]!
    t.equal(second.nextAttemptAt, first.nextAttemptAt, 'held by its subscription: due when the Retry-After ends, not at its creation')
    t.ok(Date.parse(second.nextAttemptAt!) > Date.parse(second.createdAt) + 1_000, 'later than its creation')
    const arrived = await receiver.waitFor(3)
    t.ok(arrived[1]!.at >= Date.parse(first.nextAttemptAt!) - 5, 'attempted when it said')
  })

  t.test(`${name}: a delivery held by an open circuit shows when the probe comes, and ends failed when its retry period ends`, async (t) => {
    const server = await build(t, { ...(await store(t)), ...quick, WEBHOOK_RETRY_PERIOD_S: 2, WEBHOOK_CIRCUIT_FAILURES: 1, WEBHOOK_CIRCUIT_OPEN_MS: 1_000 })
    const receiver = await startReceiver(t, () => 500)
    const { id } = await subscribed(t, server, receiver.url)
    await createPets(server, 1)
    await receiver.waitFor(1)
    await until('the circuit open', async () => ('failingSince' in (await webhookOf(t, server, id)) ? true : undefined))
    await createPets(server, 1)
    const now = Date.now()
    const shown = (await deliveriesOf(t, server, id)) as Shown[]
    for (const delivery of shown) {
      t.equal(delivery.status, 'pending')
      t.ok(Date.parse(delivery.nextAttemptAt!) >= now + 500, `due when the circuit's probe comes, not before: ${delivery.nextAttemptAt}`)
    }
    // the probe fails: the circuit opens for 2 s, past the retry period of both
    const ended = await until(
      'both ended',
      async () => {
        const found = (await deliveriesOf(t, server, id)) as Shown[]
        return found.every((delivery) => delivery.status === 'failed') ? found : undefined
      },
      5_000,
    )
    t.match(ended, [
      { lastError: "its retry period ended while its subscription's circuit was open" },
      { lastError: "its retry period ended while its subscription's circuit was open" },
    ])
    t.equal(receiver.deliveries.length, 2, 'the first attempt and the probe')
  })

  t.test(`${name}: a host that cannot be a host name is a 400; one that can but does not resolve a 422`, async (t) => {
    const server = await build(t, { ...(await store(t)), ...quick })
    const label = (length: number) => 'a'.repeat(length)
    const named = (host: string) => call(t, server, { method: 'POST', url: '/v1/webhooks', payload: { url: `https://${host}/hooks`, events: ['pet.created'] } })
    const long = `${label(63)}.${label(63)}.${label(63)}.${label(54)}.invalid` // 254 characters
    for (const host of [long, `${long}x`, `${label(64)}.invalid`, `hooks..invalid`]) {
      const answer = await named(host)
      t.equal(answer.status, 400, `${host.length} characters`)
      t.strictSame(answer.json, {
        code: 'invalid_request',
        message: `body/url: https://${host}/ is not a URL that can be used: a host name has at most 253 characters, in labels of 1 to 63 between its dots`,
        status: 400,
      })
    }
    for (const host of [long.slice(1), `${long.slice(1)}.`, `${label(63)}.invalid`]) {
      const answer = await named(host)
      t.equal(answer.status, 422, `${host.length} characters: a host name, which does not resolve`)
      t.equal(answer.json.code, 'webhook_url_not_allowed')
    }
  })
}

for (const [name, store] of stores) {
  if (name === 'PostgreSQL' && postgresMissing) t.test(name, { skip: postgresMissing }, async () => {})
  else boundsOn(name, store)
}
