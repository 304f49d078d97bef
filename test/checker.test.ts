/**
 * The tests' contract checker, tested: each way an answer or a delivery can break the contract is
 * reported, so the checker cannot pass everything in silence; it judges by the document the app
 * serves, of the version the answer was made through; it compiles the documents' schemas as JSON
 * Schema 2020-12 in strict mode. Its answers are the newest version's.
 */
import type { OpenAPIV3 } from 'openapi-types'
import t, { type Test } from 'tap'
import { contractOf, newestSpecPath } from '../src/contract/load.js'
import { deref } from '../src/contract/pointer.js'
import { newSecret, signedHeaders } from '../src/webhooks/signing.js'
import { api, build, call, newest } from './helpers/app.js'
import { compileEverySchema, contractViolations, deliveryViolations, type ObservedDelivery, type ObservedResponse } from './helpers/contract.js'
import { editedContract } from './helpers/spec.js'

const { document } = newest
/** The newest version's document after `edit`. */
const edited = (edit: (document: OpenAPIV3.Document) => void) => editedContract(edit, newestSpecPath)
const webhooksOf = (d: OpenAPIV3.Document) => (d as unknown as { webhooks: Record<string, { post: OpenAPIV3.OperationObject }> }).webhooks

/** listPets' 200, as the server answers it: every header it documents, right. */
const listed: ObservedResponse = {
  method: 'GET',
  url: `${api}/pets`,
  status: 200,
  body: '[{"id":1,"name":"Rex","category":{"id":1,"name":"Bird"},"status":"available"}]',
  headers: {
    'content-type': 'application/json; charset=utf-8',
    'x-content-type-options': 'nosniff',
    'cache-control': 'private, no-cache',
    etag: '"v2-Qpd4jD7ADYhlAl7-r2BHgFnzeus"',
    'ratelimit-policy': '"key";q=1000;w=60',
    ratelimit: '"key";r=998;t=42',
    link: `<${api}/pets?limit=20&after=20>; rel="next"`,
  },
}

/** listPets' 503 (the database is away), headers right. */
const { link: _, etag: _etag, ...listedRest } = listed.headers
const refusedHeaders = { ...listedRest, 'cache-control': 'no-store' }
const refused = {
  method: 'GET',
  url: `${api}/pets`,
  status: 503,
  headers: { ...refusedHeaders, 'retry-after': '5' },
  body: '{"code":"unavailable","message":"later","status":503}',
}

/** `found` holds exactly what `expected` says, in order. */
function reports(t: Test, found: string[], expected: (string | RegExp)[], what: string) {
  t.equal(found.length, expected.length, `${what}: ${found.join('; ')}`)
  t.match(found, expected, what)
}

/** Without its Cache-Control header. */
const withoutCacheControl = (d: OpenAPIV3.Document) =>
  void delete (d.paths['/pets']!.get!.responses['200'] as OpenAPIV3.ResponseObject).headers!['Cache-Control']

t.test('an answer that breaks the contract is reported, each way it can', async (t) => {
  t.strictSame(contractViolations(listed), [], 'one that keeps it: nothing')
  const cases: [string, Partial<ObservedResponse>, (string | RegExp)[]][] = [
    ['an undocumented status', { status: 418 }, ['listPets does not document status 418']],
    ['a body its schema refuses', { body: '[{"id":"one","name":"Rex","category":{"id":1},"status":"available"}]' }, ['body/0/id must be integer']],
    ['a body that is not JSON', { body: '<html>' }, ['body is not JSON: <html>']],
    ['a header value its schema refuses', { headers: { ...listed.headers, 'cache-control': 'public' } }, [/^header Cache-Control "public" must/]],
    ['an undocumented header', { headers: { ...listed.headers, 'x-powered-by': 'Express' } }, ['header x-powered-by is not documented']],
    ['another media type', { headers: { ...listed.headers, 'content-type': 'text/html' } }, ['media type text/html is not one of application/json']],
  ]
  for (const [what, change, expected] of cases) reports(t, contractViolations({ ...listed, ...change }), expected, what)
  t.strictSame(contractViolations(refused), [], 'an error that keeps it: nothing')
  const misnumbered = { ...refused, body: '{"code":"unavailable","message":"later","status":500}' }
  reports(t, contractViolations(misnumbered), ['Error.status 500 differs from the HTTP status 503'], "an Error whose status is not the answer's")
  const emptied = { ...refused, method: 'HEAD', body: '' }
  t.strictSame(contractViolations(emptied), [], 'HEAD, as GET without the body')
  const bodied = { ...emptied, method: 'GET' }
  reports(t, contractViolations(bodied), ['body is not JSON: '], 'GET without the body')
  const outside = { method: 'GET', url: `${api}/nowhere`, status: 404, headers: {}, body: '{"error":"no"}' }
  const missing = ['code', 'message', 'status'].map((name) => `body must have required property '${name}'`)
  reports(
    t,
    contractViolations(outside),
    [...missing, 'Error.status undefined differs from the HTTP status 404'],
    'outside the operations, an error still has the Error shape',
  )
})

