/**
 * Two major versions served side by side from one store: version 2's handlers serve version 1
 * through the declared changes of src/versions/. Each change alone, both ways; then in the
 * served path: what one version makes, the other reads.
 */
import t, { type Test } from 'tap'
import type { AppOptions } from '../src/app.js'
import { contractOf, loadContracts } from '../src/contract/load.js'
import { servedTogether } from '../src/contract/served.js'
import { ApiError } from '../src/core/errors.js'
import { categoriesFrom, categoryObject, v1Pet } from '../src/versions/changes/category-object.js'
import { getPetFromList } from '../src/versions/changes/get-pet.js'
import { type AnyHandler, deriveHandlers, eventsDownTo } from '../src/versions/derive.js'
import type { VersionChange } from '../src/versions/change.js'
import { changes } from '../src/versions/index.js'
import { build, call, testKey } from './helpers/app.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { startReceiver } from './helpers/receiver.js'
import { deliveriesOf } from './helpers/webhooks.js'

const [v1, v2] = loadContracts()
const context = { urlOf: v1!.urlOf }
const tom = { id: 2, name: 'Tom', category: { id: 1, name: 'Bird' }, status: 'pending' as const }

t.test('category-object: a pet down to version 1 shows categoryId; createPet checks categories from version 2 on', async (t) => {
  t.strictSame(v1Pet(tom), { id: 2, name: 'Tom', categoryId: 1, status: 'pending' })
  t.strictSame(v1Pet({ id: 3, name: 'Kit', category: { id: 9 } }), { id: 3, name: 'Kit', categoryId: 9 }, 'a category never created, and no status')
  const { listPets, createPet, getPet } = categoryObject.operations
  const request = { params: {}, query: {}, body: undefined }
  t.strictSame(listPets!.down!({ status: 200, body: [tom], headers: { Link: 'x' } }, request, context), { status: 200, body: [v1Pet(tom)], headers: { Link: 'x' } })
  t.strictSame(createPet!.down!({ status: 201, body: tom }, request, context), { status: 201, body: v1Pet(tom) })
  t.strictSame(getPet!.down!({ status: 200, body: tom }, request, context), { status: 200, body: v1Pet(tom) })
  const event = { data: tom, from: 'available', to: 'pending' }
  t.strictSame(categoryObject.events!['pet.status_changed']!(event), { data: v1Pet(tom), from: 'available', to: 'pending' })
  t.strictSame(categoryObject.events!['pet.created']!({ data: tom }), { data: v1Pet(tom) })
  t.equal(categoriesFrom, 2)
})

t.test('get-pet: version 1 reads one pet by listPets with its id; a new pet\'s Location is its path', async (t) => {
  const { getPet, createPet } = getPetFromList.operations
  t.equal(getPet!.servedBy, 'listPets')
  const request = { params: { petId: 2 }, query: {} as Record<string, unknown>, body: undefined }
  getPet!.up!(request, context)
  t.strictSame(request.query, { id: 2, limit: 1 }, 'up: the list of the one pet')
  t.strictSame(getPet!.down!({ status: 200, body: [tom] }, request, context), { status: 200, body: tom }, 'down: its one pet')
  const none = getPet!.down!({ status: 200, body: [] }, request, context)
  t.type(none, ApiError)
  t.match(none, { code: 'not_found', message: 'Pet 2 not found' }, 'no pet: 404, as version 1 said')
  t.strictSame(createPet!.down!({ status: 201, body: tom, headers: { Location: '/v2/pets?id=2' } }, request, context), {
    status: 201,
    body: tom,
    headers: { Location: '/v1/pets/2' },
  })
})

