/**
 * CORS: none by default; for the origins of CORS_ORIGINS, preflights of the operations are
 * answered without a key and the answers readable by the page, in a real browser too.
 */
import { existsSync } from 'node:fs'
import { createServer } from 'node:http'
import { chromium } from 'playwright-core'
import t, { type Test } from 'tap'
import { allowedRequestHeaders, documentedHeaders } from '../src/http/cors.js'
import { newestSpecPath } from '../src/contract/load.js'
import { readContract } from '../src/contract/model.js'
import { aCategory, api, build, call, newest, servedContracts, testKey } from './helpers/app.js'
import { editedContract } from './helpers/spec.js'

const allowed = 'https://app.example.com'
const preflight = (origin: string, method: string, url = `${api}/pets`) => ({
  method: 'OPTIONS' as const,
  url,
  key: null,
  headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,content-type' },
})

t.test('no CORS_ORIGINS: no CORS at all; OPTIONS is a 405 as before', async (t) => {
  const app = await build(t)
  const response = await call(t, app, preflight(allowed, 'GET'))
  t.equal(response.status, 405)
  t.equal(response.headers.allow, 'GET, HEAD, POST')
  const get = await call(t, app, { url: `${api}/pets`, headers: { origin: allowed } })
  t.equal(get.status, 200)
  t.notOk(
    Object.keys(get.headers).some((name) => name.startsWith('access-control-') || name === 'vary'),
    'no CORS header',
  )
})

t.test('an allowed origin: the preflight is answered 204 without a key; the answers name the origin and expose the documented headers', async (t) => {
  const app = await build(t, { CORS_ORIGINS: [allowed, 'http://localhost:5173'] })
  for (const [url, method, methods] of [
    [`${api}/pets`, 'POST', 'GET, HEAD, POST'],
    [`${api}/store/orders/7`, 'PATCH', 'GET, HEAD, PATCH'],
  ] as const) {
    const response = await call(t, app, preflight(allowed, method, url))
    t.equal(response.status, 204, `${method} ${url}`)
    t.match(response.headers, {
      'access-control-allow-origin': allowed,
      'access-control-allow-methods': methods,
      'access-control-allow-headers': 'Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match',
      'access-control-max-age': String(newest.service.limits.preflightMaxAgeSeconds),
      vary: 'Origin',
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
    })
    t.notOk('access-control-allow-credentials' in response.headers, 'no cookies: credentials are not allowed')
    t.equal(response.body, '')
  }

  const created = await call(t, app, {
    method: 'POST',
    url: `${api}/pets`,
    payload: { name: 'Rex', categoryId: await aCategory(app) },
    headers: { origin: allowed },
  })
  t.equal(created.status, 201)
  t.equal(created.headers['access-control-allow-origin'], allowed)
  const exposed = String(created.headers['access-control-expose-headers']).split(', ')
  for (const name of ['Location', 'Link', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'WWW-Authenticate']) {
    t.ok(exposed.includes(name), `${name} is readable by the page`)
  }
  // (Deprecation and Sunset among them, while a served version documents them)
  t.strictSame(
    servedContracts.flatMap(documentedHeaders).filter((name) => !exposed.includes(name)),
    [],
    'so is every header a served document names',
  )
  t.notOk(exposed.includes('Cache-Control'), 'safelisted headers are not listed')
  const refused = await call(t, app, { url: `${api}/pets`, key: 'wrong', headers: { origin: allowed } })
  t.equal(refused.status, 401)
  t.equal(refused.headers['access-control-allow-origin'], allowed, 'a 401 is readable by the page too')
})

