/**
 * The pieces of the gate and of the release that need no redocly run: the changelog's entries,
 * the lifecycle judgements, the compatible changes' lines.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { entry, inForce, withEntry } from '../scripts/changelog.js'
import { compatibleLines, release } from '../scripts/release.js'
import { judge, lifecycleBreaks, operationsOf } from '../scripts/stability-gate.js'

const noticeDays = { beta: 30, stable: 180 }
const documentOf = (paths: Record<string, unknown>) => ({ paths })

t.test('the changelog: no change, a removal, a deprecation without sunset or successor, none in force', async (t) => {
  const old = documentOf({
    '/a': { parameters: [], get: { operationId: 'getA', deprecated: true, 'x-deprecated-at': '2026-01-01', 'x-sunset': '2026-12-01' } },
    '/b': { get: { operationId: 'getB' } },
  })
  t.equal(
    entry({ version: '1.0.1', date: '2026-11-25', previous: old, current: old, compatible: [], allowed: [] }),
    '## 1.0.1 (2026-11-25)\n\nNo change a client can see.\n',
  )
  const current = documentOf({ '/c': { post: { operationId: 'postC', deprecated: true, 'x-deprecated-at': '2026-11-25' } } })
  const text = entry({ version: '1.1.0', date: '2026-11-25', previous: old, current, compatible: [], allowed: [] })
  t.match(text, '- `getA` (GET /a)\n- `getB` (GET /b)\n', 'a removal before its sunset (a new major) says no sunset')
  const later = entry({ version: '1.1.0', date: '2026-12-01', previous: old, current, compatible: [], allowed: [] })
  t.match(later, '- `getA` (GET /a), its sunset 2026-12-01 passed\n- `getB` (GET /b)\n', 'from its sunset on, it says so')
  t.match(
    entry({
      version: '2.0.0',
      date: '2026-11-25',
      previous: { info: { version: '1.1.0' }, ...old },
      current: old,
      compatible: [],
      allowed: [],
      breaking: ['  GET /b: gone'],
    }),
    /^### Breaking changes \(a new major version: 1\.1\.0 is served beside it\)\n\n- GET \/b: gone$/m,
  )
  t.match(text, '- `postC` (POST /c): deprecated on 2026-11-25; no successor')
  t.match(inForce([documentOf({})]), 'None.')
  t.match(inForce([documentOf({ '/a': old.paths['/a'], '/c': current.paths['/c'] })]), /`getA`.*\n- `postC`/, 'one without a sunset comes last')
  t.match(withEntry('# old title, no entries\n', text, [current]), /## Deprecations and sunsets in force\n\n- `postC`.*\n\n## 1\.1\.0 \(2026-11-25\)/)
  const second = {
    info: { version: '2.0.0' },
    ...documentOf({ '/d': { get: { operationId: 'getD', deprecated: true, 'x-deprecated-at': '2027-01-01', 'x-sunset': '2028-01-01' } } }),
  }
  t.match(inForce([{ info: { version: '1.1.0' }, ...current }, second]), /^- version 2: `getD` \(GET \/d\)/m, 'each served document, named by its version')
})

t.test('judgements the gate tests do not reach', async (t) => {
  t.match(judge({ level: 'beta', deprecation: { sunset: new Date('2026-01-01T00:00:00Z'), brownouts: [] } }, false, noticeDays, new Date()), {
    why: 'beta, deprecated without both x-deprecated-at and x-sunset',
  })
  const released = operationsOf(documentOf({ '/a': { get: { deprecated: true, 'x-deprecated-at': '2026-01-01', 'x-sunset': '2027-01-01' } } }))
  t.strictSame(lifecycleBreaks(released, operationsOf(documentOf({ '/a': { get: {} } }))), [], 'un-deprecated: no date is moved')
})

t.test('compatible changes, one line per place and kind', async (t) => {
  const change = (path: string, kind = 'added') => ({ path, kind, impact: 'minor' as const, verdicts: [] })
  t.strictSame(
    compatibleLines([
      change('#/paths/~1pets/get'),
      change('#/paths/~1pets/get/responses/429'),
      change('#/paths/~1pets/get/responses/200/headers/RateLimit'),
      change('#/paths/~1pets/get/responses/200/content/application~1json/schema/properties/tag'),
      change('#/paths/~1pets/get/parameters/2'),
      change('#/externalDocs'),
      { ...change('#/info'), impact: 'patch' as const },
    ]),
    ['GET /pets: added response 429, response 200 body `tag`, parameter 2, header RateLimit on response 200', 'externalDocs: added externalDocs'],
  )
  const named = {
    paths: { '/pets': { get: { parameters: [{}, { $ref: '#/components/parameters/Id' }, { name: 'after', in: 'query' }] } } },
    components: { parameters: { Id: { name: 'id', in: 'query' } } },
    tags: [{ name: 'pets' }, { description: 'no name' }],
  }
  t.strictSame(
    compatibleLines([change('#/paths/~1pets/get/parameters/2'), change('#/paths/~1pets/get/parameters/1'), change('#/tags/0'), change('#/tags/1')], named),
    ['GET /pets: added parameter `after` (query), parameter `id` (query)', 'tags: added tag pets, 1'],
    'a parameter by its name, its $ref followed; an item of a list by its name, where it has one',
  )
  t.strictSame(
    compatibleLines(
      [change('#/paths/~1pets/get/parameters/1', 'removed'), change('#/paths/~1pets/get/parameters/0', 'removed')],
      { paths: { '/pets': { get: {} } } },
      named,
    ),
    ['GET /pets: removed parameter `id` (query), parameter 0'],
    'a parameter the newer document lacks: by its name in the older; one neither names: by its place',
  )
  t.strictSame(
    compatibleLines(
      [
        change('#/paths/~1pets/get/parameters'),
        change('#/paths/~1pets/get/responses/400/headers/Sunset'),
        change('#/paths/~1pets/get/responses/400/headers/Link'),
        change('#/paths/~1pets/get/responses/401/headers/Sunset'),
        change('#/paths/~1pets/get/responses/401/headers/Link'),
        change('#/paths/~1pets/get/responses/200/headers/ETag'),
        change('#/paths/~1pets/get/parameters', 'removed'),
        change('#/paths/~1pets/get/responses/400/headers/Deprecation', 'removed'),
        change('#/paths/~1orders/get/responses/200/headers/ETag'),
        change('#/webhooks/pet.created/post/requestBody/content/application~1json/examples'),
        change('#/paths/~1pets/post/responses/201/content/application~1json/example'),
        change('#/paths/~1pets/post/responses/201/content/application~1json/schema/properties/example'),
        change('#/x-examples-order'),
        change('#/paths/~1pets/post/requestBody/content/application~1json/schema/properties/name/x-unique'),
      ],
      named,
      { paths: { '/pets': { get: { parameters: [] } } } },
    ),
    [
      'GET /pets: added parameter 0, parameter `id` (query), parameter `after` (query), header Link on responses 400, 401, header ETag on response 200',
      'GET /pets: removed parameters',
      'GET /orders: added header ETag on response 200',
      'POST /pets: added response 201 body `example`',
    ],
    'a list of parameters by each name; a header once with its answers (a Sunset, which an operation not deprecated never sends, not named); examples and their order left out (a property named example kept), and a uniqueness rule (said among the refusals)',
  )
  t.strictSame(
    compatibleLines([
      change('#/paths/~1a/get/responses/304'),
      change('#/paths/~1b/get/responses/304'),
      change('#/paths/~1b/get/responses/412'),
      change('#/paths/~1c/get/responses/304'),
    ]),
    ['GET /a, GET /c: added response 304', 'GET /b: added response 304, response 412'],
    'operations that changed alike share a line',
  )
})

t.test('a release needs a release before it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-lifecycle-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  t.strictSame(await release({ version: '1.0.0', released: dir }), { ok: false, lines: [`${dir} holds no released contract to release after`] })
})
