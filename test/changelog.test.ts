/**
 * The changelog says what is true for a client, over the released documents of
 * contract/released/ (each entry as `npm run release -- VERSION --correct` writes it): a new
 * refusal only where a request the release before took may be refused now, lifecycle headers
 * only for the operations that send them, a narrowed value and a new uniqueness rule said in
 * words, and a change met in many places said once.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parse } from 'yaml'
import { acceptedFile, readAccepted, releasedDir } from '../scripts/check-breaking.js'
import { releaseEntry } from '../scripts/release.js'
import { narrowedValues, newUniqueness, onlyThroughNewRequests } from '../scripts/refusals.js'
import { saidOnce } from '../scripts/said-once.js'
import { bundledSpec } from '../src/contract/load.js'
import { Problems } from '../src/contract/problems.js'
import { ignorable, readUniqueness } from '../src/contract/uniqueness.js'
import { specPath } from '../src/core/paths.js'

t.jobs = 2
t.setTimeout(900_000)

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a parsed contract, which each case edits freely
type Spec = any
const released = (version: string): Spec => parse(readFileSync(join(releasedDir, `${version}.yaml`), 'utf8'))
const accepted = readAccepted(acceptedFile)
/** The entry of `current` against `previous`, as a correction writes it (the newest document states x-unique). */
const entryOf = (previous: Spec, current: Spec, stated: Spec = bundledSpec(specPath).document) =>
  releaseEntry({ version: current.info.version, date: '2026-11-28', previous, current, allowed: [], accepted, stated })
/** The lines of one section of an entry. */
const section = (entry: string, heading: string) => {
  const start = entry.indexOf(`### ${heading}`)
  if (start === -1) return []
  const end = entry.indexOf('\n### ', start + 1)
  return entry
    .slice(start, end === -1 ? undefined : end)
    .split('\n')
    .filter((line) => line.startsWith('- '))
}
const refusals = (entry: string) => section(entry, 'New refusals')
const compatible = (entry: string) => section(entry, 'Compatible changes')

t.test('a 412 answered only to an If-Match new in the same release is no new refusal; one an If-Match taken before reaches is', async (t) => {
  for (const [before, after] of [
    ['1.2.0', '1.3.0'],
    ['2.0.0', '2.1.0'],
  ] as const) {
    const entry = await entryOf(released(before), released(after))
    t.notOk(
      refusals(entry).some((line) => line.includes('412')),
      `${after}: no refusal 412`,
    )
    t.ok(
      compatible(entry).some((line) => /^- PATCH \/store\/orders\/\{orderId\}: added parameter `If-Match` \(header\), response 412/.test(line)),
      `${after}: the 412 said with the If-Match it answers`,
    )
  }
  // the release before took If-Match already (and answered as if without it): its 412 now refuses what it took
  const previous = released('2.0.0')
  previous.paths['/store/orders/{orderId}'].patch.parameters.push({ $ref: '#/components/parameters/IfMatch' })
  previous.components.parameters.IfMatch = released('2.1.0').components.parameters.IfMatch
  const entry = await entryOf(previous, released('2.1.0'))
  t.match(refusals(entry), [/^- PATCH \/store\/orders\/\{orderId\}, response 412: Response 412 was added/])
  const added = (status: string) => ({
    path: `#/paths/~1pets/post/responses/${status}`,
    kind: 'added',
    impact: 'major' as const,
    verdicts: [{ ruleId: 'response-added', impact: 'major' as const, message: '', location: { pointer: '' } }],
  })
  t.notOk(onlyThroughNewRequests(added('422'), released('2.0.0')), 'a 422 needs no header: a refusal')
  t.notOk(onlyThroughNewRequests(added('412'), { paths: {} }), 'an operation the release before lacked: its own addition')
  t.notOk(onlyThroughNewRequests({ ...added('412'), verdicts: [] }, released('2.0.0')), 'no refusal to judge')
})

t.test('lifecycle headers of shared answers: named for a deprecated operation alone, never on a 408', async (t) => {
  const entry = await entryOf(released('2.0.0'), released('2.1.0'))
  t.notMatch(entry, /Deprecation|Sunset/, 'no operation of 2.1.0 is deprecated: none sends them')
  const older = await entryOf(released('1.2.0'), released('1.3.0'))
  t.notMatch(older, /Deprecation|Sunset|API-Stability/, 'getPet (deprecated, stable): its 408 is answered before it is known, and it sends no API-Stability')
  const current = released('2.1.0')
  Object.assign(current.paths['/categories'].get, { deprecated: true, 'x-deprecated-at': '2026-11-28', 'x-sunset': '2027-06-01' })
  const deprecated = await entryOf(released('2.0.0'), current)
  const lines = compatible(deprecated).filter((line) => line.includes('Deprecation'))
  t.equal(lines.length, 1)
  t.match(
    lines[0],
    /^- GET \/categories: .*headers Deprecation, Link, Sunset on responses 400, 401, 403, 429, 500, 503$/,
    'its own operation alone, but its 408',
  )
})

