/**
 * How events reach a receiver that misbehaves: retried with backoff when it is down, slow,
 * failing or redirecting, until it answers or the retry period is over; sent again on demand;
 * never to an address the policy refuses, checked again at each attempt; signed as Standard
 * Webhooks says; counted in the metrics.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer as createTcpServer } from 'node:net'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Webhook } from 'standardwebhooks'
import t, { type Test } from 'tap'
import type { AppOptions } from '../src/app.js'
import { answerCapBytes, Connections, post } from '../src/webhooks/send.js'
import { eventBody, startDispatcher } from '../src/webhooks/dispatcher.js'
import { retryDelay } from '../src/webhooks/outcome.js'
import { openStorage } from '../src/repositories.js'
import { webhookHandlers } from '../src/webhooks/handlers.js'
import { newSecret, signedHeaders } from '../src/webhooks/signing.js'
import { resolveTarget, TargetRefused } from '../src/webhooks/target.js'
import type { WebhookRepository } from '../src/webhooks/repository.js'
import { answer } from '../src/http/handlers.js'
import { hashKey } from '../src/auth/secrets.js'
import { projectRoot } from '../src/core/paths.js'
import { build, call, logCapture, testKey } from './helpers/app.js'
import { databaseProxy } from './helpers/database-proxy.js'
import { sleep } from './helpers/concurrency.js'
import { deliveriesOf, metric, subscribed, until } from './helpers/webhooks.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { startReceiver, verified } from './helpers/receiver.js'

/** A receiver of what post() sends here: bare bodies, no deliveries to check against the contract. */
const bareBodies = { contract: null }

/** What the dispatcher is given beside what a test sets. */
const dispatcherDefaults = {
  concurrency: 16,
  perSubscription: 16,
  circuit: { failures: 5, openMs: 30_000, maxOpenMs: 3_600_000, disableAfterMs: 0 },
  retryAfterMaxMs: 3_600_000,
  behindMs: 60_000,
}

/** Receivers on 127.0.0.1 over http; short waits, so that retries come within the test; no
 * circuit opens (test/webhook-fairness.test.ts tests it). */
const quick = {
  WEBHOOK_ALLOW_HTTP: true,
  WEBHOOK_ALLOW_PRIVATE: true,
  WEBHOOK_POLL_MS: 20,
  WEBHOOK_RETRY_BASE_MS: 100,
  WEBHOOK_TIMEOUT_MS: 500,
  WEBHOOK_CIRCUIT_FAILURES: 1_000,
}

type Store = (t: Test) => Promise<Partial<AppOptions>>
const stores: [string, Store][] = [
  ['SQLite', async () => ({})],
  ['PostgreSQL', async (t) => ({ DATABASE_URL: await freshPostgres(t), DATABASE_POOL_SIZE: 4 })],
]

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-delivery-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const createPet = (t: Test, server: FastifyInstance, name = 'Rex') => call(t, server, { method: 'POST', url: '/v1/pets', payload: { name, categoryId: 1 } })