t.test('deriving: an operation served by no handler stops the start; refusals pass; URLs move under the older base path', async (t) => {
  const listPets: AnyHandler = () => ({ status: 200, body: [tom], headers: { Link: '</v2/pets?limit=1&after=2>; rel="next"' } })
  t.throws(() => deriveHandlers({ listPets }, [], v1!, v2!), /operation createPet of version 1 is served by no handler: the newest version has no createPet/)
  const everyV1 = Object.fromEntries([...v1!.operations.keys()].map((id) => [id, listPets]))
  t.throws(() => deriveHandlers(everyV1, [], v1!, v2!), /operation getPet of version 1 is served by no handler: the newest version has no getPet/, 'a handler of an operation the newest document lacks')
  const refusing: AnyHandler = async () => new ApiError('not_found', 'gone')
  const handlers = Object.fromEntries([...v2!.operations.keys()].map((id) => [id, id === 'listPets' ? listPets : refusing]))
  const derived = deriveHandlers(handlers, changes, v1!, v2!)
  t.strictSame(Object.keys(derived).sort(), [...v1!.operations.keys()].sort(), 'every operation of version 1')
  const request = { params: {}, query: {} } as never
  t.strictSame(derived.listPets!(request, undefined, undefined), { status: 200, body: [v1Pet(tom)], headers: { Link: '</v1/pets?limit=1&after=2>; rel="next"' } })
  const params = { petId: 7 }
  const query = {}
  const asked = { params, query }
  t.match(await derived.getPet!(asked as never, undefined, undefined), { status: 200, body: v1Pet(tom) })
  t.strictSame([params, query, asked.query], [{ petId: 7 }, {}, { id: 7, limit: 1 }], 'made newer on copies of what the client sent')
  t.match(await derived.createPet!(request, undefined, undefined), { code: 'not_found' }, 'a refusal is not made older')
  t.strictSame(derived.getOrder === refusing, false, 'wrapped, to move its URLs')
})

t.test('a start that fails once the storage is open closes it and says why: an operation of version 1 that nothing serves', async (t) => {
  const renamed = structuredClone(v1!.document) as unknown as { paths: Record<string, { get: { operationId: string } }> }
  renamed.paths['/pets/{petId}']!.get.operationId = 'readPet'
  await t.rejects(build(t, { contracts: [contractOf(renamed as never, { file: 'openapi.yaml' }), v2!] }), /operation readPet of version 1 is served by no handler: the newest version has no readPet/)
})

t.test('a change may translate the request alone: the answer goes down as it is', async (t) => {
  const seen: unknown[] = []
  const listPets: AnyHandler = (request) => (seen.push(request.query), { status: 200, body: [] })
  const handlers = Object.fromEntries([...v2!.operations.keys()].map((id) => [id, listPets]))
  // an older listPets that called its status filter `state`
  const document = structuredClone(v1!.document) as unknown as { paths: Record<string, { get: { parameters: unknown[] } }> }
  document.paths['/pets']!.get.parameters.push({ name: 'state', in: 'query', schema: { type: 'string' } })
  const older = contractOf(document as never, { file: 'openapi.yaml' })
  const renamed: VersionChange = { version: 1, description: 'status was called state', operations: { listPets: { up: (request) => void (request.query = { status: request.query.state }) } } }
  const derived = deriveHandlers(handlers, [renamed, getPetFromList], older, v2!)
  t.strictSame(await derived.listPets!({ params: {}, query: { state: 'sold' } } as never, undefined, undefined), { status: 200, body: [] })
  t.strictSame(seen, [{ status: 'sold' }], 'the request made newer')
})

t.test('a query parameter only the newest version declares is, sent to an older one, unknown: the newest handler does not see it', async (t) => {
  const seen: unknown[] = []
  const listPets: AnyHandler = (request) => (seen.push(request.query), { status: 200, body: [] })
  const handlers = Object.fromEntries([...v2!.operations.keys()].map((id) => [id, listPets]))
  const derived = deriveHandlers(handlers, changes, v1!, v2!)
  const sent = { limit: 20, status: 'sold', id: 'abc', categoryId: ['1', '2'], after: undefined }
  const request = { params: {}, query: sent }
  await derived.listPets!(request as never, undefined, undefined)
  t.strictSame(seen, [{ limit: 20, status: 'sold' }], "version 2's id and categoryId filters are not version 1's")
  t.equal(request.query, seen[0], 'given to the handler in place of the query')
  t.strictSame(sent, { limit: 20, status: 'sold', id: 'abc', categoryId: ['1', '2'], after: undefined }, 'what the client sent is left as it was')
  const same = { params: { orderId: 1 }, query: { x: 1 } }
  await derived.getOrder!(same as never, undefined, undefined)
  t.strictSame(same.query, { x: 1 }, 'an operation the versions declare alike is served the request as it came')
})

