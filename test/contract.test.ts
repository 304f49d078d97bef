import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { OpenAPIV3 } from 'openapi-types'
import t from 'tap'
import { loadContract, newestSpecPath } from '../src/contract/load.js'
import { deref } from '../src/contract/pointer.js'
import { projectRoot } from '../src/core/paths.js'
import { generatedCompilers, moduleName, openapiKeywords, recordingCompilers } from '../src/http/compilers.js'
import { aCategory, api, build, call, servedContracts } from './helpers/app.js'
import { editedContract, oldestSpecPath } from './helpers/spec.js'

const { document } = loadContract(oldestSpecPath)
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a parsed contract, which each case edits freely
type Spec = any
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const getPetOf = (d: OpenAPIV3.Document) => d.paths['/pets/{petId}']!.get as unknown as Record<string, unknown>
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
  const contract = loadContract(oldestSpecPath)
  t.equal(contract.basePath, '/v1')
  t.strictSame([...contract.operations.keys()].sort(), allOperations)
  t.match(contract.operations.get('getPet'), { method: 'GET', path: '/pets/{petId}' })
  t.match(contract.operations.get('updateOrder'), { method: 'PATCH', path: '/store/orders/{orderId}' })
  t.equal(contract.urlOf('listOrders'), '/v1/store/orders', "an operation's URL, under the base path")
  t.equal(contract.urlOf('getPet', { petId: 7 }), '/v1/pets/7', 'with its path parameters')
  // (npm run release writes each version's contract: the served one is the last released)
  t.ok(existsSync(join(projectRoot, 'contract', 'released', `${document.info.version}.yaml`)), `info.version ${document.info.version} is a release`)
  t.ok(
    document.servers!.every(({ url }) => url.endsWith('/v1')),
    'production and staging end in /v1',
  )
  const security = document.components!.securitySchemes!.bearerAuth as OpenAPIV3.HttpSecurityScheme
  t.match(security, { type: 'http', scheme: 'bearer' })
})

