import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { OpenAPIV3 } from 'openapi-types'
import t from 'tap'
import { generatedCompilers, moduleName, openapiKeywords, recordingCompilers } from '../src/contract/compilers.js'
import { deref, loadContract } from '../src/contract/spec.js'
import { projectRoot } from '../src/paths.js'
import { build, call } from './helpers/app.js'
import { editedContract } from './helpers/spec.js'

const { document } = loadContract()
const allOperations = [
  'createPet',
  'createWebhook',
  'deleteWebhook',
  'getOrder',
  'getPet',
  'getWebhook',
  'listOrders',
  'listPets',
  'listWebhookDeliveries',
  'listWebhooks',
  'placeOrder',
  'redeliverWebhook',
  'rotateWebhookSecret',
  'updateOrder',
]

t.test('the contract: base path from the servers, operations by id', async (t) => {
  const contract = loadContract()
  t.equal(contract.basePath, '/v1')
  t.strictSame([...contract.operations.keys()].sort(), allOperations)
  t.match(contract.operations.get('getPet'), { method: 'GET', path: '/pets/{petId}' })
  t.match(contract.operations.get('updateOrder'), { method: 'PATCH', path: '/store/orders/{orderId}' })
  t.equal(contract.urlOf('listOrders'), '/v1/store/orders', 'an operation\'s URL, under the base path')
  t.equal(contract.urlOf('getPet', { petId: 7 }), '/v1/pets/7', 'with its path parameters')
  // (npm run release writes each version's contract: the served one is the last released)
  t.ok(existsSync(join(projectRoot, 'contract', 'released', `${document.info.version}.yaml`)), `info.version ${document.info.version} is a release`)
  t.ok(document.servers!.every(({ url }) => url.endsWith('/v1')), 'production and staging end in /v1')
  const security = document.components!.securitySchemes!.bearerAuth as OpenAPIV3.HttpSecurityScheme
  t.match(security, { type: 'http', scheme: 'bearer' })
})