function deliveryOn(name: string, store: Store) {
  t.test(`${name}: a receiver that is down, then back, gets every event, within the backoff`, async (t) => {
    const server = await build(t, { ...(await store(t)), ...quick })
    const receiver = await startReceiver(t)
    const { id, secret } = await subscribed(t, server, receiver.url)
    await receiver.stop()
    const pets = [(await createPet(t, server, 'A')).json, (await createPet(t, server, 'B')).json, (await createPet(t, server, 'C')).json]
    const retried = await until('every delivery failed twice', async () => {
      const deliveries = await deliveriesOf(t, server, id)
      return deliveries.every((delivery: { attempts: number }) => delivery.attempts >= 2) ? deliveries : undefined
    })
    for (const delivery of retried) {
      t.match(delivery, { status: 'pending', lastError: /^connect ECONNREFUSED 127.0.0.1:\d+$/, nextAttemptAt: String }, 'pending, with why and when next')
      t.notOk('lastStatus' in delivery, 'no answer, no status')
    }
    // (measured once a second)
    await until('the lag shows in the metrics', async () => ((await metric(server, 'petstore_webhook_oldest_pending_seconds')) > 0 ? true : undefined))
    t.ok((await metric(server, 'petstore_webhook_attempts_total{result="unreachable"}')) >= 6)

    await receiver.reopen()
    const back = Date.now()
    const events = (await receiver.waitFor(3)).map((delivery) => verified(t, delivery, secret))
    t.ok(Date.now() - back < 5_000, `delivered ${Date.now() - back} ms after it came back`)
    t.strictSame(
      events.map((event) => event.data).sort((a, b) => a.id - b.id),
      pets,
    )
    const done = await until('all succeeded', async () => {
      const deliveries = await deliveriesOf(t, server, id)
      return deliveries.every((delivery: { status: string }) => delivery.status === 'succeeded') ? deliveries : undefined
    })
    for (const delivery of done) t.match(delivery, { status: 'succeeded', lastStatus: 204 })
    t.equal(await metric(server, 'petstore_webhook_deliveries_total{result="succeeded"}'), 3)
    await until('no lag once delivered', async () => ((await metric(server, 'petstore_webhook_oldest_pending_seconds')) === 0 ? true : undefined))
  })

  t.test(`${name}: an error status, a redirect and a timeout are failed attempts, retried`, async (t) => {
    const server = await build(t, { ...(await store(t)), ...quick })
    const elsewhere = await startReceiver(t)
    const receiver = await startReceiver(t, (n, _delivery, response) => {
      if (n === 0) return 503
      if (n === 1) return (response.writeHead(302, { location: elsewhere.url }).end(), 'handled')
      if (n === 2) return 'hang'
      return 204
    })
    const { id, secret } = await subscribed(t, server, receiver.url)
    await createPet(t, server)
    const attempts = await receiver.waitFor(4)
    const ids = attempts.map((delivery) => verified(t, delivery, secret).id)
    t.equal(new Set(ids).size, 1, 'every attempt carries the same webhook-id')
    t.not(attempts[0]!.headers['webhook-timestamp'], undefined)
    const gaps = attempts.slice(1).map((delivery, i) => delivery.at - attempts[i]!.at)
    t.ok(gaps[0]! >= 50, `the first retry waits (${gaps[0]} ms)`)
    t.equal(elsewhere.deliveries.length, 0, 'the redirect was not followed')
    const [delivery] = await until('succeeded', async () => {
      const found = await deliveriesOf(t, server, id)
      return found[0].status === 'succeeded' ? found : undefined
    })
    t.match(delivery, { attempts: 4, lastStatus: 204 })
    for (const [result, count] of [
      ['rejected', 2],
      ['timeout', 1],
      ['succeeded', 1],
    ] as const) {
      t.equal(await metric(server, `petstore_webhook_attempts_total{result="${result}"}`), count, result)
    }
  })

  t.test(`${name}: past its retry period a delivery has failed; redeliverWebhook sends it again`, async (t) => {
    const server = await build(t, { ...(await store(t)), ...quick, WEBHOOK_RETRY_PERIOD_S: 1 })
    let failing = true
    const receiver = await startReceiver(t, () => (failing ? 500 : 204))
    const { id, secret } = await subscribed(t, server, receiver.url)
    await createPet(t, server)
    const [failed] = await until('failed', async () => {
      const found = await deliveriesOf(t, server, id)
      return found[0].status === 'failed' ? found : undefined
    })
    t.match(failed, { status: 'failed', lastStatus: 500, lastError: 'answered 500' })
    t.notOk('nextAttemptAt' in failed)
    t.ok(failed.attempts >= 2, `tried ${failed.attempts} times in the second`)
    t.equal(await metric(server, 'petstore_webhook_deliveries_total{result="failed"}'), 1)
    const attempts = receiver.deliveries.length
    await sleep(300)
    t.equal(receiver.deliveries.length, attempts, 'and is not tried any more')

    failing = false
    const again = await call(t, server, { method: 'POST', url: `/v1/webhooks/${id}/deliveries/${failed.id}/redeliver` })
    t.equal(again.status, 202)
    t.match(again.json, { id: failed.id, status: 'pending', attempts: failed.attempts, nextAttemptAt: String })
    const [, sent] = await receiver.waitFor(attempts + 1).then((all) => [all, all.at(-1)!] as const)
    t.equal(verified(t, sent, secret).id, failed.eventId, 'the same event, the same webhook-id')
    const [succeeded] = await until('succeeded', async () => {
      const found = await deliveriesOf(t, server, id)
      return found[0].status === 'succeeded' ? found : undefined
    })
    t.equal(succeeded.attempts, failed.attempts + 1)
  })
}

