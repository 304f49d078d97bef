/**
 * Store orders (experimental in every version), through the newest version and the pet life cycle they drive, on each store:
 * placeOrder, getOrder, listOrders, updateOrder, and placeOrder's Idempotency-Key. Every
 * response is checked against the contract by call().
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { mock } from 'node:test'
import SQLite from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { AppOptions } from '../src/app.js'
import { forgetEveryMs, idempotencyWindowMs } from '../src/orders/idempotency.js'
import { aCategory, api, build, call, newest, testKey } from './helpers/app.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'

/** A second API key: a second principal. */
const otherKey = 'other-key-7d2e91'

type Store = (t: Test) => Promise<Partial<AppOptions>>
const stores: [string, Store][] = [
  ['SQLite', async () => ({})],
  ['PostgreSQL', async (t) => ({ DATABASE_URL: await freshPostgres(t), DATABASE_POOL_SIZE: 4 })],
]

async function app(t: Test, store: Store): Promise<FastifyInstance> {
  return build(t, { ...(await store(t)), API_KEYS: [testKey, otherKey] })
}

async function newPet(t: Test, server: FastifyInstance, status = 'available'): Promise<number> {
  const created = await call(t, server, { method: 'POST', url: `${api}/pets`, payload: { name: 'Rex', categoryId: await aCategory(server), status } })
  return created.json.id
}

const place = (t: Test, server: FastifyInstance, petId: unknown, headers: Record<string, string> = {}, key?: string | null) =>
  call(t, server, { method: 'POST', url: `${api}/store/orders`, payload: { petId }, headers, ...(key !== undefined && { key }) })
const move = (t: Test, server: FastifyInstance, orderId: number | string, status: string) =>
  call(t, server, { method: 'PATCH', url: `${api}/store/orders/${orderId}`, payload: { status } })
const petStatus = async (t: Test, server: FastifyInstance, petId: number) => (await call(t, server, { url: `${api}/pets?id=${petId}` })).json[0].status

const placedAt = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

