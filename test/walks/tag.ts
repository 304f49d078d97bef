/**
 * Run in the copy of the walk "a new field" (test/changing-the-api.walk.ts), once `tag` is added
 * (test/helpers/checks.ts prints what it checked): createPet takes its optional tag and answers
 * it as sent, in every served version, as test/round-trip.test.ts sends it (the operation's
 * first request example, with the tag its schema's example, once the examples before it ran);
 * then the pets of test/pets.test.ts, with and without a tag, through each version: a pet
 * without one is answered without one, one with it as sent, a tag that breaks its schema
 * refused. Every answer checked against its version's document (`call`).
 */
import type { OpenAPIV3 } from 'openapi-types'
import { loadContracts } from '../../src/contract/load.js'
import { deref } from '../../src/contract/pointer.js'
import { build, call, testKey } from '../helpers/app.js'
import { checker } from '../helpers/checks.js'
import { everyRole, examplesOrder, pathExamples, sendStep } from '../helpers/examples.js'
import { requestExamples } from '../helpers/spec.js'

const { t, report } = checker()
const contracts = loadContracts()

for (const contract of contracts) {
  await t.test(`${contract.file}: createPet takes its optional tag and answers it as sent`, async (t) => {
    const operation = contract.operations.get('createPet')!
    const body = deref<OpenAPIV3.RequestBodyObject>(contract.document, operation.definition.requestBody!).content['application/json']!.schema!
    const properties = deref<OpenAPIV3.SchemaObject>(contract.document, body).properties!
    const value = deref<OpenAPIV3.SchemaObject>(contract.document, properties.tag!).example as unknown
    t.ok(value !== undefined, 'the tag has an example to send')
    const app = await build(t, { API_KEYS: [everyRole(contract)] })
    const order = examplesOrder(contract)!
    for (const step of order.slice(
      0,
      order.findIndex(({ id }) => id === operation.id),
    ))
      await sendStep(t, app, contract, step)
    const [example] = requestExamples(contract, operation.id)
    const payload = { ...(example!.value as object), tag: value }
    const answer = await call(t, app, { method: 'POST', url: contract.urlOf(operation.id, pathExamples(contract, operation)), payload })
    t.equal(answer.status, 201, `${operation.id}: 201`)
    t.strictSame(answer.json.tag, value, `tag: ${JSON.stringify(value)}, as sent`)
  })
}

await t.test('the pets, with a tag and without, through each version', async (t) => {
  const curator = 'curator-key-00001'
  const app = await build(t, { API_KEYS: [testKey, `${curator}:pets:read+pets:write+categories:write`] })
  t.equal((await call(t, app, { method: 'POST', url: '/v2/categories', payload: { name: 'Bird' }, key: curator })).status, 201)
  const rex = await call(t, app, { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1, status: 'pending' } })
  t.strictSame([rex.status, rex.json], [201, { id: 1, name: 'Rex', categoryId: 1, status: 'pending' }], 'version 1: a pet without a tag, answered without one')
  const tom = await call(t, app, { method: 'POST', url: '/v2/pets', payload: { name: 'Tom', categoryId: 1 } })
  t.strictSame([tom.status, tom.json], [201, { id: 2, name: 'Tom', category: { id: 1, name: 'Bird' }, status: 'available' }], 'version 2: without a tag')
  const kit = await call(t, app, { method: 'POST', url: '/v2/pets', payload: { name: 'Kit', categoryId: 1, tag: 'shy-one' } })
  t.strictSame([kit.status, kit.json.tag], [201, 'shy-one'], 'version 2: with one')
  const ace = await call(t, app, { method: 'POST', url: '/v1/pets', payload: { name: 'Ace', categoryId: 1, tag: 'calm' } })
  t.strictSame([ace.status, ace.json.tag], [201, 'calm'], 'version 1: with one')
  t.strictSame(
    (await call(t, app, { url: '/v2/pets' })).json.map(({ name, tag }: { name: string; tag?: string }) => [name, tag]),
    [
      ['Rex', undefined],
      ['Tom', undefined],
      ['Kit', 'shy-one'],
      ['Ace', 'calm'],
    ],
    'version 2 lists each as it was made, through either version',
  )
  t.strictSame(
    (await call(t, app, { url: '/v1/pets/3' })).json,
    { id: 3, name: 'Kit', categoryId: 1, status: 'available', tag: 'shy-one' },
    'version 1 reads it',
  )
  t.strictSame((await call(t, app, { url: '/v1/pets/1' })).json, rex.json, 'and one without a tag as it was made')
  for (const url of ['/v1/pets', '/v2/pets']) {
    for (const tag of ['', 'Calm', 'x'.repeat(51), 7]) {
      const refused = await call(t, app, { method: 'POST', url, payload: { name: 'Max', categoryId: 1, tag } })
      t.strictSame([refused.status, refused.json.code], [400, 'invalid_request'], `${url}: the tag ${JSON.stringify(tag)} is refused`)
    }
  }
})

await report()