t.test('served together: one document per major, all promising the same of the server', async (t) => {
  t.throws(() => servedTogether([v1!, v1!]), /openapi.yaml \(major version 1\): .*openapi.yaml is of the same major version: each served document has a major of its own/)
  const document = structuredClone(v2!.document) as unknown as { 'x-service': { limits: { requestBodyBytes: number } } }
  document['x-service'].limits.requestBodyBytes = 1024
  const other = contractOf(document as never, { file: 'openapi-v2.yaml' })
  t.throws(() => servedTogether([v1!, other]), /openapi.yaml \(major version 1\): x-service states other limits than openapi-v2.yaml \(requestBodyBytes\): the documents served together must state the same/)
  // the roles a key holds are the newest document's: an older one asks none other, and sends each event to the same roles
  const roles = structuredClone(v1!.document) as unknown as { components: { securitySchemes: { bearerAuth: { 'x-roles': Record<string, { default?: boolean; staff?: boolean }> } } }; webhooks: Record<string, { post: { 'x-roles': string[] } }> }
  const catalogue = roles.components.securitySchemes.bearerAuth['x-roles']
  catalogue['pets:delete'] = { ...catalogue['pets:write'], default: false }
  catalogue['orders:read']!.default = !catalogue['orders:read']!.default
  roles.webhooks['pet.created']!.post['x-roles'] = ['orders:read']
  const refused = t.throws(() => servedTogether([contractOf(roles as never, { file: 'openapi.yaml' }), v2!])) as Error
  t.match(refused.message, /x-roles has pets:delete, which openapi-v2.yaml lacks: a key holds the roles of the newest document/)
  t.match(refused.message, /x-roles gives other default or staff roles than openapi-v2.yaml/)
  t.match(refused.message, /event pet.created asks other roles than in openapi-v2.yaml/)
  const probed = structuredClone(v2!.document) as unknown as { 'x-service': { health: { ready: string } } }
  probed['x-service'].health.ready = '/ready'
  t.throws(() => servedTogether([v1!, contractOf(probed as never, { file: 'openapi-v2.yaml' })]), /x-service.health names other paths than openapi-v2.yaml: one server answers its probes at one place/)
  t.strictSame(servedTogether([v2!, v1!]), [v1, v2], 'oldest first')
})

t.test('an event is shown to a subscription as its version shows it', async (t) => {
  const shown = eventsDownTo(changes, 2)
  t.strictSame(shown('pet.created', { data: tom }, 2), { data: tom }, 'version 2: as it is')
  t.strictSame(shown('pet.created', { data: tom }, 1), { data: v1Pet(tom) }, 'version 1: categoryId')
  const order = { data: { id: 1, petId: 2, status: 'placed', placedAt: '2026-11-26T00:00:00.000Z' } }
  t.strictSame(shown('order.placed', order, 1), order, 'an order is the same in both')
})

