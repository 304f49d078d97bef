/**
 * Conditional requests (RFC 9110 section 13), on each store and through each served version:
 * every read's 200 carries a strong ETag of its body as that version shows it, If-None-Match is
 * answered 304 with the headers section 15.4.5 asks for and never once the representation
 * changed, and updateOrder's If-Match is judged in the change's transaction (412: nothing
 * changed). Every answer is checked against the contract by call().
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import type { OpenAPIV3 } from 'openapi-types'
import pg from 'pg'
import t, { type Test } from 'tap'
import type { AppOptions } from '../src/app.js'
import { readContract } from '../src/contract/model.js'
import { entityTag, matchHolds, noneMatchHolds, tagsOf } from '../src/http/conditional.js'
import { openStorage } from '../src/repositories.js'
import { connect } from '../src/storage/index.js'
import { storeParts } from '../src/storage/revision.js'
import { aCategory, api, build, call, newest, servedContracts, testKey } from './helpers/app.js'
import { rawExchange } from './helpers/raw-http.js'
import { freshPostgres, postgresMissing, query } from './helpers/postgres.js'
import { writeAfterNextRevision } from './helpers/revision.js'

/** Store staff: sees and moves every order. */
const staffKey = `staff-key-5c1e08:${[...newest.roles.defaults, 'orders:admin'].join('+')}`
const staff = staffKey.split(':')[0]!
/** A client's key other than testKey. */
const otherKey = 'other-key-41b7d2'

type Store = (t: Test) => Promise<Partial<AppOptions>>
const stores: [string, Store][] = [
  ['SQLite', async () => ({})],
  ['PostgreSQL', async (t) => ({ DATABASE_URL: await freshPostgres(t), DATABASE_POOL_SIZE: 4 })],
]

