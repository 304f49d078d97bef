/**
 * What a receiver's answer makes of its subscription, on each store: 410 Gone disables it (its
 * status says so and why, its pending deliveries end, nothing more is recorded or sent) until
 * its owner enables it again; a subscription whose every attempt fails for
 * WEBHOOK_DISABLE_AFTER_S is disabled too; a 429 or 503 with Retry-After (seconds or a date) is
 * retried when it asks, within WEBHOOK_RETRY_AFTER_MAX_S, and the subscription waits as long.
 */
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { AppOptions } from '../src/app.js'
import { openStorage } from '../src/repositories.js'
import { startDispatcher } from '../src/webhooks/dispatcher.js'
import { outcomeOf } from '../src/webhooks/outcome.js'
import { retryAfterMs } from '../src/webhooks/retry-after.js'
import { newSecret } from '../src/webhooks/signing.js'
import { build, call, logCapture, testKey } from './helpers/app.js'
import { sleep } from './helpers/concurrency.js'
import { deliveriesOf, metric, subscribed, until } from './helpers/webhooks.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { startReceiver, verified } from './helpers/receiver.js'
import { petEvents } from '../src/pets/events.js'

const otherKey = 'other-key-5b1e07'
/** Receivers on 127.0.0.1 over http; looked for often, retried soon; no circuit opens. */
const quick = {
  API_KEYS: [testKey, otherKey],
  WEBHOOK_ALLOW_HTTP: true,
  WEBHOOK_ALLOW_PRIVATE: true,
  WEBHOOK_POLL_MS: 20,
  WEBHOOK_RETRY_BASE_MS: 50,
  WEBHOOK_CIRCUIT_FAILURES: 1_000,
}

type Store = (t: Test) => Promise<Partial<AppOptions>>
const stores: [string, Store][] = [
  ['SQLite', async () => ({})],
  ['PostgreSQL', async (t) => ({ DATABASE_URL: await freshPostgres(t), DATABASE_POOL_SIZE: 4 })],
]

/** The subscriptions disabled for `reason`, once one is counted: the dispatcher counts it right
 * after its change is committed, which a read of the subscription may see first. */
const counted = (server: FastifyInstance, reason: 'gone' | 'failing') =>
  until(`one disabled for ${reason}, counted`, async () => {
    const count = await metric(server, `petstore_webhook_disabled_subscriptions_total{reason="${reason}"}`)
    return count > 0 ? count : undefined
  })

const createPet = async (t: Test, server: FastifyInstance, name: string) =>
  (await call(t, server, { method: 'POST', url: '/v1/pets', payload: { name, categoryId: 1 } })).json

