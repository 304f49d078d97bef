/**
 * Versions served side by side, as test/versions.test.ts has them, and as the walk "a breaking
 * change" of docs/changing-the-api.md runs them again in its copy once a newer version is served
 * beside them (test/walks/side-by-side.ts): what one version makes the other reads, and each
 * subscription is sent an event as its version shows it. Every answer, and every delivery,
 * checked against its version's document.
 */
import type { Test } from 'tap'
import type { AppOptions } from '../../src/app.js'
import { loadContracts } from '../../src/contract/load.js'
import type { Contract } from '../../src/contract/model.js'
import { build, call, testKey } from './app.js'
import { startReceiver } from './receiver.js'
import { deliveriesOf } from './webhooks.js'

const [v1, v2] = loadContracts() as [Contract, Contract]

export const sideBySide = 'served side by side: what one version makes, the other reads; version 1 takes any category'

export async function servedSideBySide(t: Test) {
  const staff = 'catalogue-key-0001'
  const app = await build(t, { API_KEYS: [testKey, `${staff}:pets:read+pets:write+categories:write`] })
  const v1Made = await call(t, app, { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 7 } })
  t.equal(v1Made.status, 201, 'version 1 takes a category that does not exist')
  t.equal(v1Made.headers.location, '/v1/pets/1')
  t.strictSame(
    (await call(t, app, { url: '/v2/pets?id=1' })).json,
    [{ id: 1, name: 'Rex', category: { id: 7 }, status: 'available' }],
    'version 2: the category by id alone',
  )

  const refused = await call(t, app, { method: 'POST', url: '/v2/pets', payload: { name: 'Tom', categoryId: 1 } })
  t.strictSame(refused.json, { code: 'category_not_found', message: 'Category 1 not found: add it first (createCategory)', status: 422 })
  t.equal((await call(t, app, { method: 'POST', url: '/v2/categories', payload: { name: 'Bird' } })).status, 403, 'adding a category is not a default role')
  const bird = await call(t, app, { method: 'POST', url: '/v2/categories', payload: { name: 'Bird' }, key: staff })
  t.strictSame([bird.status, bird.json, bird.headers.location], [201, { id: 1, name: 'Bird' }, '/v2/categories/1'])
  const v2Made = await call(t, app, { method: 'POST', url: '/v2/pets', payload: { name: 'Tom', categoryId: 1, status: 'pending' } })
  t.strictSame(
    [v2Made.status, v2Made.json, v2Made.headers.location],
    [201, { id: 2, name: 'Tom', category: { id: 1, name: 'Bird' }, status: 'pending' }, '/v2/pets?id=2'],
  )

  t.strictSame(
    (await call(t, app, { url: '/v1/pets/2' })).json,
    { id: 2, name: 'Tom', categoryId: 1, status: 'pending' },
    'version 1 reads what version 2 made',
  )
  t.strictSame((await call(t, app, { url: '/v1/pets/3' })).json, { code: 'not_found', message: 'Pet 3 not found', status: 404 })
  t.strictSame((await call(t, app, { url: '/v1/pets' })).json, [
    { id: 1, name: 'Rex', categoryId: 7, status: 'available' },
    { id: 2, name: 'Tom', categoryId: 1, status: 'pending' },
  ])
  t.strictSame(
    (await call(t, app, { url: '/v2/pets?categoryId=1' })).json.map(({ id }: { id: number }) => id),
    [2],
    'version 2 filters by category',
  )
  t.strictSame(
    (await call(t, app, { url: '/v2/pets?status=available&categoryId=7' })).json.map(({ id }: { id: number }) => id),
    [1],
    'filters combine',
  )
  const page = await call(t, app, { url: '/v2/pets?limit=1&categoryId=1' })
  t.equal(page.headers.link, undefined, 'one pet in the category: no next page')
  const first = await call(t, app, { url: '/v2/pets?limit=1' })
  t.equal(first.headers.link, '</v2/pets?limit=1&after=1>; rel="next"')
  t.equal((await call(t, app, { url: '/v1/pets?limit=1' })).headers.link, '</v1/pets?limit=1&after=1>; rel="next"', 'version 1 pages under its own path')
  // version 2's filters that version 1 lacks are unknown parameters to it: ignored, whatever their value
  for (const query of ['categoryId=1', 'categoryId=x&categoryId=7']) {
    const all = await call(t, app, { url: `/v1/pets?${query}` })
    t.strictSame([all.status, all.json.map(({ id }: { id: number }) => id)], [200, [1, 2]], `/v1/pets?${query}: every pet`)
  }
  t.equal(
    (await call(t, app, { url: '/v1/pets?limit=1&categoryId=7' })).headers.link,
    '</v1/pets?limit=1&after=1>; rel="next"',
    'and not carried to the next page',
  )
  // `id`, which version 1 has too (getPet's successor), filters in both
  const one = await call(t, app, { url: '/v1/pets?id=2&categoryId=7' })
  t.strictSame([one.status, one.json.map(({ id }: { id: number }) => id)], [200, [2]], "/v1/pets?id=2: that pet, whatever version 2's other filters say")
  t.equal((await call(t, app, { url: '/v1/pets?id=abc' })).status, 400, 'and an id that is no id is a 400')

  const order = await call(t, app, { method: 'POST', url: '/v2/store/orders', payload: { petId: 1 } })
  t.equal(order.headers.location, '/v2/store/orders/1')
  t.strictSame((await call(t, app, { url: '/v1/store/orders/1' })).json, order.json, 'an order made through version 2, read through version 1')
  t.equal((await call(t, app, { url: '/v1/pets/1' })).json.status, 'pending', 'and its pet moved, in both')
  t.equal((await call(t, app, { url: '/v2/pets/1' })).status, 404, 'version 2 has no getPet')
}

