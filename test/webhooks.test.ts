/**
 * Webhooks (experimental in openapi.yaml), on each store: the subscription operations, who sees
 * which subscription, and the events a real receiver gets: each signed as Standard Webhooks says
 * (checked with the `standardwebhooks` package) and shaped as openapi.yaml's `webhooks` declare
 * (checked against their schemas), written in the transaction of the change they report.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { AppOptions } from '../src/app.js'
import { aCategory, api, build, call, logCapture, newest, servedContracts, testKey } from './helpers/app.js'
import { sleep } from './helpers/concurrency.js'
import { freshPostgres, postgresMissing, query } from './helpers/postgres.js'
import { startReceiver, verified } from './helpers/receiver.js'

/** A second API key: a second principal. */
const otherKey = 'other-key-7d2e91'

/** Receivers listen on 127.0.0.1, over http: the tests allow both. Deliveries are looked for often. */
const receivable = { WEBHOOK_ALLOW_HTTP: true, WEBHOOK_ALLOW_PRIVATE: true, WEBHOOK_POLL_MS: 20 }

type Store = (t: Test) => Promise<Partial<AppOptions>>
const stores: [string, Store][] = [
  ['SQLite', async () => ({})],
  ['PostgreSQL', async (t) => ({ DATABASE_URL: await freshPostgres(t), DATABASE_POOL_SIZE: 4 })],
]

/** The app, with category 1 in its store for the pets of the tests (version 2 on, a pet's category exists). */
async function app(t: Test, store: Store, options: Partial<AppOptions> = {}): Promise<FastifyInstance> {
  const server = await build(t, { ...(await store(t)), API_KEYS: [testKey, otherKey], ...receivable, ...options })
  await aCategory(server)
  return server
}

const subscribe = (t: Test, server: FastifyInstance, url: string, events: string[], key?: string) =>
  call(t, server, { method: 'POST', url: `${api}/webhooks`, payload: { url, events }, ...(key !== undefined && { key }) })

/** A new folder, removed when the test ends. */
function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-webhooks-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const allEvents = Object.keys((newest.document as unknown as { webhooks: object }).webhooks)

async function newPet(t: Test, server: FastifyInstance, name = 'Rex') {
  return (await call(t, server, { method: 'POST', url: `${api}/pets`, payload: { name, categoryId: 1 } })).json
}

t.test('SQLite: with a subscription, creates that arrive together still share a commit', async (t) => {
  const server = await app(t, async () => ({}))
  const receiver = await startReceiver(t)
  await subscribe(t, server, receiver.url, ['pet.created'])
  const before = server.storage.stats().commits!
  const created = await Promise.all(
    Array.from({ length: 50 }, (_, i) => call(t, server, { method: 'POST', url: `${api}/pets`, payload: { name: `Pet ${i}`, categoryId: 1 } })),
  )
  t.ok(created.every((answer) => answer.status === 201))
  const after = server.storage.stats().commits!
  const [writes, commits] = [after.writes - before.writes, after.batches - before.batches]
  t.equal(writes, 50)
  t.ok(commits <= 5, `50 creates in ${commits} commits`)
  await receiver.waitFor(50)
})

t.test('the events of each document are the values its createWebhook takes', async (t) => {
  for (const { document, file } of servedContracts) {
    const eventType = (document.components!.schemas!.EventType as { enum: string[] }).enum
    const events = Object.keys((document as unknown as { webhooks: object }).webhooks)
    t.strictSame([...eventType].sort(), [...events].sort(), file)
  }
  t.strictSame(allEvents, ['pet.created', 'pet.status_changed', 'order.placed', 'order.status_changed'])
})