t.test('the contract check reads response headers against their schemas: patterns, enums, types, the required ones present', async (t) => {
  const { 'cache-control': _cacheControl, ...headers } = listed.headers
  const violations = contractViolations({
    ...listed,
    headers: { ...headers, 'x-content-type-options': 'sniff', link: `<${api}/store/orders?after=2>; rel="next"`, ratelimit: '"key";r=lots;t=42' },
  })
  t.equal(violations.length, 4, 'a wrong Link, a wrong enum value, a missing header, a wrong pattern: each named')
  t.match(violations, [
    new RegExp(`^header Link "<${api}/store/orders\\?after=2>.*" must match pattern "\\^<${api}/pets`),
    'header X-Content-Type-Options "sniff" must be equal to one of the allowed values',
    'header Cache-Control is documented as required but missing',
    /^header RateLimit ".*r=lots;t=42" must match pattern/,
  ])
  t.strictSame(contractViolations(refused), [], 'Retry-After, an integer in its text')
  t.strictSame(contractViolations({ ...refused, headers: { ...refused.headers, 'retry-after': 'soon' } }), ['header Retry-After "soon" must be integer'])
  t.strictSame(contractViolations({ ...refused, headers: { ...refused.headers, 'retry-after': '0' } }), ['header Retry-After "0" must be >= 1'])
})

t.test('answers are judged by the document the app serves, not by the one in the repository', async (t) => {
  const uncached = edited(withoutCacheControl)
  t.strictSame(contractViolations(listed, uncached), ['header cache-control is not documented'], 'the edited document does not document it')
  t.strictSame(contractViolations(listed), [], `${newest.file} does`)

  const app = await build(t, { contract: uncached })
  const seen: unknown[] = []
  const recorder = { strictSame: (found: unknown) => seen.push(found) } as unknown as Test
  t.equal((await call(recorder, app, { url: `${api}/pets` })).status, 200)
  t.strictSame(seen, [['header cache-control is not documented']], 'call() checks by app.contracts')
})

t.test('of the documents served side by side, an answer is judged by that of the version it was made through', async (t) => {
  // a version 9 beside the newest, which documents no Cache-Control on listPets' 200
  const copy = structuredClone(edited(withoutCacheControl).document)
  copy.info.version = '9.0.0'
  for (const server of copy.servers!) server.url = server.url.replace(/\/v[0-9]+$/, '/v9')
  const nine = contractOf(copy, { file: 'openapi-v9.yaml' })
  t.strictSame(contractViolations(listed, [newest, nine]), [], `under ${api}: ${newest.file}`)
  const underNine = { ...listed, url: '/v9/pets', headers: { ...refusedHeaders, etag: listed.headers.etag! } }
  t.strictSame(contractViolations(underNine, [newest, nine]), ['header cache-control is not documented'], 'under /v9: openapi-v9.yaml')
  const outside = { ...underNine, url: '/nowhere', status: 404, body: '{"code":"not_found","message":"no","status":404}', headers: {} }
  t.strictSame(contractViolations(outside, [newest, nine]), [], 'under none: the newest, whose Error it is')
})

