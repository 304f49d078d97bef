import { readFileSync } from 'node:fs'
import t from 'tap'
import { parse } from 'yaml'
import { basename, join } from 'node:path'
import { bundledSpec, specPaths } from '../src/contract/load.js'
import { generatedDir } from '../src/core/paths.js'
import type { OpenAPIV3 } from 'openapi-types'
import { pageDocument, pageTitle } from '../src/docs/page-document.js'
import type { Contract } from '../src/contract/model.js'
import { getPetFromList } from '../src/versions/changes/get-pet.js'
import { build, call, newest, servedContracts } from './helpers/app.js'
import { ledToBy } from './helpers/version-roles.js'

t.test('the spec of each version is published without a key: the YAML byte for byte, the same document as JSON', async (t) => {
  const app = await build(t)
  for (const contract of servedContracts) {
    const { paths } = contract.service
    const generated = `v${contract.version[0]}/openapi.yaml`
    const yaml = await call(t, app, { url: paths.yaml, key: null })
    t.equal(yaml.status, 200)
    t.equal(yaml.headers['content-type'], 'application/yaml; charset=utf-8')
    t.equal(
      yaml.body,
      readFileSync(join(generatedDir, generated), 'utf8'),
      `identical to ${contract.file} bundled with the shared parts (generated/${generated})`,
    )

    const json = await call(t, app, { url: paths.json, key: null })
    t.equal(json.status, 200)
    t.equal(json.headers['content-type'], 'application/json; charset=utf-8')
    t.strictSame(json.json, parse(yaml.body))
    for (const { path, method, definition } of contract.operations.values()) {
      const published = json.json.paths[path][method.toLowerCase()]
      if (definition.deprecated)
        t.match(published, { deprecated: true, 'x-sunset': definition['x-sunset'] }, `${paths.json}: ${definition.operationId}'s deprecation is published`)
    }
    const orders = json.json.paths['/store/orders']
    for (const operation of [orders.get, orders.post, json.json.paths['/store/orders/{orderId}'].get, json.json.paths['/store/orders/{orderId}'].patch]) {
      t.equal(operation['x-stability'], 'experimental', `${paths.json}: ${operation.operationId} is published experimental`)
    }
    t.equal(json.json.components.parameters.IdempotencyKey['x-stability'], 'experimental', 'and so is its Idempotency-Key')
  }
})

t.test('each version publishes its own document, byte for byte, and its own documentation page', async (t) => {
  const app = await build(t)
  for (const path of specPaths) {
    const { source } = bundledSpec(path)
    const base = `/v${parse(source).info.version.split('.')[0]}`
    t.equal(
      (await call(t, app, { url: `${base}/openapi.yaml`, key: null })).body,
      source,
      `${base}/openapi.yaml is ${basename(path)}, bundled with the shared parts`,
    )
    t.strictSame((await call(t, app, { url: `${base}/openapi.json`, key: null })).json, parse(source), `${base}/openapi.json is its document`)
    const page = await call(t, app, { url: `${base}/docs/`, key: null })
    t.equal(page.status, 200, `${base}/docs/`)
    const initializer = await call(t, app, { url: `${base}/docs/static/swagger-initializer.js`, key: null })
    t.match(
      initializer.body,
      `"urls":[{"url":"${base}/docs/json","name":"Pet Store Service — version ${base.slice(2)}"}]`,
      'the page shows its own version, named so in the definition menu',
    )
  }
})

t.test('the documentation page is served without a key and tries requests against this server', async (t) => {
  const app = await build(t)
  const { docs, json } = newest.service.paths
  for (const url of [docs, docs.replace(/\/$/, '')]) {
    const page = await call(t, app, { url, key: null })
    t.equal(page.status, 200, url)
    t.match(page.headers['content-type'], /^text\/html/)
    t.match(page.body, /swagger-ui/i)
    t.match(page.body, `<title>${newest.document.info.title} — version ${newest.version[0]}</title>`, 'titled as the spec is (info.title), with its version')
    const csp = String(page.headers['content-security-policy'])
    t.match(csp, /(^|; )default-src 'self';/, 'a Content-Security-Policy: only what the page itself serves')
    t.match(csp, /frame-ancestors 'none';/, 'and never in a frame')
    t.match(csp, /connect-src 'self';/, 'requests tried from the page go to this server only')
    t.notMatch(csp, /upgrade-insecure-requests|validator\.swagger\.io/)
    t.equal(page.headers['x-frame-options'], 'DENY')
  }
  const initializer = await call(t, app, { url: `${docs}static/swagger-initializer.js`, key: null })
  t.match(initializer.body, /"showExtensions":true/, 'x-stability and x-sunset show on the page')
  t.match(initializer.body, `"urls":[{"url":"${docs}json","name":"${pageTitle(newest)}"}]`, 'the page shows its copy of the published spec')
  t.notMatch(initializer.body, json, 'not the published one, which is linked from it')
  const asset = await call(t, app, { url: `${docs}static/swagger-ui-bundle.js`, key: null })
  t.equal(asset.status, 200)
  const missing = await call(t, app, { url: `${docs}static/no-such-file.js`, key: null })
  t.equal(missing.status, 404)
  t.equal(missing.json.code, 'not_found')
})

