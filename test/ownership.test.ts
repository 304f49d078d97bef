/**
 * Orders belong to the API key that placed them (OWASP API1:2023), on each store: another key's
 * order is a 404 to getOrder and updateOrder and absent from listOrders; store staff
 * (orders:admin) see and move every order, those placed before orders had owners included; an
 * order's events go to the subscriptions of its owner only. Every response is checked against
 * the contract by call().
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { aCategory, api, build, call } from './helpers/app.js'
import { freshPostgres, postgresMissing, query } from './helpers/postgres.js'

const alice = 'alice-key-4b1f0e'
const bob = 'bob-key-9c3d77'
/** a key that subscribes to nothing */
const carol = 'carol-key-61e0d4'
/** store staff: every default role, and orders:admin */
const staff = 'staff-key-52aa18'
const staffEntry = `${staff}:pets:read+pets:write+orders:read+orders:write+orders:admin+webhooks:read+webhooks:write`

/** A database, by its URL, and a way to run SQL in it beside the server. */
interface Store {
  url: string
  run(text: string, values: unknown[]): Promise<void>
}
const stores: [string, (t: Test) => Promise<Store>][] = [
  [
    'SQLite',
    async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'petstore-owners-')), 'owners.db')
      return {
        url: `sqlite:${file}`,
        async run(text, values) {
          const db = new SQLite(file)
          db.prepare(text.replace(/\$\d+/g, '?')).run(...values)
          db.close()
        },
      }
    },
  ],
  [
    'PostgreSQL',
    async (t) => {
      const url = await freshPostgres(t)
      return { url, run: async (text, values) => void (await query(url, text, values)) }
    },
  ],
]

async function app(t: Test, store: Store): Promise<FastifyInstance> {
  // (subscriptions to a closed local port: the deliveries are made, and stay pending)
  const options = { WEBHOOK_ALLOW_HTTP: true, WEBHOOK_ALLOW_PRIVATE: true, WEBHOOK_POLL_MS: 60_000 }
  return build(t, { DATABASE_URL: store.url, DATABASE_POOL_SIZE: 2, ...options, API_KEYS: [alice, bob, carol, staffEntry] })
}

async function placed(t: Test, server: FastifyInstance, key: string): Promise<number> {
  const pet = await call(t, server, { method: 'POST', url: `${api}/pets`, payload: { name: 'Rex', categoryId: await aCategory(server) }, key })
  const order = await call(t, server, { method: 'POST', url: `${api}/store/orders`, payload: { petId: pet.json.id }, key })
  t.equal(order.status, 201)
  return order.json.id
}

const ids = (orders: { id: number }[]) => orders.map(({ id }) => id)