t.test('served side by side: what one version makes, the other reads; version 1 takes any category', async (t) => {
  const staff = 'catalogue-key-0001'
  const app = await build(t, { API_KEYS: [testKey, `${staff}:pets:read+pets:write+categories:write`] })
  const v1Made = await call(t, app, { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 7 } })
  t.equal(v1Made.status, 201, 'version 1 takes a category that does not exist')
  t.equal(v1Made.headers.location, '/v1/pets/1')
  t.strictSame((await call(t, app, { url: '/v2/pets?id=1' })).json, [{ id: 1, name: 'Rex', category: { id: 7 }, status: 'available' }], 'version 2: the category by id alone')

  const refused = await call(t, app, { method: 'POST', url: '/v2/pets', payload: { name: 'Tom', categoryId: 1 } })
  t.strictSame(refused.json, { code: 'category_not_found', message: 'Category 1 not found: add it first (createCategory)', status: 422 })
  t.equal((await call(t, app, { method: 'POST', url: '/v2/categories', payload: { name: 'Bird' } })).status, 403, 'adding a category is not a default role')
  const bird = await call(t, app, { method: 'POST', url: '/v2/categories', payload: { name: 'Bird' }, key: staff })
  t.strictSame([bird.status, bird.json, bird.headers.location], [201, { id: 1, name: 'Bird' }, '/v2/categories/1'])
  const v2Made = await call(t, app, { method: 'POST', url: '/v2/pets', payload: { name: 'Tom', categoryId: 1, status: 'pending' } })
  t.strictSame([v2Made.status, v2Made.json, v2Made.headers.location], [201, { id: 2, name: 'Tom', category: { id: 1, name: 'Bird' }, status: 'pending' }, '/v2/pets?id=2'])

  t.strictSame((await call(t, app, { url: '/v1/pets/2' })).json, { id: 2, name: 'Tom', categoryId: 1, status: 'pending' }, 'version 1 reads what version 2 made')
  t.strictSame((await call(t, app, { url: '/v1/pets/3' })).json, { code: 'not_found', message: 'Pet 3 not found', status: 404 })
  t.strictSame(
    (await call(t, app, { url: '/v1/pets' })).json,
    [
      { id: 1, name: 'Rex', categoryId: 7, status: 'available' },
      { id: 2, name: 'Tom', categoryId: 1, status: 'pending' },
    ],
  )
  t.strictSame((await call(t, app, { url: '/v2/pets?categoryId=1' })).json.map(({ id }: { id: number }) => id), [2], 'version 2 filters by category')
  t.strictSame((await call(t, app, { url: '/v2/pets?status=available&categoryId=7' })).json.map(({ id }: { id: number }) => id), [1], 'filters combine')
  const page = await call(t, app, { url: '/v2/pets?limit=1&categoryId=1' })
  t.equal(page.headers.link, undefined, 'one pet in the category: no next page')
  const first = await call(t, app, { url: '/v2/pets?limit=1' })
  t.equal(first.headers.link, '</v2/pets?limit=1&after=1>; rel="next"')
  t.equal((await call(t, app, { url: '/v1/pets?limit=1' })).headers.link, '</v1/pets?limit=1&after=1>; rel="next"', 'version 1 pages under its own path')
  // version 2's filters are unknown parameters to version 1: ignored, whatever their value
  for (const query of ['id=2&categoryId=1', 'id=abc', 'id=1&id=2', 'categoryId=x&categoryId=7']) {
    const all = await call(t, app, { url: `/v1/pets?${query}` })
    t.strictSame([all.status, all.json.map(({ id }: { id: number }) => id)], [200, [1, 2]], `/v1/pets?${query}: every pet`)
  }
  t.equal((await call(t, app, { url: '/v1/pets?limit=1&categoryId=7&id=1' })).headers.link, '</v1/pets?limit=1&after=1>; rel="next"', 'and not carried to the next page')

  const order = await call(t, app, { method: 'POST', url: '/v2/store/orders', payload: { petId: 1 } })
  t.equal(order.headers.location, '/v2/store/orders/1')
  t.strictSame((await call(t, app, { url: '/v1/store/orders/1' })).json, order.json, 'an order made through version 2, read through version 1')
  t.equal((await call(t, app, { url: '/v1/pets/1' })).json.status, 'pending', 'and its pet moved, in both')
  t.equal((await call(t, app, { url: '/v2/pets/1' })).status, 404, 'version 2 has no getPet')
})

/** One event recorded, each subscription sent it as the version it was made through shows it
 * (each receiver checks what arrives against that version's `webhooks`). */
async function eventsPerVersion(t: Test, database: Partial<AppOptions>) {
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
    const made = await call(t, app, { method: 'POST', url: `/v${i + 1}/webhooks`, payload: { url: receiver.url, events: ['pet.created', 'pet.status_changed'] } })
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
  t.strictSame(eventIds[0], v1Sent!.map(({ id }) => id))
}

t.test('SQLite: events in each subscription\'s version', async (t) => eventsPerVersion(t, {}))
t.test('PostgreSQL: events in each subscription\'s version', { skip: postgresMissing }, async (t) => eventsPerVersion(t, { DATABASE_URL: await freshPostgres(t) }))