function ordersOn(name: string, store: Store) {
  t.test(`${name}: the life cycle: placed, then delivered (sold); an order for a sold pet is refused`, async (t) => {
    const server = await app(t, store)
    const petId = await newPet(t, server)
    const before = Date.now()
    const placed = await place(t, server, petId)
    t.equal(placed.status, 201)
    t.match(placed.json, { petId, status: 'placed', placedAt })
    t.ok(Date.parse(placed.json.placedAt) >= before - 1 && Date.parse(placed.json.placedAt) <= Date.now(), 'placedAt is now')
    t.equal(placed.headers.location, `${api}/store/orders/${placed.json.id}`)
    t.equal(placed.headers['api-stability'], 'experimental')
    t.equal(await petStatus(t, server, petId), 'pending', 'the pet is pending, in the same transaction')
    t.strictSame((await call(t, server, { url: `${api}/store/orders/${placed.json.id}` })).json, placed.json)

    const again = await place(t, server, petId)
    t.strictSame(again.json, { code: 'pet_unavailable', message: `Pet ${petId} is pending, not available`, status: 409 })

    const delivered = await move(t, server, placed.json.id, 'delivered')
    t.equal(delivered.status, 200)
    t.strictSame(delivered.json, { ...placed.json, status: 'delivered' })
    t.equal(await petStatus(t, server, petId), 'sold')
    t.strictSame((await place(t, server, petId)).json, { code: 'pet_unavailable', message: `Pet ${petId} is sold, not available`, status: 409 })

    for (const status of ['delivered', 'cancelled']) {
      const refused = await move(t, server, placed.json.id, status)
      t.strictSame(
        refused.json,
        { code: 'invalid_transition', message: `Order ${placed.json.id} is delivered: only a placed order can become ${status}`, status: 409 },
        'a delivered order moves no more; the message names its status',
      )
    }
    t.equal(await petStatus(t, server, petId), 'sold')
  })

  t.test(`${name}: cancelled, the pet is available again and can be ordered anew`, async (t) => {
    const server = await app(t, store)
    const petId = await newPet(t, server)
    const first = await place(t, server, petId)
    const cancelled = await move(t, server, first.json.id, 'cancelled')
    t.equal(cancelled.json.status, 'cancelled')
    t.equal(await petStatus(t, server, petId), 'available')
    t.match((await move(t, server, first.json.id, 'delivered')).json, { code: 'invalid_transition', message: /is cancelled/ })
    t.equal(await petStatus(t, server, petId), 'available', 'a refused transition changes nothing')
    const second = await place(t, server, petId)
    t.equal(second.status, 201)
    t.ok(second.json.id > first.json.id)
    t.equal((await move(t, server, second.json.id, 'delivered')).status, 200)
    t.equal(await petStatus(t, server, petId), 'sold')
  })

  t.test(`${name}: 404 for no such pet or order; pets created pending or sold cannot be ordered`, async (t) => {
    const server = await app(t, store)
    t.strictSame((await place(t, server, 42)).json, { code: 'not_found', message: 'Pet 42 not found', status: 404 })
    t.strictSame((await call(t, server, { url: `${api}/store/orders/7` })).json, { code: 'not_found', message: 'Order 7 not found', status: 404 })
    t.strictSame((await move(t, server, 7, 'cancelled')).json, { code: 'not_found', message: 'Order 7 not found', status: 404 })
    for (const status of ['pending', 'sold']) {
      const petId = await newPet(t, server, status)
      t.strictSame((await place(t, server, petId)).json, { code: 'pet_unavailable', message: `Pet ${petId} is ${status}, not available`, status: 409 })
      t.equal(await petStatus(t, server, petId), status)
    }
    t.strictSame((await call(t, server, { url: `${api}/store/orders` })).json, [], 'no order was made')
  })

  t.test(`${name}: listOrders pages in id order, filters by status and links to the next page`, async (t) => {
    const server = await app(t, store)
    const ids: number[] = []
    for (let i = 0; i < 7; i++) ids.push((await place(t, server, await newPet(t, server))).json.id)
    await move(t, server, ids[1]!, 'delivered')
    await move(t, server, ids[3]!, 'cancelled')
    await move(t, server, ids[5]!, 'delivered')

    const first = await call(t, server, { url: `${api}/store/orders?limit=3` })
    t.strictSame(
      first.json.map((order: { id: number }) => order.id),
      ids.slice(0, 3),
    )
    t.equal(first.headers.link, `<${api}/store/orders?limit=3&after=${ids[2]}>; rel="next"`)
    t.equal(first.headers['api-stability'], 'experimental')
    const rest = await call(t, server, { url: `${api}/store/orders?limit=3&after=${ids[5]}` })
    t.strictSame(
      rest.json.map((order: { id: number }) => order.id),
      [ids[6]],
    )
    t.notOk(rest.headers.link, 'no next link on the last page')

    const delivered = await call(t, server, { url: `${api}/store/orders?status=delivered&limit=1` })
    t.strictSame(
      delivered.json.map((order: { id: number }) => order.id),
      [ids[1]],
    )
    t.equal(delivered.headers.link, `<${api}/store/orders?limit=1&status=delivered&after=${ids[1]}>; rel="next"`)
    const next = await call(t, server, { url: `${api}/store/orders?status=delivered&limit=1&after=${ids[1]}` })
    t.strictSame(
      next.json.map((order: { id: number }) => order.id),
      [ids[5]],
    )
    t.strictSame(
      (await call(t, server, { url: `${api}/store/orders?status=placed` })).json.map((order: { id: number }) => order.id),
      [ids[0], ids[2], ids[4], ids[6]],
    )
    t.equal((await call(t, server, { url: `${api}/store/orders` })).json.length, 7, '20 by default: all seven')
    const head = await call(t, server, { method: 'HEAD', url: `${api}/store/orders?limit=1` })
    t.equal(head.status, 200)
    t.equal(head.headers['api-stability'], 'experimental')
  })

  t.test(`${name}: Idempotency-Key: the same body is answered again, without a second order; another body is a 422`, async (t) => {
    const server = await app(t, store)
    const petId = await newPet(t, server)
    const other = await newPet(t, server)
    const key = { 'idempotency-key': 'f0e4c2f7-0b1a-4c1e-9f3a-1d2b3c4d5e6f' }
    const first = await place(t, server, petId, key)
    t.equal(first.status, 201)
    t.equal(first.headers['idempotent-replayed'], undefined, 'a first answer is no replay')
    const retry = await place(t, server, petId, key)
    t.equal(retry.status, 201, 'a retry is answered as the first request was')
    t.equal(retry.headers['idempotent-replayed'], 'true', 'and says it is a replay')
    t.equal(retry.body, first.body, 'the same body, byte for byte')
    t.equal(retry.headers.location, first.headers.location)
    t.equal((await call(t, server, { url: `${api}/store/orders` })).json.length, 1, 'one order')

    // once delivered, a retry still gets the first answer: it is a replay, not a read
    await move(t, server, first.json.id, 'delivered')
    t.equal((await place(t, server, petId, key)).body, first.body)

    const reused = await place(t, server, other, key)
    t.strictSame(reused.json, {
      code: 'idempotency_key_reused',
      message: 'This Idempotency-Key was used in the last 24 hours for a request with another body: use a new key for a new request',
      status: 422,
    })
    t.equal(reused.headers['api-stability'], 'experimental')
    t.equal(await petStatus(t, server, other), 'available', 'nothing was done')
    const reordered = await call(t, server, {
      method: 'POST',
      url: `${api}/store/orders`,
      headers: { ...key, 'content-type': 'application/json' },
      payload: ` {"petId" : ${petId}}\n`,
    })
    t.equal(reordered.body, first.body, 'the same body written otherwise is the same body')

    // the outcomes that are kept: 409 and 404 as well
    const refusedKey = { 'idempotency-key': 'refused-1' }
    const refused = await place(t, server, petId, refusedKey)
    t.equal(refused.status, 409)
    const refusedAgain = await place(t, server, petId, refusedKey)
    t.equal(refusedAgain.body, refused.body)
    t.equal(refusedAgain.headers['idempotent-replayed'], 'true', 'a replayed 409 says so too')
    t.equal(refused.headers['idempotent-replayed'], undefined)
    const missingKey = { 'idempotency-key': 'missing-1' }
    t.equal((await place(t, server, 999_999, missingKey)).status, 404)
    await newPet(t, server) // (pet ids go on, but 999999 is still missing)
    t.equal((await place(t, server, 999_999, missingKey)).status, 404)
  })

  t.test(`${name}: Idempotency-Key: kept per API key; a request refused before the store keeps nothing`, async (t) => {
    const server = await app(t, store)
    const [a, b] = [await newPet(t, server), await newPet(t, server)]
    const key = { 'idempotency-key': 'shared-key' }
    const mine = await place(t, server, a, key)
    const theirs = await place(t, server, b, key, otherKey)
    t.equal(mine.status, 201)
    t.equal(theirs.status, 201, 'the other API key uses the same Idempotency-Key for its own request')
    t.not(theirs.json.id, mine.json.id)
    const theirsAgain = await place(t, server, a, key, otherKey)
    t.equal(theirsAgain.status, 422, 'and it is theirs: another body under it is a 422')

    const c = await newPet(t, server)
    const invalid = await call(t, server, { method: 'POST', url: `${api}/store/orders`, headers: { 'idempotency-key': 'k-400' }, payload: { petId: 'x' } })
    t.equal(invalid.status, 400)
    t.equal((await place(t, server, c, { 'idempotency-key': 'k-400' })).status, 201, 'a 400 kept nothing: the key is still new')

    for (const value of ['two words', 'é', 'x'.repeat(256), '']) {
      const response = await place(t, server, c, { 'idempotency-key': value })
      t.equal(response.status, 400, JSON.stringify(value))
      t.match(response.json.message, /^header\/idempotency-key /)
    }
    t.equal((await place(t, server, c, { 'idempotency-key': 'x'.repeat(255) })).status, 409, '255 visible ASCII characters are a key')
    const anonymous = await call(t, server, {
      method: 'POST',
      url: `${api}/store/orders`,
      headers: { 'idempotency-key': 'bad key' },
      payload: 'junk',
      key: null,
    })
    t.equal(anonymous.status, 401, 'authentication comes before validation')
    t.equal(anonymous.headers['api-stability'], 'experimental')
  })

  t.test(`${name}: Idempotency-Key: 20 requests at once with one key make one order, and get one answer`, async (t) => {
    const server = await app(t, store)
    const petId = await newPet(t, server)
    const key = { 'idempotency-key': 'at-once' }
    const answers = await Promise.all(Array.from({ length: 20 }, () => place(t, server, petId, key)))
    t.strictSame(new Set(answers.map((answer) => answer.status)), new Set([201]))
    t.equal(new Set(answers.map((answer) => answer.body)).size, 1, 'one body')
    t.equal((await call(t, server, { url: `${api}/store/orders` })).json.length, 1, 'one order')
    const mixed = await Promise.all(Array.from({ length: 10 }, (_, i) => place(t, server, i % 2 === 0 ? petId : petId + 1000, { 'idempotency-key': 'mixed' })))
    const statuses = mixed.map((answer) => answer.status)
    t.equal(statuses.filter((status) => status === 422).length, 5, 'the bodies that came second get 422')
    t.equal(new Set(statuses.filter((status) => status !== 422)).size, 1, 'the others one answer')
  })

  t.test(`${name}: a keyed outcome is forgotten after 24 hours: the key counts as new, and the sweep deletes it`, async (t) => {
    const server = await app(t, store)
    const petId = await newPet(t, server)
    const key = { 'idempotency-key': 'old-key' }
    const placed = await place(t, server, petId, key)
    t.equal(placed.status, 201)
    t.equal(await server.storage.orders.forgetExpiredKeys(), 0, 'a fresh key is kept')
    // (the key was first used when the order was placed)
    const dayAfter = Date.parse(placed.json.placedAt) + 24 * 60 * 60 * 1000
    t.equal(await server.storage.orders.forgetExpiredKeys(dayAfter), 0, 'for a day')
    t.equal(await server.storage.orders.forgetExpiredKeys(dayAfter + 1), 1, 'then it is deleted')
    t.equal((await place(t, server, petId, key)).status, 409, 'and the key is new again: this request is judged on its own')
  })

  t.test(`${name}: past 24 hours a key is new again, and every 10 minutes each server deletes the old ones`, async (t) => {
    // the clock and the intervals of the app, under the test's hand
    mock.timers.enable({ apis: ['Date', 'setInterval'], now: Date.now() })
    t.teardown(() => mock.timers.reset())
    const server = await app(t, store)
    const [a, b] = [await newPet(t, server), await newPet(t, server)]
    const key = { 'idempotency-key': 'a-day-old' }
    t.equal((await place(t, server, a, key)).status, 201)
    mock.timers.setTime(Date.now() + idempotencyWindowMs)
    t.equal((await place(t, server, b, key)).status, 422, 'a day to the millisecond: still kept')
    mock.timers.setTime(Date.now() + 1)
    const anew = await place(t, server, b, key)
    t.equal(anew.status, 201, 'a day and a millisecond: the key is new, another body is fine')
    t.equal(await server.storage.orders.forgetExpiredKeys(), 0, 'the old use of the key was replaced')

    const later = { 'idempotency-key': 'swept' }
    t.equal((await place(t, server, 1_000, later)).status, 404)
    mock.timers.setTime(Date.now() + idempotencyWindowMs + 1)
    mock.timers.tick(forgetEveryMs)
    // the sweep runs in the background: give it its turn
    await new Promise((resolve) => setImmediate(resolve))
    t.equal(await server.storage.orders.forgetExpiredKeys(), 0, 'the sweep deleted the expired keys')
    t.equal((await place(t, server, b, later)).status, 409, 'and the key is new')
  })

  t.test(`${name}: bad parameters and bodies are 400, naming the problem, with the stability header`, async (t) => {
    const server = await app(t, store)
    const cases: [string, string, unknown, RegExp][] = [
      ['POST', `${api}/store/orders`, { petId: '1' }, /^body\/petId must be integer$/],
      ['POST', `${api}/store/orders`, { petId: 0 }, /^body\/petId must be >= 1$/],
      ['POST', `${api}/store/orders`, { petId: 1, quantity: 2 }, /^body must NOT have additional property 'quantity'$/],
      ['POST', `${api}/store/orders`, {}, /^body must have required property 'petId'$/],
      ['PATCH', `${api}/store/orders/1`, { status: 'placed' }, /^body\/status must be one of: delivered, cancelled$/],
      ['PATCH', `${api}/store/orders/1`, {}, /^body must have required property 'status'$/],
      ['PATCH', `${api}/store/orders/1e2`, { status: 'cancelled' }, /^path\/orderId must be an integer in decimal digits$/],
      ['GET', `${api}/store/orders/0`, undefined, /^path\/orderId must be >= 1$/],
      ['GET', `${api}/store/orders/0x10`, undefined, /^path\/orderId must be an integer in decimal digits$/],
      ['GET', `${api}/store/orders?status=sold`, undefined, /^query\/status must be one of: placed, delivered, cancelled$/],
      ['GET', `${api}/store/orders?limit=101`, undefined, /^query\/limit must be <= 100$/],
      ['GET', `${api}/store/orders?after=-1`, undefined, /^query\/after must be an integer in decimal digits$/],
    ]
    for (const [method, url, payload, message] of cases) {
      const response = await call(t, server, { method, url, ...(payload !== undefined && { payload: payload as object }) })
      t.equal(response.status, 400, `${method} ${url} ${JSON.stringify(payload)}`)
      t.match(response.json.message, message)
      t.equal(response.headers['api-stability'], 'experimental')
    }
    const text = await call(t, server, { method: 'PATCH', url: `${api}/store/orders/1`, headers: { 'content-type': 'text/plain' }, payload: 'delivered' })
    t.equal(text.status, 415)
    t.equal(text.headers['api-stability'], 'experimental')
  })
}