t.test("2.1.0's tightened CategoryName and its uniqueness rule: new refusals, in words", async (t) => {
  const entry = await entryOf(released('2.0.0'), released('2.1.0'))
  const [narrowed, unique, ...rest] = refusals(entry)
  t.strictSame(rest, [])
  t.match(narrowed, /^- POST \/categories, request body `name`: a `name` with a space, a no-break space or an ideographic space at either end; /)
  t.match(
    narrowed,
    /a zero-width space \(U\+200B\).* or a Hangul filler \(U\+3164\) anywhere; a variation selector \(U\+FE0F\) at the start is now refused \(400\)$/,
  )
  t.notMatch(narrowed, /a tab|a line separator|a next line/, 'what 2.0.0 refused already is not new')
  t.match(
    unique,
    /^- POST \/categories, request body `name`: a `name` that differs from one taken only in case folded fully .*, accents written composed or decomposed .*, compatibility forms .*, characters that draw nothing .* or runs of white space .* is the same `name` now: refused \(409\)$/,
  )
  t.notMatch(unique, /upper and lower case/, '2.0.0 ignored case already')
  t.notMatch(section(entry, 'Changes a diff rates incompatible'), /CategoryName|names now refused/, 'not filed as breaking no client')

  const unstated = await entryOf(released('2.0.0'), released('2.1.0'), released('2.1.0'))
  t.equal(refusals(unstated).length, 1, 'documents that state no x-unique: no uniqueness rule to compare')
  const [previous, current] = [released('2.0.0'), released('2.1.0')]
  previous.components.schemas.CategoryName['x-unique'] = { case: '2.0.0' }
  current.components.schemas.CategoryName['x-unique'] = { case: '2.0.0' }
  t.equal(refusals(await entryOf(previous, current)).length, 1, "each document's own x-unique first: the same rule, no refusal")
})

t.test('x-unique: each difference a known word with a release; the rest refused by the contract model', async (t) => {
  const problems = new Problems()
  const document = {
    components: {
      schemas: {
        A: { type: 'string', 'x-unique': { case: '2.0.0', colour: '2.0.0', accents: 'soon' } },
        B: { type: 'string', 'x-unique': ['case'] },
        C: { type: 'string' },
      },
    },
  }
  const rules = readUniqueness(document as never, problems)
  t.strictSame(rules.get('A'), [{ difference: 'case', since: [2, 0, 0] }])
  t.strictSame(rules.has('C'), false)
  t.strictSame(
    problems.found.map(({ where, message }) => `${where}: ${message}`),
    [
      `schema A: x-unique names colour, which is none of ${Object.keys(ignorable).join(', ')}`,
      'schema A: x-unique: accents holds from "soon", which is not a release MAJOR.MINOR.PATCH',
      'schema B: x-unique maps each difference its values are compared without to the release it holds from (case: 2.0.0)',
    ],
  )
})

t.test('a change met in many places: one line naming them', async (t) => {
  const entry = await entryOf(released('1.2.0'), released('2.0.0'))
  const breaking = section(entry, 'Breaking changes')
  const category = breaking.filter((line) => line.includes('categoryId'))
  t.equal(category.length, 1, '`categoryId` became `category`: one change')
  t.match(
    category[0],
    /^- GET \/pets, response 200 body `category`; POST \/pets, response 201 body `category`; event pet\.created, payload `data\.category`; event pet\.status_changed, payload `data\.category`: Property `categoryId` was renamed to `category`; Properties are no longer required: `categoryId`; `format` of `category` was removed; Upper bound of `category` was removed; Lower bound of `category` was removed; Type of `category` widened from 'integer' to 'object'\./,
  )
  t.equal(breaking.length, 12, 'of 35 differences, 12 changes')
  t.strictSame(
    saidOnce([
      {
        where: 'GET /a, response 200 body `x`',
        message: 'Property `x` was removed.',
        rule: 'property-removed',
        pointer: '#/components/schemas/A/properties/x',
      },
      {
        where: 'event e, payload `data.x`',
        message: 'Property `x` of `data` was removed.',
        rule: 'property-removed',
        pointer: '#/components/schemas/A/properties/x',
      },
      {
        where: 'event e, payload `data.x`',
        message: 'Property `x` of `data` was removed.',
        rule: 'property-removed',
        pointer: '#/components/schemas/A/properties/x',
      },
      {
        where: 'GET /b, response 200 body `y`',
        message: 'Property `y` was renamed to `z`.',
        rule: 'property-removed',
        pointer: '#/components/schemas/B/properties/z',
      },
      { where: 'GET /c, response 200 body `z`', message: 'Type of `z` changed.', rule: 'schema-type-changed', pointer: '#/components/schemas/C/type' },
      {
        where: 'GET /b, response 200 body',
        message: 'Property `w` became required.',
        rule: 'required-property-added',
        pointer: '#/components/schemas/B/required',
      },
    ]),
    [
      'GET /a, response 200 body `x`; event e, payload `data.x`: Property `x` was removed. (property-removed at #/components/schemas/A/properties/x)',
      'GET /b, response 200 body `y`: Property `y` was renamed to `z`. (property-removed at #/components/schemas/B/properties/z)',
      'GET /c, response 200 body `z`: Type of `z` changed. (schema-type-changed at #/components/schemas/C/type)',
      'GET /b, response 200 body: Property `w` became required. (required-property-added at #/components/schemas/B/required)',
    ],
    'the same change at one place once; what changed elsewhere is not part of a rename',
  )
})

