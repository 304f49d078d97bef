/**
 * The examples of openapi.yaml run in the document's order against an empty store, as a
 * contract-test generator would run them: each request example is sent as it is, and each
 * success answers its response example (placedAt aside, which is the time of the run).
 */
import type { OpenAPIV3 } from 'openapi-types'
import t from 'tap'
import { loadContract } from '../src/contract/load.js'
import { deref } from '../src/contract/pointer.js'
import { build, call } from './helpers/app.js'

const contract = loadContract()
const { document } = contract

const definition = (id: string) => contract.operations.get(id)!.definition
const requestExamples = (id: string): unknown[] => {
  const media = deref<OpenAPIV3.RequestBodyObject>(document, definition(id).requestBody!).content['application/json']!
  return media.examples ? Object.values(media.examples).map((example) => deref<OpenAPIV3.ExampleObject>(document, example).value) : [media.example]
}
const responseExample = (id: string, status: string) =>
  deref<OpenAPIV3.ResponseObject>(document, definition(id).responses[status]!).content!['application/json']!.example
const schemaExample = (name: string) => (document.components!.schemas![name] as OpenAPIV3.SchemaObject).example
const withoutTime = (value: unknown) => JSON.parse(JSON.stringify(value, (key, item) => (key === 'placedAt' ? undefined : item)))

t.test('the examples of pets and orders run in order against an empty store', async (t) => {
  const app = await build(t)
  const [minimal, withStatus] = requestExamples('createPet')
  const created = await call(t, app, { method: 'POST', url: contract.urlOf('listPets'), payload: minimal as object })
  t.strictSame(created.json, responseExample('createPet', '201'), 'createPet (minimal) answers its example')
  t.equal(created.headers.location, (document.components!.headers!.Location as OpenAPIV3.HeaderObject).example)
  await call(t, app, { method: 'POST', url: contract.urlOf('listPets'), payload: withStatus as object })
  t.strictSame((await call(t, app, { url: contract.urlOf('listPets') })).json, responseExample('listPets', '200'), 'listPets shows both')

  const petId = schemaExample('PetId')
  t.strictSame((await call(t, app, { url: contract.urlOf('getPet', { petId }) })).json, responseExample('getPet', '200'))

  const [order] = requestExamples('placeOrder')
  const placed = await call(t, app, { method: 'POST', url: contract.urlOf('listOrders'), payload: order as object })
  t.strictSame(withoutTime(placed.json), withoutTime(responseExample('placeOrder', '201')), 'placeOrder orders the pet createPet made')
  const orderId = schemaExample('OrderId')
  t.strictSame(withoutTime((await call(t, app, { url: contract.urlOf('getOrder', { orderId }) })).json), withoutTime(responseExample('getOrder', '200')))
  t.strictSame(withoutTime((await call(t, app, { url: contract.urlOf('listOrders') })).json), withoutTime(responseExample('listOrders', '200')))
  const [deliver] = requestExamples('updateOrder')
  const moved = await call(t, app, { method: 'PATCH', url: contract.urlOf('getOrder', { orderId }), payload: deliver as object })
  t.strictSame(withoutTime(moved.json), withoutTime(responseExample('updateOrder', '200')), 'updateOrder delivers it')
  t.equal((await call(t, app, { method: 'POST', url: contract.urlOf('listOrders'), payload: order as object })).json.message, 'Pet 1 is sold, not available')
})
