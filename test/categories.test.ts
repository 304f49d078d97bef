/**
 * Version 2's categories: listed, added (a name unique whatever its case, by a key with
 * categories:write) and read, each answer checked against openapi-v2.yaml; on both stores.
 */
import t, { type Test } from 'tap'
import { build, call, testKey } from './helpers/app.js'
import { atMost } from './helpers/concurrency.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'

const curator = 'curator-key-00001'

async function categoriesOn(t: Test, DATABASE_URL: string) {
  const app = await build(t, { DATABASE_URL, API_KEYS: [testKey, `${curator}:pets:read+categories:write`] })
  const add = (name: unknown, key = curator) => call(t, app, { method: 'POST', url: '/v2/categories', payload: { name }, key })

  t.strictSame((await call(t, app, { url: '/v2/categories' })).json, [], 'none yet')
  const made = await atMost(4, 5, (i) => add(['Bird', 'Rodent', 'Fish', 'Reptile', 'Bird'][i]))
  t.strictSame(made.map(({ status }) => status).sort(), [201, 201, 201, 201, 409], 'two adds of one name at once make one category')
  const again = await add('bIRD')
  t.strictSame(again.json, { code: 'category_name_taken', message: `A category named "Bird" exists already (category ${made.find(({ json }) => json.name === 'Bird')!.json.id})`, status: 409 }, 'whatever its case')

  const first = await call(t, app, { url: '/v2/categories?limit=3' })
  t.equal(first.json.length, 3)
  t.equal(first.headers.link, `</v2/categories?limit=3&after=${first.json[2].id}>; rel="next"`)
  const rest = await call(t, app, { url: `/v2/categories?limit=3&after=${first.json[2].id}` })
  t.equal(rest.json.length, 1)
  t.equal(rest.headers.link, undefined)
  t.strictSame([...first.json, ...rest.json].map(({ id }: { id: number }) => id), [1, 2, 3, 4], 'in id order, each once')

  const one = await call(t, app, { url: '/v2/categories/2' })
  t.equal(one.status, 200)
  t.match(one.json, { id: 2, name: String })
  t.strictSame((await call(t, app, { url: '/v2/categories/99' })).json, { code: 'not_found', message: 'Category 99 not found', status: 404 })
  t.equal((await call(t, app, { url: '/v2/categories/x' })).status, 400)
  t.equal((await call(t, app, { url: '/v2/categories?limit=0' })).status, 400)
  t.equal((await call(t, app, { url: '/v2/categories', key: null })).status, 401)
  t.equal((await call(t, app, { url: '/v2/categories', key: curator })).status, 200, 'pets:read lists them')

  for (const [name, why] of [
    ['', 'empty'],
    [' ', 'nothing visible'],
    ['a\u0000b', 'a control character'],
    ['x'.repeat(101), 'too long'],
    [7, 'not a string'],
  ] as const) {
    t.equal((await add(name)).status, 400, why)
  }
  t.equal((await call(t, app, { method: 'POST', url: '/v2/categories', payload: { name: 'Cat', kind: 'x' }, key: curator })).status, 400, 'an unknown property')
  t.equal((await add('Cat', testKey)).status, 403, 'a key without categories:write')
  t.equal((await add('Cat', 'no-such-key-0000')).status, 401)
  t.equal((await call(t, app, { method: 'POST', url: '/v2/categories', payload: 'name=Cat', headers: { 'content-type': 'text/plain' }, key: curator })).status, 415)
  t.equal((await call(t, app, { method: 'POST', url: '/v2/categories', payload: { name: 'x'.repeat(20_000) }, key: curator })).status, 413)

  // a pet's category name is read for the versions that show it, and only for them
  const pet = (await call(t, app, { method: 'POST', url: '/v2/pets', payload: { name: 'Tweety', categoryId: 2 } })).json
  const stored = { id: pet.id, name: 'Tweety', categoryId: 2, status: 'available' }
  t.strictSame(await app.storage.pets.list({ limit: 2, id: pet.id }), [{ ...stored, categoryName: pet.category.name }], 'with its category name')
  t.strictSame(await app.storage.pets.list({ limit: 2, id: pet.id, named: false }), [stored], 'without it')
  t.strictSame((await call(t, app, { url: `/v1/pets/${pet.id}` })).json, { id: pet.id, name: 'Tweety', categoryId: 2, status: 'available' }, 'version 1 reads it without')
}

t.test('SQLite: categories', (t) => categoriesOn(t, 'sqlite::memory:'))
t.test('PostgreSQL: categories', { skip: postgresMissing }, async (t) => categoriesOn(t, await freshPostgres(t)))