/** One event recorded, each subscription sent it as the version it was made through shows it
 * (each receiver checks what arrives against that version's `webhooks`). */
export async function eventsPerVersion(t: Test, database: Partial<AppOptions>) {
  const staff = 'catalogue-key-0001'
  const app = await build(t, {
    ...database,
    API_KEYS: [testKey, `${staff}:pets:read+pets:write+categories:write`],
    WEBHOOK_ALLOW_HTTP: true,
    WEBHOOK_ALLOW_PRIVATE: true,
    WEBHOOK_POLL_MS: 20,
  })
  const receivers = [await startReceiver(t, undefined, { contract: v1 }), await startReceiver(t, undefined, { contract: v2 })]
  const subscriptions: number[] = []
  for (const [i, receiver] of receivers.entries()) {
    const made = await call(t, app, {
      method: 'POST',
      url: `/v${i + 1}/webhooks`,
      payload: { url: receiver.url, events: ['pet.created', 'pet.status_changed'] },
    })
    subscriptions.push(made.json.id)
  }
  await call(t, app, { method: 'POST', url: '/v2/categories', payload: { name: 'Bird' }, key: staff })
  await call(t, app, { method: 'POST', url: '/v2/pets', payload: { name: 'Tom', categoryId: 1 } })
  await call(t, app, { method: 'POST', url: '/v1/store/orders', payload: { petId: 1 } })
  const [v1Sent, v2Sent] = await Promise.all(receivers.map(async (receiver) => (await receiver.waitFor(2)).map(({ body }) => JSON.parse(body))))
  const envelope = ({ id, type }: { id: string; type: string }) => ({ id, type })
  t.strictSame(v1Sent!.map(envelope), v2Sent!.map(envelope), 'the same events, by id')
  t.strictSame(
    v1Sent!.map(({ data, from, to }) => ({ data, from, to })),
    [
      { data: { id: 1, name: 'Tom', categoryId: 1, status: 'available' }, from: undefined, to: undefined },
      { data: { id: 1, name: 'Tom', categoryId: 1, status: 'pending' }, from: 'available', to: 'pending' },
    ],
    'version 1: categoryId',
  )
  t.strictSame(
    v2Sent!.map(({ data }) => data),
    [
      { id: 1, name: 'Tom', category: { id: 1, name: 'Bird' }, status: 'available' },
      { id: 1, name: 'Tom', category: { id: 1, name: 'Bird' }, status: 'pending' },
    ],
    'version 2: category',
  )
  // each subscription's deliveries, read through either version, name the same events
  const eventIds = await Promise.all(subscriptions.map(async (id) => (await deliveriesOf(t, app, id)).map(({ eventId }: { eventId: string }) => eventId)))
  t.strictSame(eventIds[0], eventIds[1], 'recorded once, delivered to each')
  t.strictSame(
    eventIds[0],
    v1Sent!.map(({ id }) => id),
  )
}