function disablingOn(name: string, store: Store) {
  t.test(`${name}: 410 Gone disables the subscription: its pending deliveries end, nothing more is sent, until enableWebhook`, async (t) => {
    const { lines, logger } = logCapture()
    // (one attempt at a time: the others are pending when the 410 comes)
    const server = await build(t, { ...(await store(t)), ...quick, WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: 1, LOG_LEVEL: 'info', logger })
    let gone = true
    // the 410 is held until all three deliveries are recorded (a disabled subscription records no more)
    let answerGone = () => {}
    const recorded = new Promise<void>((resolve) => (answerGone = resolve))
    const receiver = await startReceiver(t, (_index, _delivery, response) => {
      if (!gone) return 204
      void recorded.then(() => response.writeHead(410).end())
      return 'handled'
    })
    const kept = await startReceiver(t)
    const { id, secret } = await subscribed(t, server, receiver.url)
    await subscribed(t, server, kept.url)
    for (const pet of ['A', 'B', 'C']) await createPet(t, server, pet)
    await until('three recorded', async () => ((await deliveriesOf(t, server, id)).length === 3 ? true : undefined))
    answerGone()
    const disabled = await until('disabled', async () => {
      const webhook = (await call(t, server, { url: `/v1/webhooks/${id}` })).json
      return webhook.status === 'disabled' ? webhook : undefined
    })
    t.match(disabled, { status: 'disabled', disabledReason: 'its endpoint answered 410 Gone', disabledAt: String })
    t.strictSame((await call(t, server, { url: '/v1/webhooks' })).json[0], disabled, 'listWebhooks says the same')
    const ended = await until('all ended', async () => {
      const deliveries = await deliveriesOf(t, server, id)
      return deliveries.every((delivery: { status: string }) => delivery.status === 'failed') ? deliveries : undefined
    })
    t.match(ended, [
      { status: 'failed', attempts: 1, lastStatus: 410, lastError: 'answered 410 Gone: the subscription is disabled' },
      { status: 'failed', attempts: 0, lastError: 'not sent: the subscription was disabled (its endpoint answered 410 Gone)' },
      { status: 'failed', attempts: 0, lastError: 'not sent: the subscription was disabled (its endpoint answered 410 Gone)' },
    ])
    t.ok(lines.some((line) => line.msg === 'webhook subscription disabled' && line.subscriptionId === id))
    t.equal(await counted(server, 'gone'), 1)
    t.equal(await server.storage.webhooks.disable(id, 'again', 'again'), false, 'a disabled subscription is not disabled again')

    await createPet(t, server, 'D')
    await kept.waitFor(4)
    await sleep(200)
    t.equal(receiver.deliveries.length, 1, 'nothing more is sent')
    t.equal((await deliveriesOf(t, server, id)).length, 3, 'nor recorded for it')
    // a delivery redelivered while it is disabled waits for it
    const redelivered = await call(t, server, { method: 'POST', url: `/v1/webhooks/${id}/deliveries/${ended[1].id}/redeliver` })
    t.match(redelivered.json, { status: 'pending' })
    t.notOk('nextAttemptAt' in redelivered.json, 'no attempt is planned while its subscription is disabled')
    await sleep(200)
    t.equal(receiver.deliveries.length, 1)

    t.equal((await call(t, server, { method: 'POST', url: `/v1/webhooks/${id}/enable`, key: otherKey })).status, 404, 'another key is told 404')
    t.equal((await call(t, server, { method: 'POST', url: '/v1/webhooks/999/enable' })).status, 404)
    gone = false
    const enabled = await call(t, server, { method: 'POST', url: `/v1/webhooks/${id}/enable` })
    t.equal(enabled.status, 200)
    t.strictSame(enabled.json, { id, url: receiver.url, events: ['pet.created'], createdAt: disabled.createdAt, status: 'active' })
    t.strictSame((await call(t, server, { method: 'POST', url: `/v1/webhooks/${id}/enable` })).json, enabled.json, 'enabling an active one changes nothing')
    const pet = await createPet(t, server, 'E')
    const sent = (await receiver.waitFor(3)).slice(1).map((delivery) => verified(t, delivery, secret).data.name)
    t.strictSame(sent.sort(), ['B', pet.name], 'the redelivered one, and the events of changes after it was enabled')
  })

  t.test(`${name}: a subscription whose every attempt fails for WEBHOOK_DISABLE_AFTER_S is disabled`, async (t) => {
    const server = await build(t, { ...(await store(t)), ...quick, WEBHOOK_DISABLE_AFTER_S: 1 })
    const receiver = await startReceiver(t, () => 500)
    const { id } = await subscribed(t, server, receiver.url)
    await createPet(t, server, 'A')
    const failing = await until('failing', async () => {
      const webhook = (await call(t, server, { url: `/v1/webhooks/${id}` })).json
      return 'failingSince' in webhook ? webhook : undefined
    })
    t.equal(failing.status, 'active')
    const disabled = await until('disabled', async () => {
      const webhook = (await call(t, server, { url: `/v1/webhooks/${id}` })).json
      return webhook.status === 'disabled' ? webhook : undefined
    })
    t.equal(disabled.disabledReason, `every attempt has failed since ${failing.failingSince}`)
    t.ok(Date.parse(disabled.disabledAt) - Date.parse(failing.failingSince) >= 1_000)
    t.equal(await counted(server, 'failing'), 1)
    t.match((await deliveriesOf(t, server, id))[0], {
      status: 'failed',
      lastError: /^not sent: the subscription was disabled \(every attempt has failed since /,
    })
  })

  t.test(`${name}: Retry-After on a 503 or 429 sets the next attempt, within WEBHOOK_RETRY_AFTER_MAX_S; the subscription waits`, async (t) => {
    // (one attempt at a time: each answer goes to the next attempt, whichever delivery it is)
    const server = await build(t, { ...(await store(t)), ...quick, WEBHOOK_RETRY_AFTER_MAX_S: 3, WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: 1 })
    const httpDate = () => new Date(Date.now() + 2_000).toUTCString()
    const answers: [number, () => Record<string, string>][] = [
      [503, () => ({ 'retry-after': '1' })],
      [429, () => ({ 'retry-after': httpDate() })],
      [503, () => ({ 'retry-after': '120' })],
    ]
    const receiver = await startReceiver(t, (n, _delivery, response) => {
      const [status, headers] = answers[n] ?? [204, () => ({})]
      return (response.writeHead(status, headers()).end(), 'handled')
    })
    const { id } = await subscribed(t, server, receiver.url)
    await createPet(t, server, 'A')
    await receiver.waitFor(1)
    await createPet(t, server, 'B') // due at once, but its subscription waits
    const arrived = await receiver.waitFor(5, 25_000)
    const gaps = arrived.slice(1).map((delivery, i) => delivery.at - arrived[i]!.at)
    t.ok(gaps[0]! >= 950, `Retry-After: 1 -> the next attempt (of either event) ${gaps[0]} ms later`)
    t.ok(gaps[1]! >= 1_000, `Retry-After: an HTTP-date 2 s ahead (whole seconds) -> ${gaps[1]} ms`)
    t.ok(gaps[2]! >= 2_950 && gaps[2]! < 10_000, `Retry-After: 120, at most 3 s (WEBHOOK_RETRY_AFTER_MAX_S) -> ${gaps[2]} ms`)
    const deliveries = await until('both succeeded', async () => {
      const found = await deliveriesOf(t, server, id)
      return found.every((delivery: { status: string }) => delivery.status === 'succeeded') ? found : undefined
    })
    t.equal(deliveries[0].attempts + deliveries[1].attempts, 5)
  })
}

for (const [name, store] of stores) {
  if (name === 'PostgreSQL' && postgresMissing) t.test(name, { skip: postgresMissing }, async () => {})
  else disablingOn(name, store)
}

t.test('Retry-After: delta-seconds or an HTTP-date, anything else is not one', async (t) => {
  const now = Date.parse('Sun, 06 Nov 1994 08:49:37 GMT')
  t.equal(retryAfterMs('120', now), 120_000)
  t.equal(retryAfterMs(' 5 ', now), 5_000)
  t.equal(retryAfterMs('Sun, 06 Nov 1994 08:50:37 GMT', now), 60_000, 'IMF-fixdate')
  t.equal(retryAfterMs('Sunday, 06-Nov-94 08:50:37 GMT', now), 60_000, 'RFC 850')
  t.equal(retryAfterMs('Sun, 06 Nov 1994 08:00:00 GMT', now), 0, 'a date past asks for no wait')
  for (const value of [undefined, '', 'soon', '2030-01-01', '-1', '1.5', 'Sun, 99 Nov 1994 08:49:37 GMT'])
    t.equal(retryAfterMs(value, now), undefined, String(value))
})

t.test('outcomeOf: what each answer comes to', async (t) => {
  const claimed = { attempts: 0, giveUpAt: 10_000 }
  const retries = { retryBaseMs: 1_000, retryAfterMaxMs: 5_000, lastErrorLength: 200 }
  t.match(outcomeOf({ status: 204 }, claimed, retries, 0), { result: 'succeeded', outcome: { status: 204, endpoint: 'up' }, gone: false })
  t.match(outcomeOf({ status: 410 }, claimed, retries, 0), {
    result: 'rejected',
    outcome: { status: 410, endpoint: 'down', nextAttemptAt: undefined },
    gone: true,
  })
  t.match(outcomeOf({ status: 503, retryAfter: '3' }, claimed, retries, 0), {
    outcome: { error: 'answered 503, Retry-After 3', nextAttemptAt: 3_000, pauseUntil: 3_000 },
  })
  t.match(
    outcomeOf({ status: 429, retryAfter: '60' }, claimed, retries, 0),
    { outcome: { nextAttemptAt: 5_000, pauseUntil: 5_000 } },
    'at most retryAfterMaxMs',
  )
  t.match(
    outcomeOf({ status: 429, retryAfter: '60' }, { attempts: 0, giveUpAt: 4_000 }, retries, 0),
    { outcome: { nextAttemptAt: undefined } },
    'not past the retry period',
  )
  const ignored = outcomeOf({ status: 500, retryAfter: '60' }, claimed, retries, 0).outcome
  t.ok(ignored.nextAttemptAt! <= 1_000 && ignored.pauseUntil === undefined, 'a Retry-After on another status is not obeyed')
  t.ok(outcomeOf({ status: 503, retryAfter: 'soon' }, claimed, retries, 0).outcome.nextAttemptAt! <= 1_000, 'nor one that is not a Retry-After')
  t.match(outcomeOf({ error: 'timeout', detail: 'no answer\nwithin 10 ms' }, claimed, retries, 0), {
    result: 'timeout',
    outcome: { error: 'no answer within 10 ms', endpoint: 'down' },
  })
})

t.test('the failure of a subscription deleted meanwhile changes no subscription', async (t) => {
  const storage = await openStorage('sqlite::memory:', { poolSize: 1 })
  t.teardown(() => storage.close())
  const policy = { failures: 1, openMs: 1_000, maxOpenMs: 1_000, disableAfterMs: 1 }
  const settled = await storage.deliveries.settle(
    [{ lease: 'gone/1', deliveryId: 1, subscriptionId: 1, outcome: { error: 'answered 500', endpoint: 'down' } }],
    policy,
  )
  t.strictSame(settled, { failingTooLong: [], notRetried: 0 })
})

t.test('a subscription another instance disabled first is not disabled twice', async (t) => {
  const storage = await openStorage('sqlite::memory:', { poolSize: 1 })
  t.teardown(() => storage.close())
  const receiver = await startReceiver(t, () => 410)
  const { created } = (await storage.webhooks.create('key:1', { url: receiver.url, events: ['pet.created'] }, newSecret(), 1, 2)) as { created: { id: number } }
  await storage.pets.create({ name: 'Rex', categoryId: 1, status: 'available' })
  const { lines, logger } = logCapture()
  const asked: number[] = []
  const dispatcher = startDispatcher(
    storage.deliveries,
    {
      policy: { allowHttp: true, allowPrivate: true },
      timeoutMs: 1_000,
      retryBaseMs: 50,
      retryAfterMaxMs: 1_000,
      pollMs: 20,
      concurrency: 4,
      perSubscription: 4,
      circuit: { failures: 5, openMs: 1_000, maxOpenMs: 1_000, disableAfterMs: 0 },
      behindMs: 60_000,
      keepFinishedMs: 1_000,
      lastErrorLength: 200,
      eventIdPrefix: 'evt_',
      // (the event as the newest version shows it: its pet as the API shows one)
      show: (_type, fields) => petEvents['pet.created'](fields),
      withheld: async () => undefined,
      disable: async (subscriptionId) => {
        asked.push(subscriptionId)
        return false
      },
    },
    (await build(t, { logger, LOG_LEVEL: 'info' })).log,
    { attempted: () => {}, finished: () => {}, backlog: () => {}, disabled: () => t.fail('counted') },
  )
  t.teardown(() => dispatcher.close())
  await until('asked to disable', async () => (asked.length > 0 ? true : undefined))
  t.strictSame(asked, [created.id])
  t.notOk(
    lines.some((line) => line.msg === 'webhook subscription disabled'),
    'nor logged',
  )
})
