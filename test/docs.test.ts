import { readFileSync } from 'node:fs'
import t from 'tap'
import { parse } from 'yaml'
import { basename, join } from 'node:path'
import { bundledSpec, specPaths } from '../src/contract/load.js'
import { generatedDir } from '../src/core/paths.js'
import { build, call, newest, servedContracts } from './helpers/app.js'

t.test('the spec of each version is published without a key: the YAML byte for byte, the same document as JSON', async (t) => {
  const app = await build(t)
  for (const contract of servedContracts) {
    const { paths } = contract.service
    const generated = `v${contract.version[0]}/openapi.yaml`
    const yaml = await call(t, app, { url: paths.yaml, key: null })
    t.equal(yaml.status, 200)
    t.equal(yaml.headers['content-type'], 'application/yaml; charset=utf-8')
    t.equal(yaml.body, readFileSync(join(generatedDir, generated), 'utf8'), `identical to ${contract.file} bundled with the shared parts (generated/${generated})`)

    const json = await call(t, app, { url: paths.json, key: null })
    t.equal(json.status, 200)
    t.equal(json.headers['content-type'], 'application/json; charset=utf-8')
    t.strictSame(json.json, parse(yaml.body))
    for (const { path, method, definition } of contract.operations.values()) {
      const published = json.json.paths[path][method.toLowerCase()]
      if (definition.deprecated) t.match(published, { deprecated: true, 'x-sunset': definition['x-sunset'] }, `${paths.json}: ${definition.operationId}'s deprecation is published`)
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
    t.equal((await call(t, app, { url: `${base}/openapi.yaml`, key: null })).body, source, `${base}/openapi.yaml is ${basename(path)}, bundled with the shared parts`)
    t.strictSame((await call(t, app, { url: `${base}/openapi.json`, key: null })).json, parse(source), `${base}/openapi.json is its document`)
    const page = await call(t, app, { url: `${base}/docs/`, key: null })
    t.equal(page.status, 200, `${base}/docs/`)
    const initializer = await call(t, app, { url: `${base}/docs/static/swagger-initializer.js`, key: null })
    t.match(initializer.body, `"urls":[{"url":"${base}/openapi.json"`, 'the page shows its own version')
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
    t.match(page.body, `<title>${newest.document.info.title}</title>`, 'titled as the spec is (info.title)')
    const csp = String(page.headers['content-security-policy'])
    t.match(csp, /(^|; )default-src 'self';/, 'a Content-Security-Policy: only what the page itself serves')
    t.match(csp, /frame-ancestors 'none';/, 'and never in a frame')
    t.match(csp, /connect-src 'self';/, 'requests tried from the page go to this server only')
    t.notMatch(csp, /upgrade-insecure-requests|validator\.swagger\.io/)
    t.equal(page.headers['x-frame-options'], 'DENY')
  }
  const initializer = await call(t, app, { url: `${docs}static/swagger-initializer.js`, key: null })
  t.match(initializer.body, /"showExtensions":true/, 'x-stability and x-sunset show on the page')
  t.match(initializer.body, `"urls":[{"url":"${json}","name":"${newest.document.info.title}"}]`, 'the page shows the published spec')
  const asset = await call(t, app, { url: `${docs}static/swagger-ui-bundle.js`, key: null })
  t.equal(asset.status, 200)
  const missing = await call(t, app, { url: `${docs}static/no-such-file.js`, key: null })
  t.equal(missing.status, 404)
  t.equal(missing.json.code, 'not_found')
})