t.test('schemas are JSON Schema 2020-12 in strict mode: OpenAPI words and x- extensions declared, anything else refused', async (t) => {
  t.ok(compileEverySchema().length > 200, 'every schema of every served document compiles')
  const refusing = edited((d) => void Object.assign(d.components!.schemas!.Pet!, { maxlength: 5 }))
  t.throws(() => contractViolations(listed, refusing), /strict mode: unknown keyword: "maxlength"/, 'a keyword of neither, misspelt')
  const extended = edited((d) => void Object.assign(d.components!.schemas!.Pet!, { 'x-internal': false, externalDocs: { url: 'https://example.com' } }))
  t.strictSame(contractViolations(listed, extended), [], 'an x- extension of this document and externalDocs are words of its schemas')
  const prefixed = edited(
    (d) =>
      void ((d.paths['/pets']!.get!.responses['200'] as OpenAPIV3.ResponseObject).content!['application/json']!.schema = {
        type: 'array',
        prefixItems: [{ type: 'string' }],
        minItems: 1,
        items: false,
      } as never),
  )
  t.match(contractViolations(listed, prefixed), ['body/0 must be string'], 'prefixItems, a 2020-12 keyword, is applied')
})

const entry = webhooksOf(document)['pet.created']!.post
const event = deref<OpenAPIV3.ExampleObject>(
  document,
  Object.values((entry.requestBody as OpenAPIV3.RequestBodyObject).content['application/json']!.examples!)[0]!,
).value as { id: string }
const body = JSON.stringify(event)
const signed = signedHeaders(event.id, body, [newSecret()])
const delivery: ObservedDelivery = { headers: { 'content-type': 'application/json', ...signed }, body }

t.test('a delivery that breaks its webhooks entry is reported, headers included', async (t) => {
  t.strictSame(deliveryViolations(delivery), [], 'the example of pet.created, signed: nothing')
  const { 'webhook-signature': _signature, ...unsigned } = delivery.headers
  const cases: [string, Partial<ObservedDelivery>, (string | RegExp)[]][] = [
    ['a missing header', { headers: unsigned }, ['header webhook-signature is documented as required but missing']],
    ['a malformed header', { headers: { ...delivery.headers, 'webhook-timestamp': 'soon' } }, [/^header webhook-timestamp "soon" must match pattern/]],
    ['a webhook-id that is no event id', { headers: { ...delivery.headers, 'webhook-id': 'msg_1' } }, [/^header webhook-id "msg_1" must match pattern/]],
    [
      'two signatures too many',
      { headers: { ...delivery.headers, 'webhook-signature': Array(3).fill(signed['webhook-signature']).join(' ') } },
      [/^header webhook-signature .* must match pattern/],
    ],
    ['another media type', { headers: { ...delivery.headers, 'content-type': 'text/plain' } }, ['media type text/plain is not one of application/json']],
    ['a body its schema refuses', { body: JSON.stringify({ ...event, sequence: 'first' }) }, ['event/sequence must be integer']],
    [
      'an event the document lacks',
      { body: JSON.stringify({ ...event, type: 'pet.adopted' }) },
      ['type "pet.adopted" is not an event of the document\'s webhooks'],
    ],
    ['a body that is not JSON', { body: 'evt_41' }, ['event is not JSON: evt_41']],
  ]
  for (const [what, change, expected] of cases) reports(t, deliveryViolations({ ...delivery, ...change }), expected, what)
})

t.test('deliveries are judged by the webhooks of the document given; of several, by the one they keep, or are nearest', async (t) => {
  const tenant = { name: 'x-tenant', in: 'header', required: true, schema: { type: 'string', pattern: '^[a-z]+$' } } as const
  const tenanted = edited((d) => void webhooksOf(d)['pet.created']!.post.parameters!.push(tenant))
  t.strictSame(deliveryViolations(delivery, tenanted), ['header x-tenant is documented as required but missing'], 'a header its entry declares')
  t.match(deliveryViolations({ ...delivery, headers: { ...delivery.headers, 'x-tenant': 'Shop 1' } }, tenanted), [
    /^header x-tenant "Shop 1" must match pattern/,
  ])
  t.strictSame(deliveryViolations({ ...delivery, headers: { ...delivery.headers, 'x-tenant': 'shop' } }, tenanted), [])
  // a delivery does not say its subscription's version: it keeps the contract if it keeps one
  t.strictSame(deliveryViolations(delivery, [tenanted, newest]), [], 'without x-tenant: the one that does not ask for it')
  const unsequenced = { ...delivery, body: JSON.stringify({ ...event, sequence: 'first' }) }
  t.strictSame(deliveryViolations(unsequenced, [tenanted, newest]), ['event/sequence must be integer'], 'what breaks the nearest')
})