function keepingOn(name: string, store: Store) {
  t.test(`${name}: deliveries are listed page by page, and forgotten a week after they are over`, async (t) => {
    const server = await build(t, { ...(await store(t)), ...quick })
    let failing = true
    const receiver = await startReceiver(t, () => (failing ? 500 : 204))
    const { id } = await subscribed(t, server, receiver.url)
    failing = false
    for (const name of ['A', 'B', 'C']) await createPet(t, server, name)
    await receiver.waitFor(3)
    const first = await call(t, server, { url: `/v1/webhooks/${id}/deliveries?limit=2` })
    t.equal(first.json.length, 2)
    t.equal(first.headers.link, `</v1/webhooks/${id}/deliveries?limit=2&after=${first.json[1].id}>; rel="next"`)
    const next = await call(t, server, { url: `/v1/webhooks/${id}/deliveries?limit=2&after=${first.json[1].id}` })
    t.equal(next.json.length, 1)
    t.equal(next.headers.link, undefined, 'the last page has no next')

    await until('all over', async () => ((await deliveriesOf(t, server, id)).every((d: { status: string }) => d.status === 'succeeded') ? true : undefined))
    failing = true
    await createPet(t, server, 'D')
    await receiver.waitFor(4)
    await server.storage.deliveries.forgetFinished(Date.now() + 1)
    const kept = await deliveriesOf(t, server, id)
    t.strictSame(
      kept.map((delivery: { status: string }) => delivery.status),
      ['pending'],
      'the pending delivery is kept, the finished ones are not',
    )
    await server.storage.deliveries.forgetFinished(Date.now() - server.contract.service.limits.finishedDeliveriesKeptDays * 86_400_000)
    t.equal((await deliveriesOf(t, server, id)).length, 1)
  })
}

for (const [name, store] of stores) {
  if (name === 'PostgreSQL' && postgresMissing) t.test(name, { skip: postgresMissing }, async () => {})
  else {
    deliveryOn(name, store)
    keepingOn(name, store)
  }
}