t.test('a spec the server cannot serve is refused at startup, saying why', async (t) => {
  const load = (edit: (document: OpenAPIV3.Document) => void) => () => editedContract(edit)
  t.throws(load((d) => d.servers!.push({ url: 'https://example.com/v2' })), /every server URL must end in the same base path, found \["\/v1","\/v2"\]/)
  t.throws(load((d) => delete d.servers), /every server URL must end in the same base path, found \[\]/)
  t.throws(load((d) => delete d.paths['/pets']!.get!.operationId), /GET \/pets has no operationId/)
  t.throws(() => deref(document, { $ref: '#/components/schemas/Cat' }), /#\/components\/schemas\/Cat points to nothing/)
  t.strictSame(deref(document, { $ref: '#/paths/~1pets/get/operationId' }), 'listPets', 'a JSON pointer reads ~1 as /')

  const refused = async (edit: (document: OpenAPIV3.Document) => void, message: RegExp) => {
    await t.rejects(build(t, { contract: editedContract(edit) }), message)
  }
  await refused((d) => {
    d.components!.securitySchemes!.apiKey = { type: 'apiKey', in: 'header', name: 'X-Key' }
    d.paths['/pets']!.get!.security = [{ apiKey: [] }]
  }, /listPets requires security scheme apiKey, which this server does not implement/)
  await refused((d) => {
    ;(d.paths['/pets']!.post!.requestBody as OpenAPIV3.RequestBodyObject).required = false
  }, /createPet must require an application\/json body \(it takes application\/json\)/)
  await refused((d) => {
    const body = d.paths['/pets']!.post!.requestBody as OpenAPIV3.RequestBodyObject
    body.content['text/plain'] = { schema: { type: 'string' } }
  }, /createPet must require an application\/json body \(it takes application\/json, text\/plain\)/)
  await refused((d) => {
    const found = d.paths['/pets/{petId}']!.get!.responses['200'] as OpenAPIV3.ResponseObject
    found.content!['text/plain'] = { schema: { type: 'string' } }
  }, /getPet must answer 200 in application\/json \(it says application\/json, text\/plain\)/)
  t.throws(() => loadContract().urlOf('adoptPet'), /openapi.yaml has no operation adoptPet/)
  t.throws(() => loadContract().urlOf('getPet'), /getPet's URL needs petId/)
})

t.test('an answer documented without a body needs no media type', async (t) => {
  const bodiless = editedContract((d) => {
    const { '200': _, ...errors } = d.paths['/pets/{petId}']!.get!.responses
    d.paths['/pets/{petId}']!.get!.responses = { '204': { description: 'seen' }, ...errors }
  })
  const app = await build(t, { contract: bodiless })
  t.equal((await call(t, app, { url: '/v1/pets/1' })).status, 404, 'the route is served, with the errors of the server')
  // (no request: each answer it can give, a 404 or a 401, is one this document does not list)
  const silent = await build(t, { contract: editedContract((d) => void (d.paths['/pets/{petId}']!.get!.responses = { '204': { description: 'seen' } })) })
  await silent.ready()
  t.ok(silent.hasRoute({ method: 'GET', url: '/v1/pets/:petId' }), 'so is one whose every answer is bodiless')
})

t.test('security follows the spec: an operation it opens needs no key', async (t) => {
  const open = editedContract((d) => {
    d.paths['/pets']!.get!.security = []
    d.paths['/pets']!.post!.security = [{}, { bearerAuth: [] }]
  })
  const app = await build(t, { contract: open })
  t.equal((await call(t, app, { url: '/v1/pets', key: null })).status, 200)
  t.equal((await call(t, app, { method: 'POST', url: '/v1/pets', key: null, payload: { name: 'Rex', categoryId: 1 } })).status, 201)
  t.equal((await call(t, app, { url: '/v1/pets/1', key: null })).status, 401, 'getPet still requires its key')
})

t.test('a spec without any security requirement opens every operation', async (t) => {
  const app = await build(t, {
    contract: editedContract((d) => {
      delete d.security
      for (const item of Object.values(d.paths)) for (const operation of Object.values(item!)) delete (operation as OpenAPIV3.OperationObject).security
    }),
  })
  t.equal((await call(t, app, { url: '/v1/pets', key: null })).status, 200)
})

t.test('header parameters are read under the lower-case names Node gives them, required ones too', async (t) => {
  const required = editedContract((d) => {
    ;(d.components!.parameters!.IdempotencyKey as OpenAPIV3.ParameterObject).required = true
  })
  // validators compiled from this spec, not taken from generated/ (the serializers are the same)
  const compiling = recordingCompilers(() => {}, openapiKeywords(required.document)).compilersFactory!
  const schemaController = { compilersFactory: { ...generatedCompilers().compilersFactory, buildValidator: compiling.buildValidator } }
  const app = await build(t, { contract: required, schemaController })
  const missing = await call(t, app, { method: 'POST', url: '/v1/store/orders', payload: { petId: 1 } })
  t.equal(missing.status, 400)
  t.equal(missing.json.message, "header must have required property 'idempotency-key'")
  const sent = await call(t, app, { method: 'POST', url: '/v1/store/orders', headers: { 'Idempotency-Key': 'k' }, payload: { petId: 1 } })
  t.equal(sent.status, 404, 'sent in any case, it is found')
})

t.test('path items may hold more than operations', async (t) => {
  const contract = editedContract((d) => {
    d.paths['/pets']!.summary = 'The catalogue'
    d.paths['/pets']!.description = 'All pets'
  })
  t.strictSame([...contract.operations.keys()].sort(), allOperations)
})

t.test('the server runs the generated validators: without them it does not start', async (t) => {
  const empty = mkdtempSync(join(tmpdir(), 'petstore-generated-'))
  const app = await build(t, { schemaController: generatedCompilers(empty) })
  await t.rejects(async () => await app.ready(), /validators\/get_v1_pets_querystring\.cjs is missing: generated\/ does not match openapi\.yaml; run npm run generate/)
  t.equal(moduleName('serializers', { method: 'GET', url: '/v1/pets/:petId', httpStatus: '200', contentType: 'application/json' }), 'serializers/get_v1_pets_petid_200_application_json.cjs')
})