t.test('a spec the server cannot serve is refused at startup, saying why', async (t) => {
  const load = (edit: (document: OpenAPIV3.Document) => void) => () => editedContract(edit)
  t.throws(
    load((d) => d.servers!.push({ url: 'https://example.com/v2' })),
    /every server URL must end in the same base path, found \["\/v1","\/v2"\]/,
  )
  t.throws(
    load((d) => delete d.servers),
    /every server URL must end in the same base path, found \[\]/,
  )
  t.throws(
    load((d) => delete d.paths['/pets']!.get!.operationId),
    /^openapi.yaml: GET \/pets: has no operationId$/m,
  )
  t.throws(() => deref(document, { $ref: '#/components/schemas/Cat' }), /#\/components\/schemas\/Cat points to nothing/)
  t.throws(() => deref(document, { $ref: '#/paths/~1pets/get/operationId/length' }), /points to nothing/, 'not inside a string')
  t.throws(() => deref(document, { $ref: 7 } as never), /7 points to nothing/)
  const cycle = { components: { schemas: { A: { $ref: '#/components/schemas/B' }, B: { $ref: '#/components/schemas/A' } } } }
  t.throws(() => deref(cycle, { $ref: '#/components/schemas/A' }), /points to nothing/, 'a cycle of $refs ends')
  t.strictSame(deref(document, { $ref: '#' }), document, 'the whole document')
  t.throws(
    load((d) => void ((d as unknown as { webhooks: Record<string, unknown> }).webhooks['pet.adopted'] = { get: {} })),
    /event pet.adopted: an event is sent as a POST: it needs its post/,
  )
  t.strictSame(deref(document, { $ref: '#/paths/~1pets/get/operationId' }), 'listPets', 'a JSON pointer reads ~1 as /')

  const refused = (edit: (document: OpenAPIV3.Document) => void, message: RegExp) => t.throws(load(edit), message)
  refused((d) => {
    d.components!.securitySchemes!.apiKey = { type: 'apiKey', in: 'header', name: 'X-Key' }
    d.paths['/pets']!.get!.security = [{ apiKey: [] }]
  }, /operation listPets: requires the security scheme apiKey, which this server does not implement \(only bearerAuth, HTTP bearer\)/)
  refused((d) => {
    ;(d.paths['/pets']!.post!.requestBody as OpenAPIV3.RequestBodyObject).required = false
  }, /operation createPet: must require an application\/json body \(it takes application\/json, optionally\)/)
  refused((d) => {
    const body = d.paths['/pets']!.post!.requestBody as OpenAPIV3.RequestBodyObject
    body.content['text/plain'] = { schema: { type: 'string' } }
  }, /operation createPet: must require an application\/json body \(it takes application\/json, text\/plain\)/)
  refused((d) => {
    const found = d.paths['/pets/{petId}']!.get!.responses['200'] as OpenAPIV3.ResponseObject
    found.content!['text/plain'] = { schema: { type: 'string' } }
  }, /operation getPet: must answer 200 in application\/json \(it says application\/json, text\/plain\)/)
  refused(
    (d) => void delete d.paths['/pets/{petId}']!.get!.responses['410'],
    /operation getPet: a deprecated operation documents its 410 \(gone, from its sunset on\)/,
  )
  refused((d) => {
    const placed = structuredClone(deref<OpenAPIV3.ResponseObject>(d, d.paths['/store/orders']!.post!.responses['201']!))
    delete placed.headers!['API-Stability']
    d.paths['/store/orders']!.post!.responses['201'] = placed
  }, /operation placeOrder: response 201 does not document API-Stability, which the server sends for x-stability/)
  refused(
    (d) => void delete (d.paths['/store/orders']!.post as Record<string, unknown>)['x-stability'],
    /operation placeOrder: response 201 documents API-Stability as required, which the server sends only for x-stability/,
  )
  refused((d) => {
    const found = d.paths['/pets/{petId}']!.get!.responses['200'] as OpenAPIV3.ResponseObject
    delete found.headers!.Sunset
  }, /operation getPet: response 200 does not document Sunset/)
  refused((d) => {
    const found = d.paths['/pets/{petId}']!.get!.responses['200'] as OpenAPIV3.ResponseObject
    delete found.headers
  }, /operation getPet: response 200 does not document Deprecation, Sunset, Link/)
  refused(
    (d) => void ((d as { 'x-service'?: unknown })['x-service'] = { limits: { requestBodyBytes: 0 } }),
    /x-service: limits.requestBodyBytes must be a whole number above 0, not 0/,
  )
  refused(
    (d) => void delete (d as Partial<OpenAPIV3.Document>).info,
    /^openapi.yaml: info.version: info.version undefined is not a version MAJOR.MINOR.PATCH$/m,
  )
  refused((d) => void (d.info.version = 'one'), /^openapi.yaml: info.version: info.version "one" is not a version MAJOR.MINOR.PATCH$/m)
  refused((d) => {
    const body = d.paths['/pets']!.post!.requestBody as OpenAPIV3.RequestBodyObject
    delete (body as Partial<OpenAPIV3.RequestBodyObject>).content
  }, /operation createPet: must require an application\/json body \(it takes none\)/)
  refused((d) => void (getPetOf(d)['x-successor'] = 7), /operation getPet: x-successor must be an operationId, not 7/)
  refused(
    (d) => void (getPetOf(d)['x-successor-parameters'] = { id: '$request.body#/id' }),
    /operation getPet: x-successor-parameters must map the successor's query parameters to parameters of this request, e.g. \{id: \$request.path.petId\}/,
  )
  refused((d) => void (getPetOf(d)['x-successor-parameters'] = []), /operation getPet: x-successor-parameters must map/)
  refused((d) => void (getPetOf(d)['x-successor-parameters'] = { id: 7 }), /operation getPet: x-successor-parameters must map/)
  refused((d) => void delete getPetOf(d)['x-successor'], /operation getPet: x-successor-parameters needs x-successor$/m)
  const unknownParameters = (d: OpenAPIV3.Document) => void (getPetOf(d)['x-successor-parameters'] = { name: '$request.query.petId' })
  refused(unknownParameters, /^openapi.yaml: operation getPet: x-successor-parameters names name, which is no query parameter of listPets$/m)
  refused(unknownParameters, /^openapi.yaml: operation getPet: x-successor-parameters gives name the query parameter petId, which getPet does not have$/m)
  refused((d) => {
    const created = (d as unknown as { webhooks: Record<string, { post: Record<string, unknown> }> }).webhooks['pet.created']!.post
    Object.assign(created, { deprecated: true, 'x-deprecated-at': '2026-11-21', 'x-sunset': '2031-06-01', 'x-successor-reason': 'none yet' })
  }, /event pet.created: the server does not retire events: a deprecated event would still be sent, so it is not marked deprecated/)
  t.equal(editedContract((d) => void delete (d as Partial<OpenAPIV3.Document>).paths).operations.size, 0, 'a document without paths has no operations')
  t.throws(() => loadContract(oldestSpecPath).urlOf('adoptPet'), /^contract\/versions\/1\.overlay\.yaml has no operation adoptPet$/)
  t.throws(() => loadContract(oldestSpecPath).urlOf('getPet'), /getPet's URL needs petId/)
  const oldest = loadContract(oldestSpecPath)
  t.equal(oldest.operationAt('HEAD', `${oldest.basePath}/pets/7`)?.id, 'getPet', 'HEAD as GET')
  t.equal(oldest.operationAt('GET', `${oldest.basePath}/nothing`), undefined, 'a path it has not')
})

/** The newest version's document after `edit`: what the server serves, edited. */
const newestEdited = (edit: (document: OpenAPIV3.Document) => void) => editedContract(edit, newestSpecPath)

t.test('a deprecated operation documents the headers the server sends, and says what to write when it does not', async (t) => {
  const refused = (edit: (document: Spec) => void, ...messages: string[]) =>
    t.throws(
      () => editedContract(edit as never),
      { message: new RegExp(messages.map((message) => `^openapi.yaml: ${escaped(message)}$`).join('\n')) },
      messages.join('\n'),
    )
  const getPet = (d: Spec) => d.paths['/pets/{petId}'].get
  // (the successor's URL as the model makes it for the check: every parameter of the request 1)
  const lifecycle = '</v1/pets?id=1>; rel="successor-version", </v1/docs/>; rel="deprecation"; type="text/html"'
  // a shared response, answered by operations that are not deprecated too, documents them as optional
  refused((d) => {
    getPet(d).responses['400'] = { $ref: '#/components/responses/InvalidRequest' }
    delete d.components.responses.InvalidRequest.headers.Sunset
  }, "operation getPet: response 400 does not document Sunset: add Sunset: $ref '#/components/headers/SunsetWhenDeprecated' to #/components/responses/InvalidRequest")
  refused(
    (d) => (getPet(d).responses['200'].headers.Link = { schema: { type: 'string', maxLength: 20 } }),
    `operation getPet: response 200 documents a Link that does not admit \`${lifecycle}\`, which the server sends: document Link as $ref '#/components/headers/LifecycleLink'`,
  )
  refused((d) => {
    getPet(d).responses['400'] = { $ref: '#/components/responses/InvalidRequest' }
    d.components.responses.InvalidRequest.headers.Link = { schema: { type: 'string', pattern: '^<[^>]+>; rel="next"$' } }
  }, `operation getPet: response 400 documents a Link that does not admit \`${lifecycle}\`, which the server sends: document Link as $ref '#/components/headers/LifecycleLinkWhenDeprecated'`)
  t.doesNotThrow(
    () => editedContract((d: Spec) => void (getPet(d).responses['200'].headers.Link = { description: 'Links.' })),
    'a Link without a schema admits any',
  )

  // listPets pages (it takes `after`): its 200 carries the next page's link, then the lifecycle links
  const deprecatedList = (link: unknown) => (d: Spec) => {
    const listPets = d.paths['/pets'].get
    Object.assign(listPets, { deprecated: true, 'x-deprecated-at': '2026-11-21', 'x-sunset': '2030-12-05', 'x-successor-reason': 'none' })
    listPets.responses['410'] = { $ref: '#/components/responses/Gone' }
    listPets.responses['200'].headers = {
      ...listPets.responses['200'].headers,
      Deprecation: { $ref: '#/components/headers/Deprecation' },
      Sunset: { $ref: '#/components/headers/Sunset' },
      Link: link,
    }
  }
  const alone = '</v1/docs/>; rel="deprecation"; type="text/html"'
  refused(
    deprecatedList({ $ref: '#/components/headers/NextPageLink' }),
    `operation listPets: response 200 documents a Link that does not admit \`${alone}\` nor \`</v1/pets?limit=1&after=1>; rel="next", ${alone}\`, which the server sends: document Link as $ref '#/components/headers/LifecycleLink'`,
  )
  refused(
    deprecatedList({ schema: { type: 'string', pattern: '^</v1/docs/>' } }),
    `operation listPets: response 200 documents a Link that does not admit \`</v1/pets?limit=1&after=1>; rel="next", ${alone}\`, which the server sends: document Link as $ref '#/components/headers/LifecycleLink'`,
  )
  t.doesNotThrow(() => editedContract(deprecatedList({ $ref: '#/components/headers/LifecycleLink' }) as never), 'LifecycleLink admits both')
})

t.test('an answer documented without a body needs no media type', async (t) => {
  const bodiless = newestEdited((d) => {
    const { '200': ok, ...errors } = d.paths['/store/orders/{orderId}']!.get!.responses
    // (with the headers every answer of it carries)
    d.paths['/store/orders/{orderId}']!.get!.responses = { '204': { description: 'seen', headers: (ok as OpenAPIV3.ResponseObject).headers }, ...errors }
  })
  const app = await build(t, { contract: bodiless })
  t.equal((await call(t, app, { url: `${api}/store/orders/1` })).status, 404, 'the route is served, with the errors of the server')
  // (no request: each answer it can give, a 401 say, is one this document does not list)
  const silent = await build(t, { contract: newestEdited((d) => void (d.paths['/pets']!.get!.responses = { '204': { description: 'seen' } })) })
  await silent.ready()
  t.ok(silent.hasRoute({ method: 'GET', url: `${api}/pets` }), 'so is one whose every answer is bodiless')
})

t.test('security follows the spec: an operation it opens needs no key', async (t) => {
  const open = newestEdited((d) => {
    d.paths['/pets']!.get!.security = []
    d.paths['/pets']!.post!.security = [{}, { bearerAuth: [] }]
  })
  const app = await build(t, { contract: open })
  t.equal((await call(t, app, { url: `${api}/pets`, key: null })).status, 200)
  t.equal((await call(t, app, { method: 'POST', url: `${api}/pets`, key: null, payload: { name: 'Rex', categoryId: await aCategory(app) } })).status, 201)
  t.equal((await call(t, app, { url: `${api}/store/orders/1`, key: null })).status, 401, 'getOrder still requires its key')
})

t.test('a spec without any security requirement opens every operation', async (t) => {
  const app = await build(t, {
    contract: newestEdited((d) => {
      delete d.security
      for (const item of Object.values(d.paths)) for (const operation of Object.values(item!)) delete (operation as OpenAPIV3.OperationObject).security
    }),
  })
  t.equal((await call(t, app, { url: `${api}/pets`, key: null })).status, 200)
})

t.test('header parameters are read under the lower-case names Node gives them, required ones too', async (t) => {
  const required = newestEdited((d) => {
    ;(d.components!.parameters!.IdempotencyKey as OpenAPIV3.ParameterObject).required = true
  })
  // validators compiled from this spec, not taken from generated/ (the serializers are the same)
  const compiling = recordingCompilers(() => {}, openapiKeywords(required.document)).compilersFactory!
  const schemaController = { compilersFactory: { ...generatedCompilers().compilersFactory, buildValidator: compiling.buildValidator } }
  const app = await build(t, { contract: required, schemaController })
  const missing = await call(t, app, { method: 'POST', url: `${api}/store/orders`, payload: { petId: 1 } })
  t.equal(missing.status, 400)
  t.equal(missing.json.message, "header must have required property 'idempotency-key'")
  const sent = await call(t, app, { method: 'POST', url: `${api}/store/orders`, headers: { 'Idempotency-Key': 'k' }, payload: { petId: 1 } })
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
  // (the first route part the server compiles: the oldest version's listPets, its headers (If-None-Match))
  const [first] = servedContracts
  await t.rejects(
    async () => await app.ready(),
    new RegExp(
      `validators/get_v${first!.version[0]}_pets_headers\\.cjs is missing: generated/ does not match the contract \\(openapi\\.yaml, contract/versions/\\); run npm run generate`,
    ),
  )
  t.equal(
    moduleName('serializers', { method: 'GET', url: `${api}/store/orders/:orderId`, httpStatus: '200', contentType: 'application/json' }),
    `serializers/get_v${api.slice(2)}_store_orders_orderid_200_application_json.cjs`,
  )
})