t.test("each page's document: titled with its version, the other versions linked, this server first, no optional parameter prefilled", async (t) => {
  const app = await build(t)
  // (the version with getPet, which the version change get-pet leads to: a required path parameter)
  const withGetPet = ledToBy(getPetFromList)
  const pages = new Map<Contract, OpenAPIV3.Document>()
  for (const contract of servedContracts) pages.set(contract, (await call(t, app, { url: `${contract.service.paths.docs}json`, key: null })).json)
  const named = (contract: Contract) => `version ${contract.version[0]}${contract === newest ? ' (the newest)' : ''}`
  for (const [contract, page] of pages) {
    const base = contract.basePath
    t.equal(page.info.title, `Pet Store Service — version ${contract.version[0]}`, `${base}: titled with its version`)
    const others = servedContracts.filter((other) => other !== contract).map((other) => `[${named(other)}](${other.basePath}/docs/)`)
    t.ok(others.length > 0, 'more than one version is served')
    t.equal(
      page.info.description,
      `**This page shows ${named(contract)}** of the API, whose published document is [${base}/openapi.yaml](${base}/openapi.yaml) ([JSON](${base}/openapi.json)). ` +
        `Other versions served here: ${others.join(', ')}.\n\n${contract.document.info.description}`,
      `${base}: which version it is, where its document is, every other version linked, oldest first; then the document's own description`,
    )
    t.strictSame(page.servers, [{ url: base, description: 'This server' }, ...contract.document.servers!], `${base}: Try it out calls this server first`)
  }
  const newestPage = pages.get(newest)!

  const parameters = (document: OpenAPIV3.Document, path: string) => document.paths[path]!.get!.parameters as OpenAPIV3.ParameterObject[]
  for (const parameter of parameters(newestPage, '/pets')) {
    t.equal(parameter.required, false)
    t.notOk('$ref' in parameter, `${parameter.name}: written out`)
    t.equal(parameter.example, undefined)
    t.equal((parameter.schema as OpenAPIV3.SchemaObject).example, undefined, `${parameter.name}: no example to fill it with`)
  }
  t.strictSame(
    parameters(newestPage, '/pets').map(({ name }) => name),
    ['limit', 'id', 'status', 'categoryId', 'after', 'If-None-Match'],
  )
  t.equal((parameters(newestPage, '/pets')[0]!.schema as OpenAPIV3.SchemaObject).default, 20, 'a default stays')
  t.strictSame(
    parameters(pages.get(withGetPet)!, '/pets/{petId}')[0],
    withGetPet.document.paths['/pets/{petId}']!.get!.parameters![0],
    'a required parameter (petId) keeps its example',
  )
  t.equal((newest.document.components!.schemas!.PetId as OpenAPIV3.SchemaObject).example, 1, 'the published document keeps its examples')
  t.strictSame((await call(t, app, { url: newest.service.paths.json, key: null })).json, newest.document, 'and is published as written')

  // a parameter written with content, not schema, keeps its content
  const document = structuredClone(newest.document)
  document.paths['/pets']!.get!.parameters = [{ name: 'filter', in: 'query', example: '{}', content: { 'application/json': { schema: { type: 'object' } } } }]
  t.strictSame(pageDocument({ ...newest, document }, [newest]).paths['/pets']!.get!.parameters, [
    { name: 'filter', in: 'query', content: { 'application/json': { schema: { type: 'object' } } } },
  ])
  t.notMatch(pageDocument(newest, [newest]).info.description, 'Other versions', 'served alone, it links no other')
})