function ownershipOn(name: string, open: (t: Test) => Promise<Store>) {
  t.test(`${name}: each key sees and moves its own orders only; staff see and move all`, async (t) => {
    const store = await open(t)
    const server = await app(t, store)
    const ofAlice = await placed(t, server, alice)
    const ofBob = await placed(t, server, bob)

    const get = (key: string, id: number) => call(t, server, { url: `${api}/store/orders/${id}`, key })
    const list = (key: string, query = '') => call(t, server, { url: `${api}/store/orders${query}`, key })
    const move = (key: string, id: number, status: string) => call(t, server, { method: 'PATCH', url: `${api}/store/orders/${id}`, payload: { status }, key })

    t.equal((await get(alice, ofAlice)).status, 200, 'getOrder: the owner reads its order')
    t.strictSame((await get(bob, ofAlice)).json, { code: 'not_found', message: `Order ${ofAlice} not found`, status: 404 }, 'another key is told of none')
    t.strictSame(ids((await list(alice)).json), [ofAlice], 'listOrders: its own only')
    t.strictSame(ids((await list(bob)).json), [ofBob])
    t.strictSame(ids((await list(bob, '?status=placed')).json), [ofBob], 'with a status too')
    t.strictSame(ids((await list(alice, `?after=${ofAlice}`)).json), [], 'and past its last, nothing of another key')

    const cancelled = await move(bob, ofAlice, 'cancelled')
    t.strictSame(cancelled.json, { code: 'not_found', message: `Order ${ofAlice} not found`, status: 404 }, 'updateOrder: another key cannot cancel it')
    t.equal((await get(alice, ofAlice)).json.status, 'placed', 'the order is untouched')

    t.strictSame(ids((await list(staff)).json), [ofAlice, ofBob], 'staff list every order')
    t.strictSame(ids((await list(staff, '?status=placed')).json), [ofAlice, ofBob], 'with a status too')
    t.equal((await get(staff, ofBob)).status, 200, 'and read any')
    t.equal((await move(staff, ofBob, 'delivered')).json.status, 'delivered', 'and move any')
    t.equal((await move(staff, ofBob, 'cancelled')).json.code, 'invalid_transition', 'as the rules allow')
    t.equal((await move(staff, 999_999, 'cancelled')).status, 404)
    t.equal((await move(bob, ofBob, 'cancelled')).json.code, 'invalid_transition', 'the owner is told where its order stands')
    t.equal((await move(alice, ofAlice, 'delivered')).json.status, 'delivered', 'the owner moves its own')
    t.strictSame(ids((await list(bob, '?status=delivered')).json), [ofBob])

    // an order placed before orders had owners: staff only
    const legacy = await placed(t, server, alice)
    await store.run('update orders set owner = null where id = $1', [legacy])
    t.equal((await get(alice, legacy)).status, 404, "an order without owner is no key's")
    t.strictSame(ids((await list(alice)).json), [ofAlice])
    t.equal((await get(staff, legacy)).status, 200, 'staff see it')
    t.equal((await move(staff, legacy, 'cancelled')).json.status, 'cancelled', 'and move it')
  })

  t.test(`${name}: an order's events go to its owner's subscriptions only; a pet's to all`, async (t) => {
    const store = await open(t)
    const server = await app(t, store)
    const subscribe = async (key: string) =>
      (
        await call(t, server, {
          method: 'POST',
          url: `${api}/webhooks`,
          payload: { url: 'http://127.0.0.1:9/hook', events: ['order.placed', 'order.status_changed', 'pet.created'] },
          key,
        })
      ).json.id
    const subscriptions = { alice: await subscribe(alice), bob: await subscribe(bob), staff: await subscribe(staff) }
    const ofAlice = await placed(t, server, alice)
    await call(t, server, { method: 'PATCH', url: `${api}/store/orders/${ofAlice}`, payload: { status: 'cancelled' }, key: staff })
    const received = async (key: string, id: number) =>
      (await call(t, server, { url: `${api}/webhooks/${id}/deliveries`, key })).json.map(({ eventType }: { eventType: string }) => eventType).sort()
    t.strictSame(
      await received(alice, subscriptions.alice),
      ['order.placed', 'order.status_changed', 'pet.created'],
      'the owner is told of its order, also when staff move it',
    )
    t.strictSame(await received(bob, subscriptions.bob), ['pet.created'], 'another key only of the pet')
    t.strictSame(await received(staff, subscriptions.staff), ['pet.created'], 'staff read orders, they are not sent them')

    // an order of a key without subscriptions goes to no one, though others take its type
    const ofCarol = await placed(t, server, carol)
    await call(t, server, { method: 'PATCH', url: `${api}/store/orders/${ofCarol}`, payload: { status: 'delivered' }, key: carol })
    t.strictSame(await received(bob, subscriptions.bob), ['pet.created', 'pet.created'], 'no one is told of it')
    t.strictSame(await received(staff, subscriptions.staff), ['pet.created', 'pet.created'])

    // an order of no key (placed before owners) sends nothing when moved
    const legacy = await placed(t, server, bob)
    await store.run('update orders set owner = null where id = $1', [legacy])
    await call(t, server, { method: 'PATCH', url: `${api}/store/orders/${legacy}`, payload: { status: 'delivered' }, key: staff })
    t.strictSame(
      await received(bob, subscriptions.bob),
      ['order.placed', 'pet.created', 'pet.created', 'pet.created'],
      'no order.status_changed for an order without owner',
    )
  })
}

for (const [name, store] of stores) {
  if (name === 'PostgreSQL' && postgresMissing) t.test(`${name}: order ownership`, { skip: postgresMissing }, () => {})
  else ownershipOn(name, store)
}