t.test('the Idempotency-Key window and sweep are those the contract publishes', async (t) => {
  const { document, service } = newest
  const description = String((document.components!.parameters!.IdempotencyKey as { description: string }).description).replace(/\s+/g, ' ')
  const hours = service.limits.idempotencyKeyHours
  t.equal(idempotencyWindowMs, hours * 60 * 60 * 1000, 'the default of the storage is the window of the contract')
  t.match(description, `For ${hours} hours after a first request with this key`)
  t.match(description, `forgotten ${hours} hours after its first use`)
  t.equal(forgetEveryMs, 10 * 60 * 1000)
  t.match(description, 'the server deletes forgotten keys every 10 minutes')
})

t.test('a sweep that fails (the SQLite file locked by another process) is tried again 10 minutes later', async (t) => {
  mock.timers.enable({ apis: ['Date', 'setInterval'], now: Date.now() })
  t.teardown(() => mock.timers.reset())
  const dir = mkdtempSync(join(tmpdir(), 'petstore-sweep-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'pets.db')
  const server = await build(t, { DATABASE_URL: `sqlite:${file}`, DATABASE_TIMEOUT_MS: 100 })
  t.equal((await place(t, server, 1, { 'idempotency-key': 'locked-out' })).status, 404)
  mock.timers.setTime(Date.now() + idempotencyWindowMs + 1)

  const other = new SQLite(file)
  t.teardown(() => other.close())
  other.exec('begin immediate') // the write lock, held
  mock.timers.tick(forgetEveryMs)
  other.exec('rollback')
  t.equal(await server.storage.orders.forgetExpiredKeys(), 1, 'the locked-out sweep deleted nothing, and the server went on')
  t.equal((await call(t, server, { url: `${api}/store/orders` })).status, 200)
  t.equal((await place(t, server, 1, { 'idempotency-key': 'next-time' })).status, 404)
  mock.timers.setTime(Date.now() + idempotencyWindowMs + 1)
  mock.timers.tick(forgetEveryMs)
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(await server.storage.orders.forgetExpiredKeys(), 0, 'the next sweep, with the lock gone, did')
})

for (const [name, store] of stores) {
  if (name === 'PostgreSQL' && postgresMissing) t.test(name, { skip: postgresMissing }, async () => {})
  else ordersOn(name, store)
}