t.test('an origin not allowed, a method not served, a path not in the spec, a bare OPTIONS: the 404 or 405 they were, without CORS headers', async (t) => {
  const app = await build(t, { CORS_ORIGINS: [allowed] })
  const cases: [Parameters<typeof call>[2], number][] = [
    [preflight('https://evil.example.com', 'GET'), 405],
    [preflight(allowed, 'DELETE'), 405],
    [preflight(allowed, 'POST', `${api}/store/orders/7`), 405],
    [preflight(allowed, 'GET', `${api}/nowhere`), 404],
    [preflight(allowed, 'POST', newest.service.paths.json), 404],
    [preflight('https://evil.example.com', 'GET', newest.service.paths.json), 404],
    [{ method: 'OPTIONS', url: `${api}/pets`, key: null }, 405],
    [{ method: 'OPTIONS', url: `${api}/pets`, key: null, headers: { origin: allowed } }, 405],
  ]
  for (const [request, status] of cases) {
    const response = await call(t, app, request)
    t.equal(response.status, status, `${JSON.stringify(request.headers ?? {})} ${request.url}`)
    t.notOk('access-control-allow-origin' in response.headers)
  }
  const get = await call(t, app, { url: `${api}/pets`, headers: { origin: 'https://evil.example.com' } })
  t.equal(get.status, 200, 'a request from another origin is served (the browser, not the server, keeps the answer from the page)')
  t.notOk('access-control-allow-origin' in get.headers)
  t.equal(get.headers.vary, 'Origin', 'and caches are told the answer depends on Origin')
  const noOrigin = await call(t, app, { url: `${api}/pets` })
  t.equal(noOrigin.status, 200, 'a request without Origin (no browser page) is served')
  t.notOk('access-control-allow-origin' in noOrigin.headers, 'without CORS headers')
  t.equal(noOrigin.headers.vary, 'Origin', 'and caches are told the answer depends on Origin')
})

t.test('an OPTIONS request with a body that is no preflight is refused before its body is read', async (t) => {
  const app = await build(t, { CORS_ORIGINS: [allowed] })
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  const response = await fetch(`${address}${api}/pets`, {
    method: 'OPTIONS',
    headers: { 'content-type': 'text/plain' },
    body: 'x'.repeat(100),
    signal: AbortSignal.timeout(10_000),
  })
  t.equal(response.status, 405, 'not a 415: no body parser is reached')
  t.equal(((await response.json()) as { code: string }).code, 'method_not_allowed')
})

t.test('the published spec is readable by the allowed origins, and only by them', async (t) => {
  const spec = (app: Awaited<ReturnType<typeof build>>, path: string, origin: string) => app.inject({ url: path, headers: { origin } })
  const app = await build(t, { CORS_ORIGINS: [allowed] })
  for (const path of servedContracts.flatMap(({ service }) => [service.paths.json, service.paths.yaml])) {
    const read = await spec(app, path, allowed)
    t.equal(read.statusCode, 200, path)
    t.equal(read.headers['access-control-allow-origin'], allowed, `${path}: the allowed origin may read it`)
    t.equal(read.headers.vary, 'Origin')
    t.notOk('access-control-allow-origin' in (await spec(app, path, 'https://evil.example.com')).headers, `${path}: another origin may not`)
    const asked = await call(t, app, {
      ...preflight(allowed, 'GET', path),
      headers: { origin: allowed, 'access-control-request-method': 'GET', 'access-control-request-headers': 'cache-control' },
    })
    t.equal(asked.status, 204, `${path}: a preflight (a tool that sends a header of its own) is answered`)
    t.equal(asked.headers['access-control-allow-methods'], 'GET, HEAD')
  }
  const closed = await build(t)
  t.notOk('access-control-allow-origin' in (await spec(closed, newest.service.paths.json, allowed)).headers, 'without CORS_ORIGINS, no origin may')
})