t.test('narrowed values and uniqueness rules, on documents of a few lines', async (t) => {
  const change = (path: string) => ({ path, kind: 'modified', impact: 'major' as const, verdicts: [] })
  const withParameter = (schema: object, responses: object = {}) => ({
    paths: { '/a': { get: { parameters: [{ name: 'q', in: 'query', schema }], responses } } },
  })
  const parameter = change('#/paths/~1a/get/parameters/0/schema')
  t.equal(
    narrowedValues(parameter, withParameter({ type: 'string', example: 'ab' }), withParameter({ type: 'string', pattern: '^\\S*$', example: 'ab' })),
    'a `q` with a space, a no-break space, an ideographic space, a tab, a byte order mark (U+FEFF) or a line separator (U+2028) anywhere is now refused',
    'a parameter by its name; no 400 documented: refused',
  )
  t.equal(
    narrowedValues(parameter, withParameter({ type: 'string', example: 'ab' }), withParameter({ type: 'string', maxLength: 10, example: 'ab' }, { 400: {} })),
    undefined,
    'a narrowing none of the texts tried meets',
  )
  t.equal(narrowedValues(parameter, withParameter({ type: 'integer' }), withParameter({ type: 'integer', maximum: 5 })), undefined, 'not text: not tried')
  t.equal(narrowedValues(change('#/servers/0'), {}, {}), undefined, 'no request part')
  const body = (schema: object) => ({ paths: { '/a': { post: { requestBody: { content: { 'application/json': { schema } } }, responses: {} } } } })
  t.equal(
    narrowedValues(
      change('#/paths/~1a/post/requestBody/content/application~1json/schema'),
      body({ type: 'string', pattern: '^[^\\t]*$', example: 'ab' }),
      body({ type: 'string', pattern: '^[^\\t]{0,9}$', example: 'ab' }),
    ),
    undefined,
    'what was refused before is not new',
  )
  t.equal(
    narrowedValues(
      change('#/paths/~1a/post/requestBody/content/application~1json/schema'),
      body({ type: 'string', example: 'ab' }),
      body({ type: 'string', pattern: '^[^\u200B]*$', example: 'ab' }),
    ),
    'a `value` with a zero-width space (U+200B) anywhere is now refused',
    'a body that is the value itself',
  )

  const unique = (ignores: object, responses: object = {}) => ({
    info: { version: '2.1.0' },
    paths: { '/n': { post: { requestBody: { $ref: '#/components/requestBodies/N' }, responses } } },
    components: {
      requestBodies: { N: { content: { 'application/json': { schema: { properties: { name: { $ref: '#/components/schemas/Name' } }, example: {} } } } } },
      schemas: { Name: { type: 'string', 'x-unique': ignores } },
    },
  })
  t.strictSame(
    newUniqueness(unique({ case: '2.0.0' }), unique({ case: '2.0.0', accents: '2.1.0' })),
    [
      'POST /n, request body `name`: a `name` that differs from one taken only in accents written composed or decomposed (`é` and `e` with U+0301) is the same `name` now: refused',
    ],
    'no 409 documented: refused; no newest document: each its own',
  )
  t.strictSame(
    newUniqueness(
      { info: { version: '2.0.0' }, components: { schemas: { Name: {} } } },
      unique({ case: '2.0.0', accents: '2.1.0' }, { 409: {} }),
      unique({ case: '2.0.0' }),
    ),
    [],
    'an operation the release before lacked: its own addition',
  )
  t.strictSame(newUniqueness({ paths: {} }, { info: { version: '2.1.0' } }), [], 'no schemas')
  t.strictSame(newUniqueness(unique({ case: '2.0.0' }), { ...unique({ case: '2.0.0', accents: '2.1.0' }), paths: undefined }), [], 'no operations')
  const unstated = (version: string) => ({ info: { version }, components: { schemas: { Name: {} } } })
  t.strictSame(newUniqueness(unstated('2.0.0'), unstated('2.1.0')), [], 'no document states a rule')
})