t.test('the database gone mid-delivery: the delivery is made again once it is back', { skip: postgresMissing }, async (t) => {
  const proxy = await databaseProxy(t, new URL(await freshPostgres(t)))
  const { lines, logger } = logCapture()
  // (an attempt held long enough for the lag to be measured while it is under way; a database
  // bound a loaded machine's connections through the proxy keep within)
  const server = await build(t, { ...quick, DATABASE_URL: proxy.url, DATABASE_TIMEOUT_MS: 3_000, WEBHOOK_TIMEOUT_MS: 5_000, LOG_LEVEL: 'info', logger })
  let release: (() => void) | undefined
  const receiver = await startReceiver(t, (n, _delivery, response) => {
    if (n > 0) return 204
    release = () => response.writeHead(204).end()
    return 'handled'
  })
  const { id, secret } = await subscribed(t, server, receiver.url)
  await createPet(t, server)
  await receiver.waitFor(1)
  // (the dispatcher measures the lag once a second: it is known before the database goes)
  await until('the lag known', async () => ((await metric(server, 'petstore_webhook_oldest_pending_seconds')) > 0 ? true : undefined))
  await proxy.down()
  release!()
  await until('both warnings', async () =>
    lines.some((line) => line.msg === 'a webhook delivery could not be written down') &&
    lines.some((line) => line.msg === 'cannot claim webhook deliveries: the database is unavailable')
      ? true
      : undefined,
  )
  t.ok((await metric(server, 'petstore_webhook_oldest_pending_seconds')) > 0, 'the lag shows while the database is away')
  await sleep(1_600) // (what runs once a second meets the database away too, and waits for the next time)
  await proxy.up()
  // its lease runs out (twice WEBHOOK_TIMEOUT_MS and 10 s), and it is made again
  const [, again] = await receiver.waitFor(2, 30_000)
  t.equal(verified(t, again!, secret).id, verified(t, receiver.deliveries[0]!, secret).id, 'the same event, again: at least once')
  await until('succeeded', async () => ((await deliveriesOf(t, server, id))[0].status === 'succeeded' ? true : undefined))
})

t.test('an https receiver is checked against its certificate, at the address that was checked', async (t) => {
  const fixture = (name: string) => readFileSync(join(projectRoot, 'test', 'fixtures', 'tls', name))
  const server = createServer({ key: fixture('localhost-key.pem'), cert: fixture('localhost-cert.pem') }, (_request, response) => response.writeHead(204).end())
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const url = new URL(`https://localhost:${(server.address() as AddressInfo).port}/hooks`)
  const answer = await post({ url, address: '127.0.0.1', family: 4 }, {}, '{}', 5_000)
  t.match(answer, { error: 'unreachable', detail: /self-signed certificate/ }, 'a certificate no authority signed is refused')
  const connections = new Connections()
  t.teardown(() => connections.close())
  const kept = await post({ url, address: '127.0.0.1', family: 4 }, {}, '{}', 5_000, undefined, connections)
  t.match(kept, { error: 'unreachable', detail: /self-signed certificate/ }, 'on a kept-alive connection too')
})

t.test('attempts reuse kept-alive connections, per origin and checked address; idle pools are dropped', async (t) => {
  const connections = new Connections({ idleMs: 100, sweepEveryMs: 50 })
  t.teardown(() => connections.close())
  const receiver = await startReceiver(t, undefined, bareBodies)
  const url = new URL(receiver.url)
  for (let i = 0; i < 5; i++) t.strictSame(await post({ url, address: '127.0.0.1', family: 4 }, {}, '{}', 5_000, undefined, connections), { status: 204 })
  t.equal(receiver.connections, 1, 'five attempts, one connection')
  t.equal(connections.size, 1)
  const hanging = await startReceiver(t, () => 'hang', bareBodies)
  const held = post({ url: new URL(hanging.url), address: '127.0.0.1', family: 4 }, {}, '{}', 1_000, undefined, connections)
  await hanging.waitFor(1)
  t.equal(connections.size, 2, 'another origin, another pool')
  await sleep(400)
  t.equal(connections.size, 1, 'the idle one dropped, the busy one kept')
  t.match(await held, { error: 'timeout' })
  await until('both dropped', async () => (connections.size === 0 ? true : undefined))
})