t.test("the request headers a page may send: the key, the body's type, and the header parameters of the spec", async (t) => {
  t.strictSame(allowedRequestHeaders(newest), ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-Match', 'If-None-Match'])
  const traced = editedContract((d) => {
    d.paths['/pets']!.parameters = [{ name: 'X-Trace-Id', in: 'header', schema: { type: 'string' } }]
  }, newestSpecPath)
  t.strictSame(
    allowedRequestHeaders(traced),
    ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-Match', 'If-None-Match', 'X-Trace-Id'],
    'one more in the YAML, one more allowed',
  )
})

t.test('CORS_ORIGINS=*: any origin, named as *', async (t) => {
  const app = await build(t, { CORS_ORIGINS: ['*'] })
  const response = await call(t, app, preflight('https://anyone.example.org', 'GET'))
  t.equal(response.status, 204)
  t.equal(response.headers['access-control-allow-origin'], '*')
})

t.test('the exposed headers are those the spec documents', async (t) => {
  const names = documentedHeaders(newest)
  t.ok(names.includes('RateLimit') && names.includes('Location'))
  t.notOk(names.some((name) => /^(cache-control|vary|access-control-.*)$/i.test(name)))
  // (read as a document the server would refuse, the lifecycle headers of deprecated operations gone: the rule alone)
  const d = structuredClone(newest.document)
  for (const item of Object.values(d.paths))
    for (const operation of [item!.get, item!.post, item!.patch, item!.delete])
      if (operation) for (const response of Object.values(operation.responses)) delete (response as { headers?: unknown }).headers
  for (const response of Object.values(d.components!.responses!)) delete (response as { headers?: unknown }).headers
  t.strictSame(documentedHeaders(readContract(d).contract), [], 'a response without headers has none to expose')
})

/** Debian's Chromium (apt-get install chromium); CI installs it and sets REQUIRE_BROWSER=1. */
const executablePath = '/usr/bin/chromium'
const browserMissing = existsSync(executablePath) || process.env.REQUIRE_BROWSER === '1' ? false : `no browser at ${executablePath}: skipped`

/** A page on its own origin (another port of 127.0.0.1), closed when the test ends. */
async function pageServer(t: Test): Promise<string> {
  const server = createServer((_request, response) => response.end('<!doctype html><title>client</title>'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}

t.test(
  'in a real browser: a page of an allowed origin creates and lists pets with its key, reads RateLimit, places an order with an Idempotency-Key, reads the spec; another origin cannot',
  { skip: browserMissing },
  async (t) => {
    const [good, bad] = [await pageServer(t), await pageServer(t)]
    const app = await build(t, { CORS_ORIGINS: [good] })
    const categoryId = await aCategory(app)
    const origin = await app.listen({ host: '127.0.0.1', port: 0 })
    const { basePath, service } = newest
    const browser = await chromium.launch({ executablePath, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] })
    t.teardown(() => browser.close())

    const fromPage = async (pageOrigin: string) => {
      const page = await browser.newPage()
      await page.goto(pageOrigin)
      return page.evaluate(
        async ({ api, server, key, origin, categoryId, paths }) => {
          try {
            const created = await fetch(`${api}/pets`, {
              method: 'POST',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ name: 'Rex', categoryId }),
            })
            const listed = await fetch(`${api}/pets`, { headers: { authorization: `Bearer ${key}` } })
            const pets = (await listed.json()) as { id: number }[]
            // the same order twice (no function of its own: this code runs in the page as written,
            // and the TypeScript loader would name it with a helper the page does not have)
            const order: [string, RequestInit] = [
              `${api}/store/orders`,
              {
                method: 'POST',
                headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `page-${origin}` },
                body: JSON.stringify({ petId: pets.at(-1)!.id }),
              },
            ]
            const [placed, retried] = [await fetch(...order), await fetch(...order)]
            const [json, yaml] = [await fetch(`${server}${paths.json}`), await fetch(`${server}${paths.yaml}`)]
            return {
              status: [created.status, listed.status, placed.status, retried.status],
              location: created.headers.get('location'),
              rateLimit: listed.headers.get('ratelimit'),
              pets: pets.length,
              orders: [((await placed.json()) as { id: number }).id, ((await retried.json()) as { id: number }).id],
              spec: [((await json.json()) as { openapi: string }).openapi, (await yaml.text()).split('\n').find((line) => !line.startsWith('#'))],
            }
          } catch (error) {
            return { error: String(error) }
          }
        },
        { api: `${origin}${basePath}`, server: origin, key: testKey, origin: pageOrigin, categoryId, paths: service.paths },
      )
    }
    const allowedPage = await fromPage(good)
    t.match(
      allowedPage,
      {
        status: [201, 200, 201, 201],
        location: `${newest.urlOf('listPets')}?id=1`,
        rateLimit: /^"key";r=\d+;t=\d+$/,
        pets: 1,
        orders: [1, 1],
        spec: ['3.1.0', 'openapi: 3.1.0'],
      },
      'the retry with the Idempotency-Key gets the first answer: one order',
    )
    const otherPage = await fromPage(bad)
    t.match(otherPage, { error: /TypeError: Failed to fetch/ }, 'the browser keeps the answer from a page of another origin')
    const page = await browser.newPage()
    await page.goto(bad)
    const spec = await page.evaluate((url) => fetch(url).then((response) => response.status, String), `${origin}${service.paths.json}`)
    t.match(spec, /TypeError: Failed to fetch/, 'and the spec')
  },
)
