import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { OpenAPIV3 } from 'openapi-types'
import t from 'tap'
import { generatedCompilers, moduleName, recordingCompilers } from '../src/contract/compilers.js'
import { deref, loadContract } from '../src/contract/spec.js'
import { projectRoot } from '../src/paths.js'
import { build, call, testKey } from './helpers/app.js'
import { contractViolations } from './helpers/contract.js'
import { editedContract } from './helpers/spec.js'

const { document } = loadContract()
const allOperations = [
  'createPet',
  'createWebhook',
  'deleteWebhook',
  'enableWebhook',
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

t.test('an operation whose answers carry no body needs no media type', async (t) => {
  const bodiless = editedContract((d) => {
    d.paths['/pets/{petId}']!.get!.responses = { '204': { description: 'seen' } }
  })
  const app = await build(t, { contract: bodiless })
  t.equal((await call(t, app, { url: '/v1/pets/1' })).status, 404, 'the route is served, with the errors of the server')
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
  const keywords = new Set(['example', 'xml', 'externalDocs'])
  JSON.stringify(required.document, (key, value) => (key.startsWith('x-') && keywords.add(key), value))
  const compiling = recordingCompilers(() => {}, [...keywords]).compilersFactory!
  const schemaController = { compilersFactory: { ...generatedCompilers().compilersFactory, buildValidator: compiling.buildValidator } }
  const app = await build(t, { contract: required, schemaController })
  const missing = await app.inject({ method: 'POST', url: '/v1/store/orders', headers: { authorization: `Bearer ${testKey}` }, payload: { petId: 1 } })
  t.equal(missing.statusCode, 400)
  t.equal(missing.json().message, "header must have required property 'idempotency-key'")
  const sent = await app.inject({
    method: 'POST',
    url: '/v1/store/orders',
    headers: { authorization: `Bearer ${testKey}`, 'Idempotency-Key': 'k' },
    payload: { petId: 1 },
  })
  t.equal(sent.statusCode, 404, 'sent in any case, it is found')
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

t.test('the contract check reads response headers against their schemas: patterns, enums, types, the required ones present', async (t) => {
  const listed = {
    method: 'GET',
    url: '/v1/pets',
    status: 200,
    body: '[]',
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
      'ratelimit-policy': '"key";q=1000;w=60',
      ratelimit: '"key";r=998;t=42',
      link: '</v1/pets?limit=20&after=20>; rel="next"',
    },
  }
  t.strictSame(contractViolations(listed), [], 'a response that keeps the contract')
  const { 'cache-control': _, ...withoutCacheControl } = listed.headers
  const violations = contractViolations({
    ...listed,
    headers: { ...withoutCacheControl, 'x-content-type-options': 'sniff', link: '</v1/store/orders?after=2>; rel="next"', ratelimit: '"key";r=lots;t=42' },
  })
  t.equal(violations.length, 4, 'a wrong Link, a wrong enum value, a missing header, a wrong pattern: each named')
  t.match(violations, [
    /^header Link "<\/v1\/store\/orders\?after=2>.*" must match pattern "\^<\/v1\/pets/,
    'header X-Content-Type-Options "sniff" must be equal to one of the allowed values',
    'header Cache-Control is documented as required but missing',
    /^header RateLimit ".*r=lots;t=42" must match pattern/,
  ])
  const refused = { method: 'GET', url: '/v1/pets', status: 503, body: '{"code":"unavailable","message":"later","status":503}' }
  const headers = { 'content-type': 'application/json', 'x-content-type-options': 'nosniff', 'cache-control': 'no-store', 'ratelimit-policy': '"key";q=1000;w=60', ratelimit: '"key";r=998;t=42' }
  t.strictSame(contractViolations({ ...refused, headers: { ...headers, 'retry-after': '5' } }), [], 'Retry-After, an integer in its text')
  t.strictSame(contractViolations({ ...refused, headers: { ...headers, 'retry-after': 'soon' } }), ['header Retry-After "soon" must be integer'])
  t.strictSame(contractViolations({ ...refused, headers: { ...headers, 'retry-after': '0' } }), ['header Retry-After "0" must be >= 1'])
})
