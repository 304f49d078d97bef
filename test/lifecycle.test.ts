import t from 'tap'
import { lifecycleHeaders } from '../src/contract/lifecycle.js'
import { type OperationDefinition, loadContract } from '../src/contract/spec.js'
import { build, call, testKey } from './helpers/app.js'
import { editedContract } from './helpers/spec.js'

const getPet = loadContract().operations.get('getPet')!

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
    deprecation: `@${Date.parse(`${definition['x-deprecated-at']}T00:00:00Z`) / 1000}`,
    sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
    link: '</v1/pets>; rel="successor-version", </v1/docs/>; rel="deprecation"; type="text/html"',
  }
  t.equal(definition['x-sunset'], '2030-12-05', 'removal on 5 December 2030')
  for (const [url, key, status] of [
    ['/v1/pets/1', undefined, 200],
    ['/v1/pets/2', undefined, 404],
    ['/v1/pets/x', undefined, 400],
    ['/v1/pets/1', null, 401],
  ] as const) {
    const response = await call(t, app, { url, ...(key === null && { key }) })
    t.equal(response.status, status)
    t.match(response.headers, expected, `${url} ${status}`)
  }
  t.ok(Date.parse(expected.sunset) > Number(expected.deprecation.slice(1)) * 1000, 'Sunset is later than Deprecation')
})

t.test('operations that are not deprecated carry no lifecycle headers', async (t) => {
  const app = await build(t)
  for (const request of [{ url: '/v1/pets' }, { method: 'POST' as const, url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } }]) {
    const response = await call(t, app, request)
    for (const header of ['deprecation', 'sunset', 'api-stability']) t.notOk(response.headers[header], header)
  }
})

t.test('lifecycle markers are read from the spec: editing the YAML changes the headers, no code involved', async (t) => {
  const edited = withOperation('listPets', (definition) => ({
    ...definition,
    'x-stability': 'beta',
    deprecated: true,
    'x-deprecated-at': '2027-01-01',
  }))
  const authorization = `Bearer ${testKey}`
  const app = await build(t, { contract: withOperation('getPet', (definition) => ({ ...definition, 'x-sunset': '2031-01-31' })) })
  const pet = await app.inject({ url: '/v1/pets/1', headers: { authorization } })
  t.equal(pet.headers.sunset, 'Fri, 31 Jan 2031 00:00:00 GMT')

  const other = await build(t, { contract: edited })
  const list = await other.inject({ url: '/v1/pets', headers: { authorization } })
  t.equal(list.statusCode, 200)
  t.equal(list.headers['api-stability'], 'beta')
  t.equal(list.headers.deprecation, `@${Date.UTC(2027, 0, 1) / 1000}`)
  t.equal(list.headers.link, '</v1/docs/>; rel="deprecation"; type="text/html"', 'no successor named, no successor link')
  t.notOk(list.headers.sunset, 'no x-sunset, no Sunset')
})

t.test('lifecycleHeaders refuses markers it cannot honour, naming the operation', async (t) => {
  const cases: [Partial<OperationDefinition>, RegExp][] = [
    [{ 'x-stability': 'alpha' }, /getPet: x-stability must be one of experimental, beta, not "alpha"/],
    [{ 'x-deprecated-at': undefined }, /getPet: x-deprecated-at must be a date written YYYY-MM-DD, not undefined/],
    [{ 'x-deprecated-at': '2026-02-30' }, /x-deprecated-at must be a date written YYYY-MM-DD, not "2026-02-30"/],
    [{ 'x-sunset': 'soon' }, /x-sunset must be a date written YYYY-MM-DD, not "soon"/],
    [{ 'x-sunset': '2020-01-01' }, /getPet: x-sunset is earlier than x-deprecated-at/],
    [{ 'x-successor': 'findPets' }, /getPet: x-successor names no operation: findPets/],
  ]
  for (const [change, message] of cases) {
    const edited = withOperation('getPet', (definition) => ({ ...definition, ...change }))
    t.throws(() => lifecycleHeaders(edited.operations.get('getPet')!, edited, '/v1/docs/'), message)
  }
  const stable = withOperation('getPet', ({ deprecated, ...definition }) => definition)
  t.equal(lifecycleHeaders(stable.operations.get('getPet')!, stable, '/v1/docs/'), undefined, 'a stable operation gets none')
})