t.test('a kept-alive connection the receiver closed as the attempt went out: tried once more, on a new one', async (t) => {
  let connectionsSeen = 0
  let requests = 0
  const server = createTcpServer((socket) => {
    const connection = ++connectionsSeen
    let onThis = 0
    socket.on('data', (chunk) => {
      if (!chunk.includes('\r\n\r\n')) return
      requests++
      // the second request on the first connection meets a reset
      if (connection === 1 && ++onThis === 2) return socket.resetAndDestroy()
      socket.write('HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\r\n')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const connections = new Connections()
  t.teardown(() => connections.close())
  const target = { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`), address: '127.0.0.1', family: 4 }
  t.strictSame(await post(target, {}, '{}', 5_000, undefined, connections), { status: 204 })
  t.strictSame(await post(target, {}, '{}', 5_000, undefined, connections), { status: 204 }, 'answered on the second try')
  t.strictSame([connectionsSeen, requests], [2, 3])
})

t.test('an address the policy refuses is checked again at every attempt: no connection is made', async (t) => {
  const file = `sqlite:${join(tempDir(t), 'pets.db')}`
  const receiver = await startReceiver(t)
  // subscribed while the operator allowed private addresses...
  const before = await build(t, { ...quick, DATABASE_URL: file })
  const { id } = await subscribed(t, before, receiver.url)
  await before.close()
  // ...and delivered after they stopped allowing them
  const server = await build(t, { ...quick, DATABASE_URL: file, WEBHOOK_ALLOW_PRIVATE: false })
  await createPet(t, server)
  const [delivery] = await until('refused', async () => {
    const found = await deliveriesOf(t, server, id)
    return found[0]?.attempts >= 1 ? found : undefined
  })
  t.match(delivery, {
    status: 'pending',
    lastError: `${new URL(receiver.url).origin}/ points to 127.0.0.1, a loopback address: webhooks are sent only to public internet addresses`,
  })
  t.ok((await metric(server, 'petstore_webhook_attempts_total{result="refused"}')) >= 1)
  t.equal(receiver.connections, 0, 'the receiver was never connected to')
})

t.test('closed mid-attempt, an instance gives its delivery back, due as it was, the attempt not counted', async (t) => {
  const file = `sqlite:${join(tempDir(t), 'pets.db')}`
  const receiver = await startReceiver(t, () => 'hang')
  const server = await build(t, { ...quick, DATABASE_URL: file, WEBHOOK_TIMEOUT_MS: 10_000 })
  const { id } = await subscribed(t, server, receiver.url)
  await createPet(t, server)
  await receiver.waitFor(1)
  await server.close()
  const storage = await openStorage(file, { poolSize: 1 })
  t.teardown(() => storage.close())
  const [delivery] = (await storage.webhooks.deliveries(`env:${hashKey(testKey).slice(0, 12)}`, id, { limit: 1 }))!
  t.match(delivery, { status: 'pending', attempts: 0 })
  t.equal(
    (await storage.deliveries.claim('next/1', { max: 10, perSubscription: 10, busy: new Map() }, 1_000)).length,
    1,
    'no lease holds it: it is claimed at once',
  )
})

t.test('a receiver answer is read up to a cap, and the connection closed', async (t) => {
  let closedEarly = false
  const receiver = await startReceiver(
    t,
    (_n, _delivery, response) => {
      response.writeHead(200)
      response.on('close', () => (closedEarly = !response.writableFinished))
      const chunk = Buffer.alloc(64 * 1024, 'x')
      const write = (left: number) => {
        if (left === 0) return response.end()
        if (response.write(chunk)) write(left - 1)
        else response.once('drain', () => write(left - 1))
      }
      write(1024) // 64 MiB, far more than is read
      return 'handled'
    },
    bareBodies,
  )
  const url = new URL(receiver.url)
  const answer = await post({ url, address: '127.0.0.1', family: 4 }, {}, '{}', 5_000)
  t.strictSame(answer, { status: 200 })
  await until('closed', async () => (closedEarly ? true : undefined))
  t.ok(answerCapBytes <= 64 * 1024, 'the cap is small')
})

t.test('an answer whose body stalls is taken at its status; the connection is cut at the timeout', async (t) => {
  let cut = false
  const receiver = await startReceiver(
    t,
    (_n, _delivery, response) => {
      response.writeHead(200)
      response.write('{"partial":')
      response.on('close', () => (cut = true))
      return 'handled'
    },
    bareBodies,
  )
  const started = Date.now()
  // (a timeout of 2 s, so that a machine slowed by other work cannot blur "at once" and "at the timeout")
  t.strictSame(await post({ url: new URL(receiver.url), address: '127.0.0.1', family: 4 }, {}, '{}', 2_000), { status: 200 })
  t.ok(Date.now() - started < 1_500, 'at once, not at the timeout')
  await until('cut', async () => (cut ? true : undefined))
})

t.test('a resolver that cannot answer fails the attempt, which is retried; finished deliveries are forgotten on a timer', async (t) => {
  const storage = await openStorage('sqlite::memory:', { poolSize: 1 })
  t.teardown(() => storage.close())
  const { created } = (await storage.webhooks.create('key:1', { url: 'https://hooks.example/x', events: ['pet.created'] }, newSecret(), 1, 2)) as {
    created: { id: number }
  }
  await storage.pets.create({ name: 'Rex', categoryId: 1, status: 'available' })
  const attempted: string[] = []
  let forgotten = 0
  const forgetFinished = storage.deliveries.forgetFinished.bind(storage.deliveries)
  storage.deliveries.forgetFinished = (before) => {
    forgotten++
    return forgetFinished(before)
  }
  const { logger } = logCapture()
  const dispatcher = startDispatcher(
    storage.deliveries,
    {
      policy: { allowHttp: false, allowPrivate: false },
      ...dispatcherDefaults,
      timeoutMs: 500,
      retryBaseMs: 50,
      pollMs: 20,
      forgetEveryMs: 20,
      keepFinishedMs: 1_000,
      lastErrorLength: 200,
      eventIdPrefix: 'evt_',
      show: (_type, fields) => fields,
      resolve: async () => Promise.reject(Object.assign(new Error('getaddrinfo EAI_AGAIN hooks.example'), { code: 'EAI_AGAIN' })),
      withheld: async () => undefined,
      disable: async () => false,
    },
    (await build(t, { logger })).log,
    { attempted: (result) => attempted.push(result), finished: () => {}, backlog: () => {}, disabled: () => {} },
  )
  t.teardown(() => dispatcher.close())
  const [delivery] = await until('tried twice', async () => {
    const found = (await storage.webhooks.deliveries('key:1', created.id, { limit: 10 }))!
    return found[0]!.attempts >= 2 ? found : undefined
  })
  t.match(delivery, { status: 'pending', lastError: 'getaddrinfo EAI_AGAIN hooks.example' })
  t.match(attempted, ['unreachable', 'unreachable'])
  t.ok(forgotten >= 1, 'forgotten on its timer')
})

t.test('an attempt connects to the address that was checked, whatever the name resolves to now', async (t) => {
  const receiver = await startReceiver(t, undefined, bareBodies)
  const port = new URL(receiver.url).port
  // a name no resolver knows: only the checked address can have been used
  const url = new URL(`http://rebound.invalid:${port}/hooks`)
  t.strictSame(await post({ url, address: '127.0.0.1', family: 4 }, {}, '{}', 5_000), { status: 204 })
  t.equal(receiver.deliveries[0]!.headers.host, `rebound.invalid:${port}`, 'with the URL’s host name')
})

t.test('what resolveTarget takes and refuses', async (t) => {
  const strict = { allowHttp: false, allowPrivate: false }
  const answering =
    (...addresses: string[]) =>
    async () =>
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  const failing = (code: string) => async () => Promise.reject(Object.assign(new Error(code), { code }))
  t.match(await resolveTarget('https://hooks.example/x', strict, answering('93.184.215.14')), { address: '93.184.215.14', family: 4 })
  t.match(await resolveTarget('https://hooks.example/x', strict, answering('2606:2800:21f:cb07:6820:80da:af6b:8b2c')), { family: 6 })
  const refusals: [string, () => Promise<{ address: string; family: number }[]>, RegExp][] = [
    [
      'a name that resolves to a private address among public ones',
      answering('93.184.215.14', '10.0.0.1'),
      /^https:\/\/hooks\.example\/ resolves to 10\.0\.0\.1, a private address/,
    ],
    ['to an IPv4 address written as IPv6', answering('::ffff:169.254.169.254'), /resolves to 169\.254\.169\.254, a link-local address/],
    ['to no address', answering(), /^https:\/\/hooks\.example\/ does not resolve to any address$/],
    ['to something that is no address', answering('not-an-address'), /resolves to not-an-address, not an IP address/],
    ['that does not exist', failing('ENOTFOUND'), /does not resolve to any address/],
  ]
  for (const [what, resolve, why] of refusals) {
    await t.rejects(resolveTarget('https://hooks.example/x', strict, resolve), new TargetRefused(), what)
    await t.rejects(resolveTarget('https://hooks.example/x', strict, resolve), { message: why }, what)
  }
  await t.rejects(resolveTarget('https://u:p@hooks.example/x', strict, answering('93.184.215.14')), { message: /user name or password/ })
  await t.rejects(
    resolveTarget('https://hooks.example/x', strict, failing('EAI_AGAIN')),
    { code: 'EAI_AGAIN' },
    'a resolver that cannot answer now is not a refusal',
  )
  t.match(await resolveTarget('http://10.0.0.1/', { allowHttp: true, allowPrivate: true }), { address: '10.0.0.1' }, 'what an operator allows')
})

t.test('a host that cannot be resolved now is a 503 at createWebhook, not a refusal', async (t) => {
  const handlers = webhookHandlers({} as WebhookRepository, {
    policy: { allowHttp: false, allowPrivate: false },
    maxPerKey: 1,
    secretOverlapMs: 0,
    webhookUrl: String,
    deliveriesUrl: String,
    dueNow: () => {},
    eventRoles: () => [],
    retryAfterSeconds: 5,
    eventIdPrefix: 'evt_',
    resolve: async () => Promise.reject(Object.assign(new Error('EAI_AGAIN'), { code: 'EAI_AGAIN' })),
  })
  const request = { body: { url: 'https://hooks.example/x', events: ['pet.created'] }, principal: 'key:1' } as unknown as FastifyRequest<never>
  t.match(await handlers.createWebhook(request, {} as FastifyReply<never>, answer as never), {
    code: 'unavailable',
    status: 503,
    headers: { 'Retry-After': '5' },
  })
})

t.test('the signature is the one Standard Webhooks verifies, and the backoff is bounded', async (t) => {
  const secret = newSecret()
  const body = eventBody({ id: 7, type: 'pet.created', occurredAt: 0 }, 'evt_', { data: { id: 1, name: 'Rex', category: { id: 1 }, status: 'available' } })
  const headers = signedHeaders('evt_7', body, [secret])
  t.strictSame(new Webhook(secret).verify(body, headers), JSON.parse(body))
  t.throws(() => new Webhook(newSecret()).verify(body, headers), 'not with another secret')
  t.throws(() => new Webhook(secret).verify(body.replace('Rex', 'Tom'), headers), 'not for another body')
  const stale = signedHeaders('evt_7', body, [secret], Date.now() - 10 * 60_000)
  t.throws(() => new Webhook(secret).verify(body, stale), 'not when replayed ten minutes later')

  // the first retry within 10 s at the default base (5 s); doubling; an hour at most
  t.strictSame([retryDelay(1, 5_000, 0), retryDelay(1, 5_000, 1)], [2_500, 5_000])
  t.strictSame([retryDelay(2, 5_000, 1), retryDelay(3, 5_000, 1)], [10_000, 20_000])
  t.equal(retryDelay(40, 5_000, 1), 3_600_000)
})