/** A new store of the kind `name`, as a URL another connection can open too. */
async function storeUrl(t: Test, name: string): Promise<string> {
  if (name === 'PostgreSQL') return freshPostgres(t)
  const dir = mkdtempSync(join(tmpdir(), 'petstore-revision-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return `sqlite:${join(dir, 'pets.db')}`
}

const server = async (t: Test, store: Store) => build(t, { ...(await store(t)), API_KEYS: [testKey, staffKey, otherKey] })

const tagged = /^"v[0-9]+-[A-Za-z0-9_-]{27}"$/

/** A pet made through the newest version, as its id. */
async function aPet(t: Test, app: FastifyInstance): Promise<number> {
  return (await call(t, app, { method: 'POST', url: `${api}/pets`, payload: { name: 'Rex', categoryId: await aCategory(app) } })).json.id
}

const read = (t: Test, app: FastifyInstance, url: string, ifNoneMatch?: string, key?: string) =>
  call(t, app, { url, ...(ifNoneMatch !== undefined && { headers: { 'if-none-match': ifNoneMatch } }), ...(key !== undefined && { key }) })

function conditionalOn(name: string, store: Store) {
  t.test(`${name}: every read's 200 is tagged, per version; If-None-Match is answered 304 while the representation is the same`, async (t) => {
    const app = await server(t, store)
    const petId = await aPet(t, app)
    const orderId = (await call(t, app, { method: 'POST', url: `${api}/store/orders`, payload: { petId } })).json.id
    // (a read of each kind, through each version: lists, one object, deprecated, experimental)
    const reads = servedContracts.flatMap((contract) => {
      const ids = { petId, orderId, categoryId: 1 }
      return [...contract.operations.values()]
        .filter(({ method, conditional }) => method === 'GET' && conditional.ifNoneMatch)
        .filter(({ path }) => !path.includes('{webhookId}'))
        .map((operation) => ({ operation, url: contract.urlOf(operation.id, ids) }))
    })
    t.ok(reads.length >= 10, `${reads.length} reads`)
    for (const { operation, url } of reads) {
      const first = await read(t, app, url)
      t.equal(first.status, 200, url)
      t.match(first.headers.etag, tagged, `${url}: a strong tag`)
      t.equal(first.headers['cache-control'], 'private, no-cache', `${url}: kept by the client alone, revalidated`)
      const again = await read(t, app, url)
      t.equal(again.headers.etag, first.headers.etag, `${url}: the same representation, the same tag`)

      const unchanged = await read(t, app, url, String(first.headers.etag))
      t.equal(unchanged.status, 304, `${url}: 304`)
      t.equal(unchanged.body, '', 'without a body')
      t.notOk('content-type' in unchanged.headers || 'content-length' in unchanged.headers, 'nor its type or length')
      t.equal(unchanged.headers.etag, first.headers.etag, 'with its ETag')
      // (RFC 9110 section 15.4.5: what the 200 would have carried, that describes it)
      for (const header of ['cache-control', 'ratelimit-policy', 'api-stability', 'deprecation', 'sunset', 'x-content-type-options']) {
        t.equal(unchanged.headers[header], first.headers[header], `${url}: ${header} as on the 200`)
      }
      if (operation.lifecycle.deprecation !== undefined) t.equal(unchanged.headers.link, first.headers.link, `${url}: the lifecycle Link`)
      t.ok(unchanged.headers.ratelimit, 'and the rate limit where it stands')

      const head = await call(t, app, { method: 'HEAD', url, headers: { 'if-none-match': String(first.headers.etag) } })
      t.equal(head.status, 304, `HEAD ${url}: 304 too`)
      t.equal(head.headers.etag, first.headers.etag)
    }
  })

  t.test(`${name}: If-None-Match lists tags, compared weakly, or is *; another tag is answered 200`, async (t) => {
    const app = await server(t, store)
    await aPet(t, app)
    const url = `${api}/pets`
    const tag = String((await read(t, app, url)).headers.etag)
    t.equal((await read(t, app, url, `W/${tag}`)).status, 304, 'W/ matches the strong tag it names')
    t.equal((await read(t, app, url, `"a", ${tag} ,W/"b"`)).status, 304, 'one of a list')
    t.equal((await read(t, app, url, '*')).status, 304, '*: any representation')
    const other = await read(t, app, url, '"v2-someone-elses"')
    t.equal(other.status, 200)
    t.equal(other.headers.etag, tag, 'the current representation, and its tag')
    const malformed = await read(t, app, url, 'no quotes')
    t.equal(malformed.status, 400, 'a field that is no list of tags is a 400')
    t.match(malformed.json, { code: 'invalid_request', message: /if-none-match/ })
  })

  t.test(`${name}: a pet read through /v1 and through /v2 has two tags; a change of the pet changes both, and no 304 follows it`, async (t) => {
    const app = await server(t, store)
    const petId = await aPet(t, app)
    const [v1, v2] = servedContracts
    const urls = [v1!.urlOf('getPet', { petId }), `${v1!.urlOf('listPets')}?id=${petId}`, `${v2!.urlOf('listPets')}?id=${petId}`, v2!.urlOf('listPets')]
    const before = await Promise.all(urls.map((url) => read(t, app, url)))
    t.not(before[0]!.headers.etag, before[1]!.headers.etag, 'one pet and a list of it: two representations, two tags')
    t.not(before[1]!.headers.etag, before[2]!.headers.etag, 'one pet through two versions: two tags')

    // (an order makes the pet pending: each representation of it changes)
    const orderId = (await call(t, app, { method: 'POST', url: `${api}/store/orders`, payload: { petId } })).json.id
    for (const [i, url] of urls.entries()) {
      const after = await read(t, app, url, String(before[i]!.headers.etag))
      t.equal(after.status, 200, `${url}: a 200, not a 304, once the pet changed`)
      t.not(after.headers.etag, before[i]!.headers.etag, `${url}: a new tag`)
      t.match(after.body, /"status":"pending"/, 'with the pet as it is now')
    }
    // (a new pet changes the page it joins)
    const page = await read(t, app, v2!.urlOf('listPets'))
    await aPet(t, app)
    t.equal((await read(t, app, v2!.urlOf('listPets'), String(page.headers.etag))).status, 200, 'a new pet: the page changed')

    const order = await read(t, app, `${api}/store/orders/${orderId}`)
    await call(t, app, { method: 'PATCH', url: `${api}/store/orders/${orderId}`, payload: { status: 'delivered' } })
    const moved = await read(t, app, `${api}/store/orders/${orderId}`, String(order.headers.etag))
    t.equal(moved.status, 200, 'a change of the order changes its tag')
    t.not(moved.headers.etag, order.headers.etag)
  })

  t.test(`${name}: an order's tag is of the key's view: staff's list and the owner's differ`, async (t) => {
    const app = await server(t, store)
    await call(t, app, { method: 'POST', url: `${api}/store/orders`, payload: { petId: await aPet(t, app) } })
    await call(t, app, { method: 'POST', url: `${api}/store/orders`, payload: { petId: await aPet(t, app) }, key: staff })
    const own = await read(t, app, `${api}/store/orders`)
    const every = await read(t, app, `${api}/store/orders`, String(own.headers.etag), staff)
    t.equal(every.status, 200, "the owner's tag does not make staff's list a 304")
    t.equal(every.json.length, 2)
  })

  t.test(`${name}: updateOrder's If-Match: the tag read proceeds; a stale or unknown one is 412 and changes nothing`, async (t) => {
    const app = await server(t, store)
    for (const contract of servedContracts) {
      const petId = await aPet(t, app)
      const orderUrl = `${contract.urlOf('placeOrder')}/${(await call(t, app, { method: 'POST', url: contract.urlOf('placeOrder'), payload: { petId } })).json.id}`
      const tag = String((await read(t, app, orderUrl)).headers.etag)
      const change = (ifMatch: string, status = 'delivered') =>
        call(t, app, { method: 'PATCH', url: orderUrl, payload: { status }, headers: { 'if-match': ifMatch } })

      for (const stale of ['"v9-unknown"', `W/${tag}`, tag.replace(/^"v[0-9]+/, (version) => (version === '"v1' ? '"v2' : '"v1'))]) {
        const refused = await change(stale)
        t.equal(refused.status, 412, `${orderUrl}: If-Match ${stale}`)
        t.match(refused.json, { code: 'precondition_failed', status: 412 })
      }
      t.equal((await read(t, app, orderUrl, tag)).status, 304, 'nothing changed: the order is as it was read')
      t.equal((await read(t, app, `${api}/pets?id=${petId}`)).json[0].status, 'pending', 'nor its pet')

      const done = await change(`"x", ${tag}`)
      t.equal(done.status, 200, 'the tag read: the change is made')
      t.match(done.json, { status: 'delivered' })
      t.match(done.headers.etag, tagged, "its answer carries the order's new tag")
      t.equal(done.headers['cache-control'], 'no-store', 'a change is not kept')
      t.equal((await read(t, app, orderUrl, String(done.headers.etag))).status, 304, 'the tag a read of it gives')
      const late = await change(tag, 'cancelled')
      t.equal(late.status, 412, 'the tag read before the change is stale now: 412, not the 409 of the transition')
      t.equal((await change('*', 'cancelled')).status, 409, '*: the order exists, and is judged as without If-Match')
      t.equal((await change(tag)).status, 412)
    }
    t.equal(
      (await call(t, app, { method: 'PATCH', url: `${api}/store/orders/99`, payload: { status: 'delivered' }, headers: { 'if-match': '*' } })).status,
      404,
      'no such order: 404, whatever If-Match says',
    )
    t.equal(
      (await call(t, app, { method: 'PATCH', url: `${api}/store/orders/1`, payload: { status: 'delivered' }, headers: { 'if-match': 'x' } })).status,
      400,
      'a field that is no list of tags is a 400',
    )
  })

  t.test(`${name}: two staff move one order at once, each with the tag they read: one wins, the other is told 412`, async (t) => {
    const app = await server(t, store)
    for (let round = 0; round < 5; round++) {
      const petId = await aPet(t, app)
      const orderUrl = `${api}/store/orders/${(await call(t, app, { method: 'POST', url: `${api}/store/orders`, payload: { petId } })).json.id}`
      const tag = String((await read(t, app, orderUrl, undefined, staff)).headers.etag)
      const answers = await Promise.all(
        ['delivered', 'cancelled'].map((status) =>
          call(t, app, { method: 'PATCH', url: orderUrl, payload: { status }, headers: { 'if-match': tag }, key: staff }),
        ),
      )
      t.strictSame(answers.map(({ status }) => status).sort(), [200, 412], `round ${round}: one 200, one 412`)
      const winner = answers.find(({ status }) => status === 200)!.json.status
      t.equal((await read(t, app, orderUrl, undefined, staff)).json.status, winner, 'the order is as the winner made it')
      t.equal((await read(t, app, `${api}/pets?id=${petId}`)).json[0].status, winner === 'delivered' ? 'sold' : 'available', 'and so is its pet')
    }
  })

  t.test(
    `${name}: a page's tag is of the revision of what it shows: each change a page shows gives it a new tag, and no 304 follows it; a change it does not show leaves it`,
    async (t) => {
      const app = await server(t, store)
      const [v1, v2] = servedContracts
      const pages = [v1!.urlOf('listPets'), `${v2!.urlOf('listPets')}?limit=5&status=available`, v2!.urlOf('listCategories'), v2!.urlOf('listOrders')]
      const tags = () => Promise.all(pages.map(async (url) => String((await read(t, app, url, undefined, staff)).headers.etag)))
      let petId = 0
      let orderId = 0
      // (which pages each change shows in: the catalogue's three, staff's orders; an order moves its pet too)
      const catalogue = [0, 1, 2]
      const writes: [string, () => Promise<unknown>, number[]][] = [
        ['a category added', () => aCategory(app, 'Fish'), catalogue],
        ['a pet added', async () => (petId = await aPet(t, app)), catalogue],
        [
          'an order placed',
          async () => (orderId = (await call(t, app, { method: 'POST', url: v2!.urlOf('placeOrder'), payload: { petId } })).json.id),
          [...catalogue, 3],
        ],
        [
          'an order moved',
          () => call(t, app, { method: 'PATCH', url: v2!.urlOf('updateOrder', { orderId }), payload: { status: 'delivered' }, key: staff }),
          [...catalogue, 3],
        ],
        [
          'a pet added through version 1',
          () => call(t, app, { method: 'POST', url: v1!.urlOf('createPet'), payload: { name: 'Old', categoryId: 1 } }),
          catalogue,
        ],
        [
          'a webhook subscription made (no page of the store shows it)',
          () => call(t, app, { method: 'POST', url: v2!.urlOf('createWebhook'), payload: { url: 'https://93.184.215.14/hooks', events: ['pet.created'] } }),
          [],
        ],
      ]
      let before = await tags()
      t.strictSame(await tags(), before, 'reads change no tag')
      t.equal(new Set(before).size, pages.length, 'each page its own tag')
      for (const [what, write, shown] of writes) {
        await write()
        const after = await tags()
        for (const [i, url] of pages.entries()) {
          if (!shown.includes(i)) {
            t.equal(after[i], before[i], `${what}: ${url} keeps its tag`)
            t.equal((await read(t, app, url, before[i], staff)).status, 304, `${what}: ${url} with the tag before it is a 304`)
            continue
          }
          t.not(after[i], before[i], `${what}: ${url} has a new tag`)
          t.equal((await read(t, app, url, before[i], staff)).status, 200, `${what}: ${url} with the tag before it is a 200`)
          t.equal((await read(t, app, url, after[i], staff)).status, 304, `${what}: ${url} with the tag after it is a 304`)
        }
        before = after
      }
      const owners = await read(t, app, v2!.urlOf('listOrders'))
      t.not(owners.headers.etag, before[3], "the key's view is part of the tag: the owner's list and staff's have two")
      t.equal((await read(t, app, v2!.urlOf('listOrders'), before[3])).status, 200, "staff's tag is no 304 for the owner")
    },
  )

  t.test(`${name}: key B's pages of its own (orders, webhooks) keep their tags while key A changes its own, and change with B's`, async (t) => {
    const app = await server(t, store)
    const v2 = servedContracts.at(-1)!
    const [a, b] = [testKey, otherKey]
    const order = async (key: string) => {
      const placed = await call(t, app, { method: 'POST', url: v2.urlOf('placeOrder'), payload: { petId: await aPet(t, app) }, key })
      t.equal(placed.status, 201, 'an order placed')
      return placed.json.id as number
    }
    const subscribe = async (key: string) =>
      t.equal(
        (
          await call(t, app, {
            method: 'POST',
            url: v2.urlOf('createWebhook'),
            // (an event of the key's own orders moved, which no step of this test makes after it subscribed: nothing is sent)
            payload: { url: 'https://93.184.215.14/hooks', events: ['order.status_changed'] },
            key,
          })
        ).status,
        201,
        'a subscription made',
      )
    await order(b)
    await subscribe(b)
    const pages = [v2.urlOf('listOrders'), `${v2.urlOf('listOrders')}?status=placed`, v2.urlOf('listWebhooks')]
    const tagsOf = (key: string) => Promise.all(pages.map(async (url) => String((await read(t, app, url, undefined, key)).headers.etag)))
    const before = await tagsOf(b)
    // (A's orders placed, moved and its subscriptions made, one after the other: B sees none)
    for (const [what, change] of [
      ['A places an order', () => order(a)],
      [
        'A moves its order',
        async () => call(t, app, { method: 'PATCH', url: v2.urlOf('updateOrder', { orderId: await order(a) }), payload: { status: 'cancelled' }, key: a }),
      ],
      ['A subscribes', () => subscribe(a)],
    ] as const) {
      await change()
      t.strictSame(await tagsOf(b), before, `${what}: B's pages keep their tags`)
      for (const [i, url] of pages.entries()) t.equal((await read(t, app, url, before[i], b)).status, 304, `${what}: B's ${url} is a 304`)
    }
    await order(b)
    const afterOrder = await tagsOf(b)
    t.not(afterOrder[0], before[0], "B places an order: B's list of orders has a new tag")
    t.not(afterOrder[1], before[1], 'and its list of placed orders')
    t.equal(afterOrder[2], before[2], 'its list of subscriptions keeps its tag')
    t.equal((await read(t, app, pages[0]!, before[0], b)).status, 200, 'the tag before it is a 200')
    await subscribe(b)
    const afterSubscription = await tagsOf(b)
    t.not(afterSubscription[2], afterOrder[2], "B subscribes: B's list of subscriptions has a new tag")
    t.strictSame(afterSubscription.slice(0, 2), afterOrder.slice(0, 2), 'its lists of orders keep theirs')
    const page = String((await read(t, app, v2.urlOf('listPets'), undefined, b)).headers.etag)
    await aPet(t, app)
    t.equal((await read(t, app, v2.urlOf('listPets'), page, b)).status, 200, "A adds a pet: B's page of the catalogue, which every key sees, has a new tag")
  })

  t.test(
    `${name}: the revision is read before the page: a change committed between the two reads makes the tag older than the page, and the next request a 200`,
    async (t) => {
      const app = await server(t, store)
      const categoryId = await aCategory(app)
      await aPet(t, app)
      const { storage } = app
      // (a real write, committed after the revision is read and before the handler reads the page)
      writeAfterNextRevision(t, storage, () => storage.pets.create({ name: 'Between', categoryId, status: 'available' }))
      const url = servedContracts[1]!.urlOf('listPets')
      const first = await read(t, app, url)
      t.equal(first.json.length, 2, 'the page shows the change made between the reads')
      const next = await read(t, app, url, String(first.headers.etag))
      t.equal(next.status, 200, 'so its tag, of the revision before, is stale: a 200, never a 304 over a page it did not show')
      t.equal(next.body, first.body, 'the same page')
      t.not(next.headers.etag, first.headers.etag, 'with the tag of the revision it shows')
      t.equal((await read(t, app, url, String(next.headers.etag))).status, 304, 'which is a 304 then')
    },
  )

  t.test(`${name}: a part's revision grows in the transaction of every change of what it shows, by anyone, and with nothing else`, async (t) => {
    const url = await storeUrl(t, name)
    const storage = await openStorage(url, { poolSize: 2 })
    t.teardown(() => storage.close())
    const { sql } = await connect(url, { poolSize: 2 }).then((database) => (t.teardown(() => database.close()), database))
    const id = async (text: string, params: unknown[]) => (await sql.row<{ id: number }>(`${text} returning id`, params))!.id
    // (the catalogue, staff's every order, and the orders of two owners)
    const parts = [storeParts.catalogue, storeParts.everyOrder, storeParts.ordersOf('key:1'), storeParts.ordersOf('key:2')]
    const now = async () => {
      const revisions = await storage.revisions(parts)
      return parts.map((part) => BigInt(revisions.get(part)!))
    }
    const [catalogue, orders, none] = [[0], [1, 2], []]
    const revised = async (what: string, change: () => unknown, grows: number[] = []) => {
      const before = await now()
      await change()
      const after = await now()
      for (const [i, part] of parts.entries()) {
        if (grows.includes(i)) t.ok(after[i]! > before[i]!, `${what}: ${part} grows`)
        else t.equal(after[i], before[i], `${what}: ${part} stays`)
      }
    }
    t.strictSame(await now(), [0n, 0n, 0n, 0n], 'a part never changed is at 0')
    await revised('a category added', () => sql.run("insert into categories (id, name, name_fold, created_at) values (900, 'Fish', 'fish', 0)"), catalogue)
    await revised('a category renamed', () => sql.run("update categories set name = 'Fishes', name_fold = 'fishes' where id = 900"), catalogue)
    let petId = 0
    await revised('a pet added', async () => (petId = await id("insert into pets (name, category_id, status) values ('Rex', 900, 'available')", [])), catalogue)
    await revised('a pet renamed', () => sql.run("update pets set name = 'Max' where id = $1", [petId]), catalogue)
    let otherPetId = 0
    await revised(
      'another pet added',
      async () => (otherPetId = await id("insert into pets (name, category_id, status) values ('Tom', 900, 'available')", [])),
      catalogue,
    )
    let orderId = 0
    await revised(
      'an order placed',
      async () => (orderId = await id("insert into orders (pet_id, status, placed_at, owner) values ($1, 'placed', 0, 'key:1')", [petId])),
      orders,
    )
    await revised('an order moved', () => sql.run("update orders set status = 'delivered' where id = $1", [orderId]), orders)
    await revised(
      'an order given to another owner (by hand): both owners see it move',
      () => sql.run("update orders set owner = 'key:2' where id = $1", [orderId]),
      [1, 2, 3],
    )
    await revised(
      'an order placed before keys owned orders (no owner): staff alone see it',
      () => sql.run("insert into orders (pet_id, status, placed_at) values ($1, 'placed', 0)", [otherPetId]),
      [1],
    )
    let subscriptionId = 0
    await revised(
      'a subscription made',
      async () =>
        (subscriptionId = await id(
          "insert into webhook_subscriptions (owner, url, events, secret, created_at) values ('key:1', 'https://example.com/', '[]', 's', 0)",
          [],
        )),
    )
    await revised('a subscription disabled', () => sql.run("update webhook_subscriptions set status = 'disabled' where id = $1", [subscriptionId]), none)
    let eventId = 0
    await revised(
      'an event recorded (the outbox: no read shows it but through a delivery)',
      async () => (eventId = await id("insert into webhook_events (type, occurred_at, fields) values ('pet.created', 0, '{}')", [])),
      none,
    )
    let deliveryId = 0
    const delivery = "insert into webhook_deliveries (subscription_id, event_id, status, attempts, give_up_at, created_at) values ($1, $2, 'pending', 0, 0, 0)"
    await revised('a delivery queued', async () => (deliveryId = await id(delivery, [subscriptionId, eventId])))
    await revised(
      'a delivery claimed (its lease, which no read shows)',
      () => sql.run("update webhook_deliveries set lease_owner = 'me', lease_until = 1 where id = $1", [deliveryId]),
      none,
    )
    await revised('a delivery attempted', () => sql.run('update webhook_deliveries set attempts = 1, last_status = 500 where id = $1', [deliveryId]))
    await revised('a delivery forgotten', () => sql.run('delete from webhook_deliveries where id = $1', [deliveryId]))
    await revised('a subscription deleted', () => sql.run('delete from webhook_subscriptions where id = $1', [subscriptionId]))
    await revised('an order removed', () => sql.run('delete from orders where id = $1', [orderId]), [1, 3])
    await revised('the orders without owner removed', () => sql.run('delete from orders where owner is null'), [1])
    await revised('the pets removed', () => sql.run('delete from pets where id in ($1, $2)', [petId, otherPetId]), catalogue)
    await revised('a category removed', () => sql.run('delete from categories where id = 900'), catalogue)
    await revised('a key issued', () => storage.keys.issue('other', ['pets:read']), none)
    await revised(
      'an Idempotency-Key kept',
      () => sql.run("insert into idempotency_keys (principal, idempotency_key, fingerprint, created_at) values ('key:1', 'k', 'f', 0)"),
      none,
    )
    // (a statement that finds nothing to change, as a periodic job's mostly does, changes no page)
    await revised('an update that finds no row', () => sql.run("update pets set name = 'None' where id = -1"), none)
    await revised("a delivery's update that finds no row", () => sql.run("update webhook_deliveries set status = 'failed' where id = -1"), none)
    await revised('a delete that finds no row', () => sql.run('delete from orders where id = -1'), none)
    await revised(
      'an insert of no row',
      () => sql.run("insert into categories (id, name, name_fold, created_at) select 901, 'None', 'none', 0 where 1 = 0"),
      none,
    )
    await revised(
      'a change rolled back',
      () =>
        sql
          .transaction(async (tx) => {
            await tx.run("insert into pets (name, category_id, status) values ('Gone', 1, 'available')")
            throw new Error('rolled back')
          })
          .catch((error: Error) => t.equal(error.message, 'rolled back')),
      none,
    )
  })
}

if (!postgresMissing) {
  t.test('PostgreSQL: writers at once take no lock in common for a revision, and each is counted', async (t) => {
    const url = await freshPostgres(t)
    const storage = await openStorage(url, { poolSize: 2 })
    t.teardown(() => storage.close())
    const catalogue = async () => BigInt((await storage.revisions([storeParts.catalogue])).get(storeParts.catalogue)!)
    const before = await catalogue()
    const [a, b] = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })]
    for (const client of [a, b]) await client.connect()
    t.teardown(() => Promise.all([a.end(), b.end()]))
    const add = "insert into pets (name, category_id, status) values ('Rex', 1, 'available')"
    await a.query('begin')
    await a.query(add)
    await b.query('begin')
    // (were b to wait for a's row of the revision, this would fail)
    await b.query("set local lock_timeout = '1s'")
    await b.query(add)
    t.equal(await catalogue(), before, 'uncommitted: no reader sees the revision move')
    await a.query('commit')
    await b.query('commit')
    t.equal(await catalogue(), before + 2n, 'both counted once committed')

    const app = await build(t, { DATABASE_URL: url, DATABASE_POOL_SIZE: 4 })
    const page = String((await read(t, app, `${api}/pets`)).headers.etag)
    const categoryId = await aCategory(app)
    const made = await Promise.all(
      Array.from({ length: 40 }, () => call(t, app, { method: 'POST', url: `${api}/pets`, payload: { name: 'Rex', categoryId } }).then(({ status }) => status)),
    )
    t.strictSame(new Set(made), new Set([201]), '40 creates at once, every one made')
    t.ok((await catalogue()) >= before + 2n + 41n, 'each counted')
    const { rows } = await query(url, "select count(*)::int as shards from page_revisions where part = 'catalogue'")
    t.ok(rows[0].shards > 2, `spread over ${rows[0].shards} rows of the revision, one per connection that wrote`)
    t.equal((await read(t, app, `${api}/pets`, page)).status, 200, 'the page changed: a 200')
  })

  t.test('PostgreSQL: a truncate counts for every part whose rows it removes', async (t) => {
    const url = await freshPostgres(t)
    const storage = await openStorage(url, { poolSize: 2 })
    t.teardown(() => storage.close())
    const parts = [storeParts.catalogue, storeParts.everyOrder, storeParts.ordersOf('key:1'), storeParts.ordersOf('key:2'), storeParts.ordersOf('key:3')]
    const now = async () => {
      const revisions = await storage.revisions(parts)
      return parts.map((part) => BigInt(revisions.get(part)!))
    }
    await query(url, "insert into pets (name, category_id, status) values ('Rex', 1, 'available'), ('Tom', 1, 'available')")
    // (orders of two owners, written before the part's triggers counted them: as a database migrated with orders in it)
    await query(url, 'alter table orders disable trigger user')
    await query(url, "insert into orders (pet_id, status, placed_at, owner) select id, 'placed', 0, 'key:' || id from pets")
    await query(url, 'alter table orders enable trigger user')
    const before = await now()
    await query(url, 'truncate orders')
    const afterOrders = await now()
    t.strictSame(
      afterOrders.map((revision, i) => revision > before[i]!),
      [false, true, true, true, false],
      "every order's part and each owner's whose orders it removed move; the catalogue and another owner's do not",
    )
    await query(url, 'truncate pets cascade')
    t.ok((await now())[0]! > afterOrders[0]!, "the catalogue's moves with a truncate of its pets")
  })

  t.test(
    'PostgreSQL: the revisions keep as many rows as connections alive, however many instances start and end and however often their pools open new connections; a 304 still answers',
    async (t) => {
      const url = await freshPostgres(t)
      const options = { DATABASE_URL: url, DATABASE_POOL_SIZE: 4, API_KEYS: [testKey, otherKey] }
      const rows = async () => (await query(url, 'select count(*)::int as rows from page_revisions')).rows[0].rows as number
      const writersAlive = async () =>
        (await query(url, 'select count(*)::int as alive from pg_stat_activity where pid in (select writer from page_revisions)')).rows[0].alive as number
      const instances = 12
      const turnovers = 3
      const writersSeen = new Set<number>()
      let most = 0
      let lastTag = ''
      for (let instance = 0; instance < instances; instance++) {
        const app = await build(t, options)
        for (let turnover = 0; turnover < turnovers; turnover++) {
          // (writes on several connections at once: orders placed for two keys, pets added)
          const placed = await Promise.all(
            [testKey, otherKey].map(
              async (key) => (await call(t, app, { method: 'POST', url: `${api}/store/orders`, payload: { petId: await aPet(t, app) }, key })).status,
            ),
          )
          t.strictSame(placed, [201, 201], 'orders placed')
          for (const { writer } of (await query(url, 'select distinct writer from page_revisions where writer <> 0')).rows) writersSeen.add(writer as number)
          most = Math.max(most, await rows())
          // (the pool's connections ended by the server, as an idle timeout or a failover would: the next writes open new ones)
          const open = app.storage.stats().pool!.open
          const ended = (await query(url, 'select pg_terminate_backend(pid) from pg_stat_activity where pid in (select writer from page_revisions)')).rowCount!
          // (once the pool has read their end: a connection lent before would fail its statement,
          // answered 503 as a client is told to try again, which is not what this test is about)
          // (bounded at 30 s, far past what a pool takes to read an end on a slow machine)
          for (let waited = 0; app.storage.stats().pool!.open > open - ended && waited < 3000; waited++) await setTimeout(10)
        }
        await aPet(t, app)
        lastTag = String((await read(t, app, `${api}/store/orders`)).headers.etag)
        t.equal((await read(t, app, `${api}/store/orders`, lastTag)).status, 304, `instance ${instance}: a 304 for a page unchanged`)
        most = Math.max(most, await rows())
        await app.close()
      }
      // (four parts: the catalogue, every order, and the two keys' orders; each a writer-0 row and
      // a row per connection alive, or ended and not yet folded: those of the pool cut off, of the
      // instance before, whose end the server may not have finished when a fold looked)
      t.ok(writersSeen.size > 2 * 4 * 4, `${writersSeen.size} connections wrote over ${instances} instances, ${turnovers} pool turnovers each`)
      t.ok(most <= 4 * (1 + 3 * 4), `yet at most ${most} rows at once`)
      // (the connections of the last instance gone, as the server ends them in its own time)
      for (let waited = 0; (await writersAlive()) > 0 && waited < 300; waited++) await setTimeout(100)
      const app = await build(t, options)
      // (a backend of another client of the server may have taken the pid of one that wrote: its rows are kept, as a live writer's)
      const alive = await writersAlive()
      t.ok((await rows()) <= 4 * (1 + alive), `once a new instance started, the rows of those ended are folded: ${await rows()} rows, ${alive} pids alive`)
      t.equal((await read(t, app, `${api}/store/orders`, lastTag)).status, 304, 'and a page unchanged through the restarts is still a 304')
    },
  )
}

for (const [name, store] of stores) {
  if (name === 'PostgreSQL' && postgresMissing) t.test(name, { skip: postgresMissing }, async () => {})
  else conditionalOn(name, store)
}

t.test(
  "a page's tag, kept for the next request, is the one hashed anew once the kept ones are forgotten (a long URL forgets them); another key has another",
  async (t) => {
    const app = await server(t, stores[0]![1])
    const list = servedContracts[0]!.urlOf('listPets')
    const first = String((await read(t, app, `${list}?after=0`)).headers.etag)
    t.equal((await read(t, app, `${list}?after=0`, first)).status, 304, 'kept: the same tag')
    // (other pages fill what an operation keeps, and it starts over: one long URL does it)
    await app.inject({ url: `${list}?after=1&filler=${'x'.repeat(70_000)}`, headers: { authorization: `Bearer ${testKey}` } })
    t.equal((await read(t, app, `${list}?after=0`, first)).status, 304, 'forgotten, then hashed anew: the same tag')
    t.not((await read(t, app, `${list}?after=0`, undefined, staff)).headers.etag, first, 'another key, with other roles, has another tag')
  },
)

t.test(
  "a page's tag is a MAC with the database's own key: two instances on one database tag a page alike; two databases that went through the same changes, each its own",
  async (t) => {
    const [one, other] = [await storeUrl(t, 'SQLite'), await storeUrl(t, 'SQLite')]
    const apps = [await build(t, { DATABASE_URL: one }), await build(t, { DATABASE_URL: one }), await build(t, { DATABASE_URL: other })]
    for (const app of [apps[0]!, apps[2]!]) await aPet(t, app)
    const url = servedContracts.at(-1)!.urlOf('listPets')
    const [first, second, elsewhere] = await Promise.all(apps.map(async (app) => String((await read(t, app, url)).headers.etag)))
    t.match(first, tagged)
    t.equal(second, first, 'one database: the same tag from either instance')
    t.equal((await read(t, apps[1]!, url, first)).status, 304, 'so a client sent to the other instance is answered 304')
    t.equal((await read(t, apps[2]!, url)).body, (await read(t, apps[0]!, url)).body, 'the same page in the other database')
    t.not(elsewhere, first, 'with another tag: the tag is of a key the client has not, not of what it knows (the URL, its key, the page, a count of changes)')
  },
)

t.test(
  "a page that shows the clock (a subscription's deliveries, their next attempt) keeps the tag of its bytes; a page of the store alone, the revision's",
  async (t) => {
    const app = await server(t, stores[0]![1])
    const v2 = servedContracts[1]!
    const webhookId = (
      await call(t, app, { method: 'POST', url: v2.urlOf('createWebhook'), payload: { url: 'https://93.184.215.14/hooks', events: ['pet.created'] } })
    ).json.id
    const deliveries = await read(t, app, v2.urlOf('listWebhookDeliveries', { webhookId }))
    t.equal(deliveries.headers.etag, entityTag(2, deliveries.body), "the deliveries' page: its bytes' tag")
    t.equal(
      (await read(t, app, v2.urlOf('listWebhookDeliveries', { webhookId }), String(deliveries.headers.etag))).status,
      304,
      'a 304 while they are the same',
    )
    const pets = await read(t, app, v2.urlOf('listPets'))
    t.not(pets.headers.etag, entityTag(2, pets.body), "the pets' page: the revision's tag, not its bytes'")
  },
)

t.test(
  'If-None-Match and If-Match are read as RFC 9110 section 5.6.1 asks of a recipient: white space around commas, empty elements; garbage is a 400',
  async (t) => {
    const app = await server(t, stores[0]![1])
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as { port: number }
    const list = `${api}/pets`
    await aPet(t, app)
    const tag = String((await read(t, app, list)).headers.etag)
    // each of these lists `tag` among other tags, or lists tags and no `tag`
    const holding = [`"a",\t${tag}`, `${tag},`, `, ${tag}`, `"a" ,\t, ${tag} ,,`, `W/"b",${tag}`, `"x,y", ${tag}`]
    const lacking = ['"a",\t"b"', '"a",', ', "a"', ',', '', ' , ,\t']
    const garbage = ['"a" "b"', '"a";"b"', `${tag}, x`, '* , "a"', 'W/ "a"', 'w/"a"', 'a', '"a"b']
    for (const field of holding)
      t.equal((await rawExchange(t, port, 'GET', list, [`If-None-Match: ${field}`])).status, 304, `If-None-Match: ${JSON.stringify(field)} lists the tag`)
    for (const field of lacking)
      t.equal((await rawExchange(t, port, 'GET', list, [`If-None-Match: ${field}`])).status, 200, `If-None-Match: ${JSON.stringify(field)} does not`)
    for (const field of garbage) {
      const refused = await rawExchange(t, port, 'GET', list, [`If-None-Match: ${field}`])
      t.match([refused.status, refused.json], [400, { code: 'invalid_request', message: /if-none-match/ }], `If-None-Match: ${JSON.stringify(field)} is a 400`)
    }

    const petId = await aPet(t, app)
    const orderUrl = `${api}/store/orders/${(await call(t, app, { method: 'POST', url: `${api}/store/orders`, payload: { petId } })).json.id}`
    const orderTag = String((await read(t, app, orderUrl)).headers.etag)
    /** updateOrder with `field` as its If-Match, over HTTP */
    const patch = (url: string, field: string, status = 'delivered') => {
      const body = JSON.stringify({ status })
      return rawExchange(t, port, 'PATCH', url, [`If-Match: ${field}`, 'Content-Type: application/json', `Content-Length: ${body.length}`], body)
    }
    const change = (field: string, status = 'delivered') => patch(orderUrl, field, status)
    for (const field of lacking) {
      const refused = await change(field)
      t.equal(refused.status, 412, `If-Match: ${JSON.stringify(field)} names no tag of the order: 412`)
    }
    for (const field of garbage) {
      const refused = await change(field)
      t.match([refused.status, refused.json], [400, { code: 'invalid_request', message: /if-match/ }], `If-Match: ${JSON.stringify(field)} is a 400`)
    }
    t.equal((await read(t, app, orderUrl, orderTag)).status, 304, 'none of them changed the order')
    for (const field of holding) {
      // (a change is made once: an order of its own for each)
      const fresh = await aPet(t, app)
      const url = `${api}/store/orders/${(await call(t, app, { method: 'POST', url: `${api}/store/orders`, payload: { petId: fresh } })).json.id}`
      const current = field.replace(tag, String((await read(t, app, url)).headers.etag))
      const done = await patch(url, current)
      t.equal(done.status, 200, `If-Match: ${JSON.stringify(field)} names the order's tag: the change is made`)
    }
  },
)

t.test("If-Match's 412 says why: the order changed, or the tags are of another version's representation, weak, or none", async (t) => {
  const app = await server(t, stores[0]![1])
  for (const contract of servedContracts) {
    const major = contract.version[0]
    const petId = await aPet(t, app)
    const orderId = (await call(t, app, { method: 'POST', url: contract.urlOf('placeOrder'), payload: { petId } })).json.id
    const orderUrl = contract.urlOf('getOrder', { orderId })
    const tag = String((await read(t, app, orderUrl)).headers.etag)
    const others = servedContracts.filter((other) => other !== contract)
    const change = (ifMatch: string) => call(t, app, { method: 'PATCH', url: orderUrl, payload: { status: 'delivered' }, headers: { 'if-match': ifMatch } })
    for (const other of others) {
      const otherTag = String((await read(t, app, other.urlOf('getOrder', { orderId }))).headers.etag)
      t.match(otherTag, new RegExp(`^"v${other.version[0]}-`), `the tag read through version ${other.version[0]} is of it`)
      const refused = await change(otherTag)
      t.equal(refused.status, 412, `version ${major}: the unchanged order's tag of version ${other.version[0]} is a 412`)
      t.equal(
        refused.json.message,
        `If-Match names no tag of order ${orderId} in version ${major}, only of version ${other.version[0]}'s representation: send the ETag a read through version ${major} gives`,
        'which says so, not "has changed"',
      )
    }
    t.equal(
      (await change('"someone-elses"')).json.message,
      `If-Match names no tag of order ${orderId} in version ${major}: send the ETag a read through version ${major} gives`,
      'a tag this service never gives',
    )
    t.equal((await change(`W/${tag}`)).json.message, `If-Match names only weak tags (W/), which never match order ${orderId}'s: send its ETag as read`)
    t.equal((await change(' , ')).json.message, `If-Match lists no entity tag, so none is order ${orderId}'s: send the ETag your read of it gave`)
    t.equal((await read(t, app, orderUrl, tag)).status, 304, 'none of them changed the order')
    t.equal((await change(tag)).status, 200, 'its own tag: the change is made')
    const stale = await change(`"v${major + 1}-x", ${tag}`)
    t.strictSame(
      [stale.status, stale.json.message],
      [412, `Order ${orderId} has changed since: its ETag is not one If-Match names (read it again)`],
      'a tag of this version that was its tag: "has changed", whatever else the list names',
    )
  }
})

t.test("If-None-Match's and If-Match's pattern in each document and the parser read a list alike, as RFC 9110 section 5.6.1's recipient", async (t) => {
  const cases: [string, { weak: boolean; opaque: string }[] | '*' | 'refused'][] = [
    ['*', '*'],
    ['"a"', [{ weak: false, opaque: '"a"' }]],
    [
      '"a",\t"b"',
      [
        { weak: false, opaque: '"a"' },
        { weak: false, opaque: '"b"' },
      ],
    ],
    ['"a",', [{ weak: false, opaque: '"a"' }]],
    [', "a"', [{ weak: false, opaque: '"a"' }]],
    [
      ' ,\t, W/"a" ,,\t"b,c" , ',
      [
        { weak: true, opaque: '"a"' },
        { weak: false, opaque: '"b,c"' },
      ],
    ],
    ['"é"', [{ weak: false, opaque: '"é"' }]],
    ['', []],
    [',', []],
    [' , ,\t', []],
    ['"a" "b"', 'refused'],
    ['"a""b"', 'refused'],
    ['"a";"b"', 'refused'],
    ['"a", x', 'refused'],
    ['*, "a"', 'refused'],
    ['W/ "a"', 'refused'],
    ['w/"a"', 'refused'],
    ['"a', 'refused'],
    ['"\x7F"', 'refused'],
    ['"a"\n', 'refused'],
  ]
  for (const contract of servedContracts) {
    for (const name of ['If-None-Match', 'If-Match']) {
      const parameter = [...contract.operations.values()].flatMap(({ parameters }) => parameters).find((p) => p.in === 'header' && p.name === name)!
      const pattern = new RegExp((parameter.schema as OpenAPIV3.SchemaObject).pattern!, 'u')
      for (const [field, tags] of cases) {
        t.equal(pattern.test(field), tags !== 'refused', `${contract.file}: ${name}: ${JSON.stringify(field)} ${tags === 'refused' ? 'refused' : 'taken'}`)
        if (tags !== 'refused') t.strictSame(tagsOf(field), tags, 'and read as its tags')
      }
      // every list the pattern released before took (tags, a comma between, spaces beside it) is taken, read as the same tags
      const released = /^(\*|(W\/)?"[\x21\x23-\x7E]*"( *, *(W\/)?"[\x21\x23-\x7E]*")*)$/
      let seed = 7
      const random = (n: number) => ((seed = (seed * 48271) % 2147483647), seed % n)
      const characters = 'aZ09,W/!#~'
      const missed: string[] = []
      for (let i = 0; i < 300; i++) {
        const tags = Array.from({ length: 1 + random(4) }, () => ({
          weak: random(2) === 0,
          opaque: `"${Array.from({ length: random(6) }, () => characters[random(characters.length)]).join('')}"`,
        }))
        const field = tags.map(({ weak, opaque }) => `${weak ? 'W/' : ''}${opaque}`).join(`${' '.repeat(random(3))},${' '.repeat(random(3))}`)
        if (!released.test(field) || !pattern.test(field) || JSON.stringify(tagsOf(field)) !== JSON.stringify(tags)) missed.push(field)
      }
      t.strictSame(missed, [], `${contract.file}: ${name}: 300 lists the released pattern took, taken and read as their tags`)
    }
  }
})

t.test('the list fields, as RFC 9110 compares them: weakly for If-None-Match, strongly for If-Match', async (t) => {
  t.ok(noneMatchHolds('W/"a"', '"a"'))
  t.ok(noneMatchHolds(' * ', '"a"'))
  t.notOk(noneMatchHolds('"b", W/"c"', '"a"'))
  t.ok(matchHolds('"b","a"', '"a"'))
  t.notOk(matchHolds('W/"a"', '"a"'), 'a weak tag never matches strongly')
  t.ok(matchHolds('*', '"a"'))
})

t.test('the contract model reads which operations answer conditionally, and refuses one that would send what it does not document', async (t) => {
  const conditional = (id: string) => newest.operations.get(id)!.conditional
  t.strictSame(conditional('listPets'), { tagged: true, ifNoneMatch: true, ifMatch: false })
  t.strictSame(conditional('updateOrder'), { tagged: true, ifNoneMatch: false, ifMatch: true })
  t.strictSame(conditional('createPet'), { tagged: false, ifNoneMatch: false, ifMatch: false })
  const d = structuredClone(newest.document)
  delete d.paths['/pets']!.get!.responses['304']
  delete d.paths['/store/orders/{orderId}']!.patch!.responses['412']
  t.match(
    readContract(d).problems.map(({ message }) => message),
    [/^takes If-None-Match and tags its 200, so it documents its 304/, /^takes If-Match, so it documents its 412/],
  )
  const untagged = structuredClone(newest.document)
  delete (untagged.paths['/pets']!.get!.responses['200'] as OpenAPIV3.ResponseObject).headers!.ETag
  delete untagged.paths['/pets']!.get!.responses['304']
  const { contract, problems } = readContract(untagged)
  t.strictSame(problems, [], 'If-None-Match without a tag to compare: nothing to refuse')
  t.strictSame(contract.operations.get('listPets')!.conditional, { tagged: false, ifNoneMatch: false, ifMatch: false }, 'and nothing answered conditionally')
})