function webhooksOn(name: string, store: Store) {
  t.test(`${name}: a subscription gets each event it takes, signed, as declared, about the change as answered`, async (t) => {
    const server = await app(t, store)
    const all = await startReceiver(t)
    const ordersOnly = await startReceiver(t)
    const before = await newPet(t, server, 'Before')

    const created = await subscribe(t, server, all.url, allEvents)
    t.equal(created.status, 201)
    t.equal(created.headers.location, `${api}/webhooks/${created.json.id}`)
    t.equal(created.headers['api-stability'], 'experimental')
    t.match(created.json, { url: all.url, events: allEvents, secret: /^whsec_[A-Za-z0-9+/]{43}=$/ })
    const { secret } = created.json
    const orderSecret = (await subscribe(t, server, ordersOnly.url, ['order.placed'])).json.secret

    const pet = await newPet(t, server)
    const placed = (await call(t, server, { method: 'POST', url: `${api}/store/orders`, payload: { petId: pet.id } })).json
    const delivered = (await call(t, server, { method: 'PATCH', url: `${api}/store/orders/${placed.id}`, payload: { status: 'delivered' } })).json
    // a refused change (the pet is pending) changes nothing and sends nothing
    t.equal((await call(t, server, { method: 'POST', url: `${api}/store/orders`, payload: { petId: before.id } })).status, 201)
    t.equal((await call(t, server, { method: 'POST', url: `${api}/store/orders`, payload: { petId: before.id } })).status, 409)

    const events = (await all.waitFor(7)).map((delivery) => verified(t, delivery, secret))
    await sleep(200)
    t.equal(all.deliveries.length, 7, 'no more than those')
    const byType = (type: string) => events.filter((event) => event.type === type)
    t.strictSame(
      byType('pet.created').map((event) => event.data),
      [pet],
      'pet.created: the pet as createPet answered it; none for the pet created before',
    )
    t.strictSame(
      byType('order.placed').map((event) => event.data.id),
      [placed.id, placed.id + 1],
    )
    t.strictSame(byType('order.placed')[0].data, placed, 'order.placed: the order as placeOrder answered it')
    t.strictSame(
      byType('order.status_changed').map(({ data, from, to }) => ({ data, from, to })),
      [{ data: delivered, from: 'placed', to: 'delivered' }],
    )
    const statusChanges = byType('pet.status_changed').map(({ data, from, to }) => [data.id, data.status, from, to])
    t.strictSame(
      statusChanges.sort(),
      [
        [pet.id, 'pending', 'available', 'pending'],
        [pet.id, 'sold', 'pending', 'sold'],
        [before.id, 'pending', 'available', 'pending'],
      ].sort(),
      'pet.status_changed: the pet after the change, from and to',
    )
    const sequences = events.map((event) => event.sequence)
    t.equal(new Set(sequences).size, 7, 'each event has a sequence of its own')
    t.strictSame(
      events.map((event) => event.id),
      sequences.map((sequence) => `evt_${sequence}`),
    )
    const petChanges = byType('pet.status_changed').filter((event) => event.data.id === pet.id)
    t.ok(petChanges[0].sequence < petChanges[1].sequence, 'of two events about one pet, the later change has the larger sequence')

    const orderEvents = (await ordersOnly.waitFor(2)).map((delivery) => verified(t, delivery, orderSecret))
    t.strictSame(
      orderEvents.map((event) => event.type),
      ['order.placed', 'order.placed'],
      'a subscription gets only the types it takes',
    )
    t.throws(() => verified(t, ordersOnly.deliveries[0]!, secret), 'a delivery does not verify with another subscription’s secret')

    const deliveries = await call(t, server, { url: `${api}/webhooks/${created.json.id}/deliveries` })
    t.equal(deliveries.status, 200)
    t.equal(deliveries.json.length, 7)
    t.match(deliveries.json[0], { eventId: events.find((e) => e.id === deliveries.json[0].eventId)!.id, status: 'succeeded', attempts: 1, lastStatus: 204 })
    t.notOk('nextAttemptAt' in deliveries.json[0], 'a delivery that is over has no next attempt')
  })

  t.test(`${name}: a change that rolls back sends nothing, and the event rolls back with it`, async (t) => {
    // (SQLite in a file, so that a second connection can change its schema)
    const options = name === 'SQLite' ? { DATABASE_URL: `sqlite:${join(tempDir(t), 'pets.db')}` } : await store(t)
    const server = await app(t, async () => options)
    const receiver = await startReceiver(t)
    const { secret } = (await subscribe(t, server, receiver.url, ['pet.created'])).json
    // The event's row is written, then the transaction fails: the pet is not kept either.
    if (name === 'SQLite') {
      const sqlite = new SQLite(options.DATABASE_URL!.slice('sqlite:'.length))
      sqlite.exec(`create trigger refuse_event after insert on webhook_events when new.fields like '%Boom%' begin select raise(abort, 'refused'); end`)
      sqlite.close()
    } else {
      await query(
        options.DATABASE_URL!,
        `create function refuse_event() returns trigger language plpgsql as $$ begin if new.fields like '%Boom%' then raise exception 'refused'; end if; return new; end $$;
         create trigger refuse_event after insert on webhook_events for each row execute function refuse_event()`,
      )
    }
    const failed = await call(t, server, { method: 'POST', url: `${api}/pets`, payload: { name: 'Boom', categoryId: 1 } })
    t.equal(failed.status, 500)
    const kept = await newPet(t, server, 'Kept')
    const [delivery] = await receiver.waitFor(1)
    t.strictSame(verified(t, delivery!, secret).data, kept)
    await sleep(200)
    t.equal(receiver.deliveries.length, 1, 'no event for the pet that was not created')
    const names = (await call(t, server, { url: `${api}/pets` })).json.map((pet: { name: string }) => pet.name)
    t.strictSame(names, ['Kept'], 'and no pet either')
  })

  t.test(`${name}: a subscription belongs to the key that made it: any other is told 404`, async (t) => {
    const server = await app(t, store)
    const receiver = await startReceiver(t)
    const mine = (await subscribe(t, server, receiver.url, ['pet.created'])).json
    await newPet(t, server)
    await receiver.waitFor(1)
    const [delivery] = (await call(t, server, { url: `${api}/webhooks/${mine.id}/deliveries` })).json

    const asOther = (method: string, url: string) => call(t, server, { method, url, key: otherKey })
    t.strictSame((await asOther('GET', `${api}/webhooks`)).json, [], 'another key lists none')
    for (const [method, url] of [
      ['GET', `${api}/webhooks/${mine.id}`],
      ['DELETE', `${api}/webhooks/${mine.id}`],
      ['POST', `${api}/webhooks/${mine.id}/rotate-secret`],
      ['GET', `${api}/webhooks/${mine.id}/deliveries`],
      ['POST', `${api}/webhooks/${mine.id}/deliveries/${delivery.id}/redeliver`],
    ] as const) {
      const answer = await asOther(method, url)
      t.equal(answer.status, 404, `${method} ${url} as another key`)
      t.equal(answer.json.code, 'not_found')
    }
    const listed = (await call(t, server, { url: `${api}/webhooks` })).json
    t.strictSame(
      listed,
      [{ id: mine.id, url: receiver.url, events: ['pet.created'], createdAt: mine.createdAt, status: 'active' }],
      'its owner still sees it, unchanged, without its secret',
    )
    t.strictSame((await call(t, server, { url: `${api}/webhooks/${mine.id}` })).json, listed[0])
    t.equal(
      (await call(t, server, { method: 'POST', url: `${api}/webhooks/${mine.id}/deliveries/${delivery.id + 1}/redeliver` })).status,
      404,
      'a delivery it does not have',
    )
  })

  t.test(`${name}: deleted, a subscription gets no more events; its deliveries go with it`, async (t) => {
    const server = await app(t, store)
    const kept = await startReceiver(t)
    const gone = await startReceiver(t)
    await subscribe(t, server, kept.url, ['pet.created'])
    const deleted = (await subscribe(t, server, gone.url, ['pet.created'])).json
    await newPet(t, server)
    await Promise.all([kept.waitFor(1), gone.waitFor(1)])
    const answer = await call(t, server, { method: 'DELETE', url: `${api}/webhooks/${deleted.id}` })
    t.equal(answer.status, 204)
    t.equal(answer.body, '')
    t.equal((await call(t, server, { method: 'DELETE', url: `${api}/webhooks/${deleted.id}` })).status, 404)
    t.equal((await call(t, server, { url: `${api}/webhooks/${deleted.id}/deliveries` })).status, 404)
    await newPet(t, server, 'After')
    await kept.waitFor(2)
    await sleep(200)
    t.equal(gone.deliveries.length, 1, 'nothing after the delete')
  })

  t.test(`${name}: what createWebhook refuses, and why`, async (t) => {
    const server = await app(t, store, { WEBHOOK_ALLOW_HTTP: false, WEBHOOK_ALLOW_PRIVATE: false, WEBHOOK_MAX_PER_KEY: 2 })
    const refused = async (url: string, why: RegExp) => {
      const answer = await subscribe(t, server, url, ['pet.created'])
      t.equal(answer.status, 422, url)
      t.equal(answer.json.code, 'webhook_url_not_allowed')
      t.match(answer.json.message, why)
    }
    const publicOnly = 'webhooks are sent only to public internet addresses'
    await refused('http://93.184.215.14/hooks', /^http:\/\/93\.184\.215\.14\/ is not an https:\/\/ URL: webhooks are sent only to https:\/\/ URLs$/)
    await refused('https://127.0.0.1/hooks', new RegExp(`^https://127\\.0\\.0\\.1/ points to 127\\.0\\.0\\.1, a loopback address: ${publicOnly}$`))
    await refused('https://localhost:8443/hooks', /^https:\/\/localhost:8443\/ resolves to (127\.0\.0\.1|::1), a loopback address: /)
    await refused(
      'https://[::ffff:10.0.0.1]/hooks',
      new RegExp(`^https://\\[::ffff:10\\.0\\.0\\.1\\]/ points to 10\\.0\\.0\\.1, a private address: ${publicOnly}$`),
    )
    await refused('https://169.254.169.254/latest/meta-data', /^https:\/\/169\.254\.169\.254\/ points to 169\.254\.169\.254, a link-local address: /)
    await refused('https://0.0.0.0/', /points to 0\.0\.0\.0, an unspecified address/)
    t.strictSame((await call(t, server, { url: `${api}/webhooks` })).json, [], 'nothing was created')

    for (const [payload, why] of [
      [{ url: 'https://93.184.215.14/', events: ['pet.deleted'] }, /body\/events\/0 must be one of/],
      [{ url: 'https://93.184.215.14/', events: [] }, /must NOT have fewer than 1 items/],
      [{ url: 'https://93.184.215.14/', events: ['pet.created', 'pet.created'] }, /duplicate items/],
      [{ url: 'ftp://93.184.215.14/', events: ['pet.created'] }, /body\/url is not valid/],
      [{ url: 'https://user:secret@93.184.215.14/', events: ['pet.created'] }, /body\/url is not valid: Where events are sent/],
      [{ events: ['pet.created'] }, /must have required property 'url'/],
      [{ url: 'https://93.184.215.14/', events: ['pet.created'], secret: 'mine' }, /additional property 'secret'/],
      // (URLs the schema's pattern lets through, but that Node cannot read)
      [
        { url: 'https://10.0.0.1:99999/hooks', events: ['pet.created'] },
        /^body\/url: https:\/\/10\.0\.0\.1:99999\/ is not a URL that can be used: check its host name, and its port \(at most 65535\)$/,
      ],
      [{ url: 'https://93.184.215.14:65536/', events: ['pet.created'] }, /:65536\/ is not a URL that can be used/],
      [{ url: 'https://93.184.215.14:1x/', events: ['pet.created'] }, /:1x\/ is not a URL that can be used/],
      [{ url: 'https://93.184.215.14:-1/', events: ['pet.created'] }, /:-1\/ is not a URL that can be used/],
      [{ url: 'https://exa%00mple/', events: ['pet.created'] }, /^body\/url: https:\/\/exa%00mple\/ is not a URL that can be used/],
    ] as const) {
      const answer = await call(t, server, { method: 'POST', url: `${api}/webhooks`, payload })
      t.equal(answer.status, 400, JSON.stringify(payload))
      t.match(answer.json.message, why)
    }

    // (a public address is taken: nothing is sent to it here, no change being made)
    t.equal((await subscribe(t, server, 'https://93.184.215.14/a', ['pet.created'])).status, 201)
    t.equal((await subscribe(t, server, 'https://93.184.215.14/b', ['pet.created'])).status, 201)
    const third = await subscribe(t, server, 'https://93.184.215.14/c', ['pet.created'])
    t.equal(third.status, 409)
    t.strictSame(third.json, {
      code: 'webhook_limit_reached',
      message: 'This API key holds 2 webhook subscriptions, the most it may: delete one first',
      status: 409,
    })
    t.equal((await subscribe(t, server, 'https://93.184.215.14/c', ['pet.created'], otherKey)).status, 201, 'the limit is per key')
  })

  t.test(`${name}: a key must hold the roles of each event it subscribes to (x-roles): 403 otherwise, nothing stored`, async (t) => {
    const petsOnly = 'pets-only-key-4c1a'
    const server = await app(t, store, { API_KEYS: [testKey, `${petsOnly}:pets:read+webhooks:read+webhooks:write`] })
    const refused = await subscribe(t, server, 'https://93.184.215.14/hooks', ['pet.created', 'order.placed'], petsOnly)
    t.equal(refused.status, 403)
    t.strictSame(refused.json, { code: 'forbidden', message: 'This API key lacks the role orders:read, which the event order.placed needs', status: 403 })
    t.strictSame((await call(t, server, { url: `${api}/webhooks`, key: petsOnly })).json, [], 'nothing was created')
    // the body is checked first: an event that is not one is a 400, whatever the roles
    t.equal((await subscribe(t, server, 'https://93.184.215.14/hooks', ['order.deleted'], petsOnly)).status, 400)
    t.equal(
      (await subscribe(t, server, 'https://93.184.215.14/hooks', ['pet.created', 'pet.status_changed'], petsOnly)).status,
      201,
      'the events its roles cover',
    )
    t.equal((await subscribe(t, server, 'https://93.184.215.14/hooks', allEvents)).status, 201, 'a key with every default role takes them all')
  })

  t.test(`${name}: a subscription whose key loses an event's role, or is revoked, is sent nothing more: its deliveries fail unsent, saying why`, async (t) => {
    const server = await app(t, store)
    const receiver = await startReceiver(t)
    const { key, record } = await server.storage.keys.issue('client', server.contract.roles.defaults)
    const created = (await subscribe(t, server, receiver.url, ['pet.created'], key)).json
    await newPet(t, server, 'Seen')
    await receiver.waitFor(1)
    const deliveries = async () => (await server.storage.webhooks.deliveries(`key:${record.id}`, created.id, { limit: 10 }))!
    const ended = async (count: number) => {
      for (let i = 0; i < 200; i++) {
        const list = await deliveries()
        if (list.length === count && list.every((delivery) => delivery.status !== 'pending')) return list
        await sleep(20)
      }
      throw new Error(`${count} deliveries did not end`)
    }

    t.equal(await server.storage.keys.setRoles(record.id, ['webhooks:read', 'webhooks:write']), 'updated')
    await newPet(t, server, 'Unseen')
    const lost = (await ended(2))[1]
    t.match(lost, { status: 'failed', attempts: 0, lastError: 'not sent: the API key of this subscription no longer holds pets:read, which pet.created needs' })
    const listed = await call(t, server, { url: `${api}/webhooks/${created.id}/deliveries`, key })
    t.equal(listed.status, 200, 'its key still sees why')
    t.equal(listed.json[1].lastError, lost!.lastError)

    t.equal(await server.storage.keys.setRoles(record.id, server.contract.roles.defaults), 'updated')
    await newPet(t, server, 'Seen again')
    await receiver.waitFor(2)

    t.equal(await server.storage.keys.revoke(record.id), 'revoked')
    await newPet(t, server, 'Unseen again')
    const revoked = (await ended(4))[3]
    t.match(revoked, { status: 'failed', attempts: 0, lastError: /no longer accepted \(revoked, or removed from API_KEYS\)/ })
    await sleep(100)
    t.strictSame(
      receiver.deliveries.map((delivery) => JSON.parse(delivery.body).data.name),
      ['Seen', 'Seen again'],
      'the receiver got only what the key could see',
    )
  })

  t.test(`${name}: a rotated secret: both sign for the overlap, and the new one alone after it`, async (t) => {
    const server = await app(t, store)
    const receiver = await startReceiver(t)
    const { id, secret: first } = (await subscribe(t, server, receiver.url, ['pet.created'])).json
    const rotated = await call(t, server, { method: 'POST', url: `${api}/webhooks/${id}/rotate-secret` })
    t.equal(rotated.status, 200)
    const second = rotated.json.secret
    t.not(second, first)
    const overlapEnds = Date.parse(rotated.json.previousSecretExpiresAt)
    t.ok(Math.abs(overlapEnds - (Date.now() + 86_400_000)) < 60_000, 'the previous secret signs for WEBHOOK_SECRET_OVERLAP_S (a day)')
    t.equal((await call(t, server, { url: `${api}/webhooks/${id}` })).json.previousSecretExpiresAt, rotated.json.previousSecretExpiresAt)

    await newPet(t, server)
    const [delivery] = await receiver.waitFor(1)
    t.match(delivery!.headers['webhook-signature'], /^v1,\S+ v1,\S+$/, 'two signatures')
    t.strictSame(verified(t, delivery!, first), verified(t, delivery!, second), 'a receiver checking with either secret accepts it')

    // A second rotation ends the first one's overlap: the first secret no longer signs.
    const third = (await call(t, server, { method: 'POST', url: `${api}/webhooks/${id}/rotate-secret` })).json.secret
    await newPet(t, server)
    const [, next] = await receiver.waitFor(2)
    verified(t, next!, second)
    verified(t, next!, third)
    t.throws(() => verified(t, next!, first), 'the first secret no longer signs')
  })

  t.test(`${name}: with no overlap, the previous secret stops signing at once`, async (t) => {
    const server = await app(t, store, { WEBHOOK_SECRET_OVERLAP_S: 0 })
    const receiver = await startReceiver(t)
    const { id, secret: first } = (await subscribe(t, server, receiver.url, ['pet.created'])).json
    const rotated = (await call(t, server, { method: 'POST', url: `${api}/webhooks/${id}/rotate-secret` })).json
    t.notOk('previousSecretExpiresAt' in (await call(t, server, { url: `${api}/webhooks/${id}` })).json, 'no previous secret signs')
    await newPet(t, server)
    const [delivery] = await receiver.waitFor(1)
    t.match(delivery!.headers['webhook-signature'], /^v1,\S+$/, 'one signature')
    verified(t, delivery!, rotated.secret)
    t.throws(() => verified(t, delivery!, first))
  })

  t.test(`${name}: a secret is answered once, and never written to the log`, async (t) => {
    const { lines, logger } = logCapture()
    const server = await app(t, store, { LOG_LEVEL: 'trace', logger })
    const receiver = await startReceiver(t, (n) => (n === 0 ? 500 : 204))
    const created = (await subscribe(t, server, receiver.url, ['pet.created'])).json
    const rotated = (await call(t, server, { method: 'POST', url: `${api}/webhooks/${created.id}/rotate-secret` })).json
    await newPet(t, server)
    await receiver.waitFor(2)
    for (const answer of [
      await call(t, server, { url: `${api}/webhooks` }),
      await call(t, server, { url: `${api}/webhooks/${created.id}` }),
      await call(t, server, { url: `${api}/webhooks/${created.id}/deliveries` }),
    ]) {
      t.notMatch(answer.body, /whsec_/, 'no later answer holds a secret')
    }
    const log = JSON.stringify(lines)
    t.ok(
      lines.some((line) => line.msg === 'webhook attempt failed'),
      'the failed attempt is logged',
    )
    t.notMatch(log, created.secret.slice(6))
    t.notMatch(log, rotated.secret.slice(6))
    t.notMatch(log, 'token=abc', "the receiver URL's query is not logged whole")
  })
}

for (const [name, store] of stores) {
  if (name === 'PostgreSQL' && postgresMissing) t.test(name, { skip: postgresMissing }, async () => {})
  else webhooksOn(name, store)
}
