import type { OpenAPIV3 } from 'openapi-types'
import t from 'tap'
import { goneAt } from '../src/contract/lifecycle.js'
import { loadContract } from '../src/contract/load.js'
import { type OperationDefinition } from '../src/contract/model.js'
import { deref } from '../src/contract/pointer.js'
import { lifecycleHeaders, retirement } from '../src/http/lifecycle-headers.js'
import { build, call, testKey } from './helpers/app.js'
import { editedContract, oldestSpecPath } from './helpers/spec.js'

const getPet = loadContract(oldestSpecPath).operations.get('getPet')!

/** openapi.yaml with one operation's definition changed, loaded as the server loads it. */
const withOperation = (id: string, change: (definition: OperationDefinition) => OperationDefinition) =>
  editedContract((document) => {
    for (const item of Object.values(document.paths)) {
      for (const [method, operation] of Object.entries(item!)) {
        if ((operation as OperationDefinition).operationId === id) {
          ;(item as Record<string, unknown>)[method] = change(operation as OperationDefinition)
        }
      }
    }
  })

t.test('every response of the deprecated getPet carries Deprecation, Sunset and Link, built from the spec', async (t) => {
  const app = await build(t)
  await call(t, app, { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
  const definition = getPet.definition
  t.equal(definition.deprecated, true, 'the spec marks getPet deprecated')
  const expected = {
    deprecation: `@${Date.parse(`${String(definition['x-deprecated-at'])}T00:00:00Z`) / 1000}`,
    sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
  }
  t.equal(definition['x-sunset'], '2030-12-05', 'removal on 5 December 2030')
  // the successor's Link is the request that reads the same pet (x-successor-parameters)
  const link = (id: string) => `</v1/pets?id=${id}>; rel="successor-version", </v1/docs/>; rel="deprecation"; type="text/html"`
  for (const [url, key, status, id] of [
    ['/v1/pets/1', undefined, 200, '1'],
    ['/v1/pets/2', undefined, 404, '2'],
    ['/v1/pets/x', undefined, 400, 'x'],
    ['/v1/pets/a%26b', undefined, 400, 'a%26b'],
    ['/v1/pets/1', null, 401, '1'],
    ['/v1/pets/%E0', undefined, 400, '%25E0'],
  ] as const) {
    const response = await call(t, app, { url, ...(key === null && { key }) })
    t.equal(response.status, status)
    t.match(response.headers, { ...expected, link: link(id) }, `${url} ${status}`)
  }
  // (a value no request could be valid with, as long as a client likes, is left out: the Link keeps its bound)
  const long = await call(t, app, { url: `/v1/pets/${'1'.repeat(101)}` })
  t.equal(long.status, 400)
  t.equal(
    long.headers.link,
    '</v1/pets>; rel="successor-version", </v1/docs/>; rel="deprecation"; type="text/html"',
    'a value of 101 characters: the successor without it',
  )
  t.ok(Date.parse(expected.sunset) > Number(expected.deprecation.slice(1)) * 1000, 'Sunset is later than Deprecation')
})

t.test("getPet's successor, followed over real HTTP as its Link says, reads that one pet", async (t) => {
  const app = await build(t)
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' }
  for (const name of ['Rex', 'Tom', 'Kit']) await fetch(`${origin}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name, categoryId: 1 }) })
  const old = await fetch(`${origin}/v1/pets/2`, { headers })
  t.equal(old.status, 200)
  const successor = /<([^>]+)>; rel="successor-version"/.exec(old.headers.get('link')!)?.[1]
  t.equal(successor, '/v1/pets?id=2', "the Link names listPets with the pet's id")
  const followed = await fetch(new URL(successor!, origin), { headers })
  t.equal(followed.status, 200)
  t.strictSame(await followed.json(), [await old.json()], 'its page is that one pet, as getPet showed it')
  const none = await fetch(
    new URL(/<([^>]+)>; rel="successor-version"/.exec((await fetch(`${origin}/v1/pets/9`, { headers })).headers.get('link')!)![1]!, origin),
    { headers },
  )
  t.strictSame(await none.json(), [], "and a pet there is not, getPet's 404, is an empty page")
  t.match(getPet.definition.description, 'GET /v2/pets?id={petId}', 'the description names where version 2 reads one pet')
})

t.test('operations that are not deprecated carry no lifecycle headers', async (t) => {
  const app = await build(t)
  for (const request of [{ url: '/v1/pets' }, { method: 'POST' as const, url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } }]) {
    const response = await call(t, app, request)
    for (const header of ['deprecation', 'sunset', 'api-stability']) t.notOk(response.headers[header], header)
  }
})

/** Documents `headers` (name: the component under #/components/headers) on every answer of
 * operation `id`, a shared answer written out into it first: the server team's edit when it marks
 * an operation, for the headers the server then sends. */
function documentHeaders(document: OpenAPIV3.Document, id: string, headers: Record<string, string>) {
  const operation = Object.values(document.paths)
    .flatMap((item) => Object.values(item!) as OperationDefinition[])
    .find((definition) => definition.operationId === id)!
  for (const [status, response] of Object.entries(operation.responses)) {
    const written = structuredClone(deref<OpenAPIV3.ResponseObject>(document, response))
    for (const [name, component] of Object.entries(headers)) written.headers = { ...written.headers, [name]: { $ref: `#/components/headers/${component}` } }
    operation.responses[status] = written
  }
}

t.test('lifecycle markers are read from the spec: editing the YAML changes the headers, no code involved', async (t) => {
  const moved = withOperation('getPet', ({ 'x-successor': _, 'x-successor-parameters': _parameters, ...definition }) => ({
    ...definition,
    'x-sunset': '2031-01-31',
    'x-successor-reason': 'listPets reads pets',
  }))
  const app = await build(t, { contract: moved })
  const pet = await call(t, app, { url: '/v1/pets/1' })
  t.equal(pet.headers.sunset, 'Fri, 31 Jan 2031 00:00:00 GMT')
  t.equal(pet.headers.link, '</v1/docs/>; rel="deprecation"; type="text/html"', 'no successor named, no successor link')

  const beta = editedContract((document) => {
    document.paths['/pets']!.get!['x-stability' as never] = 'beta' as never
    documentHeaders(document, 'listPets', { 'API-Stability': 'ApiStability' })
  })
  const other = await build(t, { contract: beta })
  const list = await call(t, other, { url: '/v1/pets' })
  t.equal(list.status, 200)
  t.equal(list.headers['api-stability'], 'beta')
  t.notOk(list.headers.deprecation, 'not deprecated, no Deprecation')
})

t.test('the store orders are experimental: every response of theirs says so, from the spec', async (t) => {
  const contract = loadContract(oldestSpecPath)
  for (const id of ['placeOrder', 'getOrder', 'listOrders', 'updateOrder']) {
    t.equal(contract.operations.get(id)!.definition['x-stability'], 'experimental', `${id} is marked in openapi.yaml`)
  }
  const app = await build(t)
  await call(t, app, { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
  for (const [request, status] of [
    [{ method: 'POST', url: '/v1/store/orders', payload: { petId: 1 } }, 201],
    [{ method: 'POST', url: '/v1/store/orders', payload: { petId: 1 } }, 409],
    [{ method: 'POST', url: '/v1/store/orders', payload: { petId: 2 } }, 404],
    [{ method: 'GET', url: '/v1/store/orders/1' }, 200],
    [{ method: 'HEAD', url: '/v1/store/orders/1' }, 200],
    [{ method: 'GET', url: '/v1/store/orders/x' }, 400],
    [{ method: 'GET', url: '/v1/store/orders', key: null }, 401],
    [{ method: 'GET', url: '/v1/store/orders' }, 200],
    [{ method: 'PATCH', url: '/v1/store/orders/1', payload: { status: 'cancelled' } }, 200],
    [{ method: 'PATCH', url: '/v1/store/orders/1', payload: { status: 'cancelled' } }, 409],
    [{ method: 'PATCH', url: '/v1/store/orders/2', payload: { status: 'cancelled' } }, 404],
  ] as const) {
    const response = await call(t, app, request)
    t.equal(response.status, status, `${request.method} ${request.url}`)
    t.equal(response.headers['api-stability'], 'experimental', `${request.method} ${request.url} ${status} says experimental`)
    for (const header of ['deprecation', 'sunset']) t.notOk(response.headers[header], `and is not deprecated (${header})`)
  }
})

t.test('the stability header comes from the YAML alone: a copy without x-stability serves none', async (t) => {
  // the same spec, with every x-stability taken out: nothing else changes, no code either
  const unmarked = editedContract((document) => {
    for (const item of Object.values(document.paths)) {
      for (const operation of Object.values(item!) as OperationDefinition[]) {
        delete operation['x-stability']
        // nor do its answers document API-Stability (a shared answer written out into it first)
        for (const [status, response] of Object.entries(operation.responses)) {
          const written = structuredClone(deref<OpenAPIV3.ResponseObject>(document, response))
          delete written.headers?.['API-Stability']
          operation.responses[status] = written
        }
      }
    }
  })
  t.notMatch(JSON.stringify(unmarked.document.paths), 'x-stability')
  const app = await build(t, { contract: unmarked })
  await call(t, app, { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
  for (const [method, url, payload] of [
    ['POST', '/v1/store/orders', { petId: 1 }],
    ['GET', '/v1/store/orders/1', undefined],
    ['GET', '/v1/store/orders', undefined],
    ['PATCH', '/v1/store/orders/1', { status: 'delivered' }],
    ['GET', '/v1/store/orders/1', undefined],
  ] as const) {
    const response = await call(t, app, { method, url, ...(payload && { payload }) })
    t.ok(response.status < 300, `${method} ${url} ${response.status}`)
    t.notOk(response.headers['api-stability'], `${method} ${url}: no API-Stability`)
  }
  // and the real spec, served the same way, has it
  const marked = await build(t, { contract: editedContract(() => {}) })
  const response = await call(t, marked, { url: '/v1/store/orders' })
  t.equal(response.headers['api-stability'], 'experimental')
})

t.test('from its sunset on, getPet answers 410 gone, after authentication, its handler never called', async (t) => {
  const sunset = Date.parse('2030-12-05T00:00:00Z')
  let now = sunset - 1
  const app = await build(t, { clock: () => now })
  await call(t, app, { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
  let handled = 0
  // (getPet is served by listPets' handler, with the pet's id: see src/versions/changes/get-pet.ts)
  app.storage.pets.list = ((list) => (query: Parameters<typeof list>[0]) => (handled++, list(query)))(app.storage.pets.list.bind(app.storage.pets))
  const before = await call(t, app, { url: '/v1/pets/1' })
  t.equal(before.status, 200, 'one millisecond before the sunset: 200')
  t.equal(handled, 1, 'the handler read the pet')

  now = sunset
  const after = await call(t, app, { url: '/v1/pets/1' })
  t.comment(
    `HTTP ${after.status}\n${Object.entries(after.headers)
      .map(([name, value]) => `${name}: ${String(value)}`)
      .join('\n')}\n\n${after.body}`,
  )
  t.equal(after.status, 410, 'at the instant of the sunset: 410')
  t.strictSame(after.json, { code: 'gone', message: 'getPet was removed on 2030-12-05 (its sunset): use listPets, GET /v1/pets?id=1', status: 410 })
  t.equal(after.headers.sunset, 'Thu, 05 Dec 2030 00:00:00 GMT')
  t.equal(after.headers.link, '</v1/pets?id=1>; rel="successor-version", </v1/docs/>; rel="deprecation"; type="text/html"')
  t.ok(after.headers.deprecation)
  t.equal(handled, 1, 'the handler was not called')
  t.equal((await call(t, app, { url: '/v1/pets/1', key: null })).status, 401, 'without a key: 401 first')
  t.equal((await call(t, app, { url: '/v1/pets/x' })).status, 410, 'whatever the request')
  t.equal((await call(t, app, { url: '/v1/pets' })).status, 200, 'its successor answers')
})

t.test('brownouts declared in the spec: 410 within each interval, 200 around them', async (t) => {
  const brownouts = [
    { start: '2030-11-01T14:00:00Z', end: '2030-11-01T15:00:00Z' },
    { start: '2030-11-20T00:00:00Z', end: '2030-11-21T00:00:00Z' },
  ]
  const contract = withOperation('getPet', (definition) => ({ ...definition, 'x-brownouts': brownouts }))
  let now = 0
  const app = await build(t, { contract, clock: () => now })
  await call(t, app, { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
  for (const [at, status] of [
    ['2030-11-01T13:59:59.999Z', 200],
    ['2030-11-01T14:00:00Z', 410],
    ['2030-11-01T14:59:59.999Z', 410],
    ['2030-11-01T15:00:00Z', 200],
    ['2030-11-20T12:00:00Z', 410],
    ['2030-11-21T00:00:00Z', 200],
    ['2030-12-05T00:00:00Z', 410],
  ] as const) {
    now = Date.parse(at)
    const response = await call(t, app, { url: '/v1/pets/1' })
    t.equal(response.status, status, at)
    if (at === '2030-11-01T14:00:00Z') {
      t.equal(
        response.json.message,
        'getPet is unavailable until 2030-11-01T15:00:00Z, a brownout before its removal on 2030-12-05: use listPets, GET /v1/pets?id=1',
      )
    }
  }
})

t.test('a stable operation gets no lifecycle headers; a deprecated one without a successor is gone without naming one', async (t) => {
  const stable = withOperation(
    'getPet',
    ({ deprecated, 'x-deprecated-at': _at, 'x-sunset': _sunset, 'x-successor': _successor, 'x-successor-parameters': _parameters, ...definition }) =>
      definition,
  )
  t.equal(lifecycleHeaders(stable.operations.get('getPet')!, stable), undefined)
  t.equal(retirement(stable.operations.get('getPet')!, stable), undefined, 'never gone')
  const noSuccessor = withOperation('getPet', ({ 'x-successor': _, 'x-successor-parameters': _parameters, ...definition }) => ({
    ...definition,
    'x-successor-reason': 'none is needed',
  }))
  t.equal(
    retirement(noSuccessor.operations.get('getPet')!, noSuccessor)!(Date.parse('2031-01-01T00:00:00Z'))!.message,
    'getPet was removed on 2030-12-05 (its sunset)',
  )
})

t.test('the changelog is served without a key, as Markdown, and the spec links it', async (t) => {
  const { readFileSync } = await import('node:fs')
  const { changelogPath } = await import('../src/core/paths.js')
  const app = await build(t)
  const response = await call(t, app, { url: '/v1/changelog', key: null })
  t.equal(response.status, 200)
  t.equal(response.headers['content-type'], 'text/markdown; charset=utf-8')
  t.equal(response.body, readFileSync(changelogPath, 'utf8'))
  t.match(
    response.body,
    /^## Deprecations and sunsets in force\n\n- version 1: `getPet` \(GET \/pets\/\{petId\}\): deprecated on 2026-11-21; removed on 2030-12-05/m,
  )
  const document = loadContract(oldestSpecPath).document as { externalDocs?: { url: string } }
  t.equal(new URL(document.externalDocs!.url).pathname, '/v1/changelog')
})

t.test('goneAt: an operation without a deprecation, or a deprecation without its sunset, is never gone', async (t) => {
  t.equal(
    goneAt('listPets', { level: 'stable' }, Date.now(), () => ''),
    undefined,
  )
  t.equal(
    goneAt('getPet', { level: 'stable', deprecation: { brownouts: [] } }, Date.now(), () => ''),
    undefined,
  )
})
