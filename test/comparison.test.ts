/**
 * The comparison the gate and the changelog share (scripts/comparison.ts), with the real redocly
 * diff, on edits of the released 1.2.0: a change of a shared schema is found at every place a
 * client meets it (each answer per status, each event's payload), parameters are named by name,
 * and a 4xx an operation gained is breaking; the new major's entry lists them all.
 */
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { parse } from 'yaml'
import { differencesOf, releasedDir } from '../scripts/check-breaking.js'
import { compareDocuments, diff, inPlace, keptReport, partOf, placeOf, writtenAt, writtenIn } from '../scripts/comparison.js'
import { compatibleLines, releaseEntry } from '../scripts/release.js'

t.jobs = 2
t.setTimeout(900_000)

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a parsed contract, which each case edits freely
type Spec = any
const released = (): Spec => parse(readFileSync(join(releasedDir, '1.2.0.yaml'), 'utf8'))
/** `edit` of 1.2.0, as the next major: its breaking differences, one line each. */
async function breaking(edit: (spec: Spec) => void): Promise<string[]> {
  const older = released()
  const newer = released()
  edit(newer)
  return differencesOf(await compareDocuments(older, newer), older, newer).map(
    ({ where, message, rule, pointer }) => `${where}: ${message} (${rule} at ${pointer})`,
  )
}

t.test("an event's payload changed alone: found in the event, where the schema is written", async (t) => {
  const lines = await breaking((spec) => (spec.components.schemas.OccurredAt.maxLength = 40))
  t.strictSame(
    lines.map((line) => line.slice(0, line.indexOf(':'))),
    [
      'event order.placed, payload `occurredAt`',
      'event order.status_changed, payload `occurredAt`',
      'event pet.created, payload `occurredAt`',
      'event pet.status_changed, payload `occurredAt`',
    ],
    'each event that carries it, and nothing else',
  )
  t.match(lines[2], /`maxLength` of `occurredAt` changed from '24' to '40'\. \(schema-constraint-changed at #\/components\/schemas\/OccurredAt\/maxLength\)$/)
})

t.test('a body change: at every status of every operation that answers it, and in every event', async (t) => {
  const lines = await breaking((spec) => {
    delete spec.components.schemas.Pet.properties.status
  })
  const places = lines.filter((line) => line.includes('Property `status`')).map((line) => line.slice(0, line.indexOf(':')))
  t.strictSame(places, [
    'GET /pets, response 200 body `status`',
    'POST /pets, response 201 body `status`',
    'GET /pets/{petId}, response 200 body `status`',
    'event pet.created, payload `data.status`',
    'event pet.status_changed, payload `data.status`',
  ])
  t.ok(
    lines.every((line) => line.endsWith('(property-removed at #/components/schemas/Pet/properties/status)')),
    'each named where the change is written, as reviewed exceptions and version changes name it',
  )
})

t.test('parameters by name: one made required, one added', async (t) => {
  const older = released()
  const newer = released()
  newer.components.parameters.StatusFilter.required = true
  newer.paths['/pets'].get.parameters.push({ name: 'sort', in: 'query', required: false, schema: { type: 'string', enum: ['name'] } })
  const changes = await compareDocuments(older, newer)
  const lines = differencesOf(changes, older, newer)
  t.match(lines, [
    { where: 'GET /pets, parameter `status` (query)', rule: 'parameter-became-required', pointer: '#/components/parameters/StatusFilter/required' },
  ])
  t.strictSame(compatibleLines(changes, newer, older), ['GET /pets: added parameter `sort` (query)'])
})

t.test('a 4xx an operation gained is breaking; a 2xx, or a header of an answer, is not a refusal', async (t) => {
  const lines = await breaking((spec) => {
    const createPet = spec.paths['/pets'].post
    createPet.responses['422'] = {
      description: 'The category does not exist.',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    }
    createPet.responses['202'] = { description: 'Accepted, to be added later.' }
    spec.components.responses.InvalidRequest.headers = {
      ...spec.components.responses.InvalidRequest.headers,
      'X-Trace': { schema: { type: 'string', maxLength: 64 } },
    }
  })
  t.strictSame(lines, [
    'POST /pets, response 422: Response 422 was added: a request version 1.2.0 took may be refused. (response-added at #/paths/~1pets/post/responses/422)',
  ])
})

t.test("a new major's entry lists them all as breaking; a later release lists its refusals apart from its compatible changes", async (t) => {
  const older = released()
  const edit = (spec: Spec) => {
    spec.components.schemas.Pet.properties.status.description = 'Its status.'
    delete spec.components.schemas.Pet.properties.status
    spec.paths['/pets'].post.responses['422'] = { description: 'Refused.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }
    spec.paths['/pets'].get.parameters.push({ name: 'sort', in: 'query', required: false, schema: { type: 'string', enum: ['name'] } })
  }
  const major = released()
  edit(major)
  major.info.version = '2.0.0'
  const entry = await releaseEntry({
    version: '2.0.0',
    date: '2026-11-28',
    previous: older,
    current: major,
    allowed: [],
    accepted: [],
    correction: 'it left out the events.',
  })
  t.match(
    entry,
    /^## 2\.0\.0 \(2026-11-28\)\n\n\*Corrected: it left out the events\.\*\n\n### Breaking changes \(a new major version: 1\.2\.0 is served beside it\)\n/,
  )
  t.match(
    entry,
    /^- GET \/pets, response 200 body `status`; POST \/pets, response 201 body `status`; GET \/pets\/\{petId\}, response 200 body `status`; event pet\.created, payload `data.status`; event pet\.status_changed, payload `data.status`: Property `status` was removed\./m,
    'one change, once, naming every place a client meets it',
  )
  t.match(entry, /^- POST \/pets, response 422: Response 422 was added: a request version 1\.2\.0 took may be refused\./m)
  t.match(entry, /### Compatible changes\n\n- GET \/pets: added parameter `sort` \(query\)\n/)
  t.notMatch(entry, /added response 422/, 'a refusal is never a compatible change')

  const minor = released()
  minor.paths['/pets'].post.responses['422'] = major.paths['/pets'].post.responses['422']
  minor.info.version = '1.3.0'
  const later = await releaseEntry({ version: '1.3.0', date: '2026-11-28', previous: older, current: minor, allowed: [], accepted: [] })
  t.equal(
    later,
    '## 1.3.0 (2026-11-28)\n\n### New refusals (a request the release before took may be refused now)\n\n- POST /pets, response 422: Response 422 was added: a request version 1.2.0 took may be refused. (response-added at #/paths/~1pets/post/responses/422)\n',
  )
  const first = await releaseEntry({ version: '1.0.0', date: '2026-11-23', previous: {}, current: older, allowed: [], accepted: [] })
  t.match(
    first,
    /^## 1\.0\.0 \(2026-11-23\)\n\n### Added\n\n- `listPets` \(GET \/pets\), stable\n/,
    'the first release: everything added, compared with nothing',
  )
})

t.test('where a place is written, and what it is called', async (t) => {
  const document = {
    paths: {
      '/a': {
        get: {
          parameters: [{ $ref: '#/components/parameters/P' }],
          responses: { 200: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } } } },
        },
      },
    },
    components: {
      parameters: { P: { name: 'p', in: 'header' } },
      schemas: { Node: { type: 'object', properties: { next: { $ref: '#/components/schemas/Node' } } } },
    },
  }
  t.strictSame(
    inPlace(document).paths,
    {
      '/a': {
        get: {
          parameters: [{ name: 'p', in: 'header' }],
          responses: { 200: { content: { 'application/json': { schema: { type: 'object', properties: { next: { $ref: '#/components/schemas/Node' } } } } } } },
        },
      },
    },
    'written out, but for a $ref inside what it names',
  )
  const body = '#/paths/~1a/get/responses/200/content/application~1json/schema'
  t.equal(writtenAt(document, `${body}/properties/next/properties/next`), '#/components/schemas/Node/properties/next')
  t.equal(writtenAt(document, '#/paths/~1a/get/parameters/0/name'), '#/components/parameters/P/name')
  t.equal(writtenAt(document, '#/paths/~1b'), undefined, 'a place the document does not have')
  t.equal(writtenIn([{}, document], '#/paths/~1a/get/parameters/0/name'), '#/components/parameters/P/name', 'in the first document that has it')
  t.equal(writtenIn([{}], '#/paths/~1b'), '#/paths/~1b', 'as it is where none has it')
  t.equal(placeOf('#/paths/~1a'), '/a', 'a whole path')
  t.equal(placeOf('#/webhooks'), 'webhooks', 'the events as a whole')
  t.equal(placeOf('#/paths/~1a/get/parameters/0', document), 'GET /a, parameter `p` (header)')
  t.equal(placeOf('#/paths/~1a/get/parameters/1'), 'GET /a, parameter 1', 'a parameter no document names')
  t.equal(placeOf('#/paths/~1a/get/parameters'), 'GET /a, parameters')
  t.equal(placeOf('#/paths/~1a/post/requestBody/content/application~1json/schema/properties/name'), 'POST /a, request body `name`')
  t.equal(placeOf('#/webhooks/a.b/post/requestBody/content/application~1json/schema/items/properties/data/properties/id'), 'event a.b, payload `data.id`')
  t.equal(placeOf('#/paths/~1a/get/responses/200/headers/Link/schema'), 'GET /a, response 200 header Link')
  t.equal(placeOf('#/paths/~1a/get/responses/200/content/application~1json/schema'), 'GET /a, response 200 body')
  t.equal(placeOf('#/paths/~1a/get/responses/404'), 'GET /a, response 404')
  t.equal(placeOf('#/paths/~1a/get/responses'), 'GET /a, responses')
  t.equal(placeOf('#/paths/~1a/get'), 'GET /a', 'the operation itself')
  t.equal(partOf('#/servers/0'), undefined, 'outside operations and events: no part')
})

t.test("redocly's report is kept by what made it: the same two documents are compared once", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-kept-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const older = join(dir, 'older.json')
  const newer = join(dir, 'newer.json')
  const spec = released()
  writeFileSync(older, JSON.stringify(spec))
  // (a change no other test makes: its report is not kept yet)
  spec.info.description = `${spec.info.description} ${randomUUID()}`
  writeFileSync(newer, JSON.stringify(spec))
  const kept = keptReport(older, newer)
  t.teardown(() => rmSync(kept, { force: true }))
  t.notOk(existsSync(kept), 'a new pair has no report kept')
  const found = await diff(older, newer)
  t.strictSame(found, [{ path: '#/info', kind: 'modified', impact: 'patch', verdicts: [] }], "redocly's report, of what a Change holds")
  t.strictSame(JSON.parse(readFileSync(kept, 'utf8')).changes, found, 'kept')
  // the kept report is what a second comparison answers, without redocly: one written here shows it
  writeFileSync(kept, JSON.stringify({ changes: [] }))
  t.strictSame(await diff(older, newer), [], 'read back')
  writeFileSync(newer, JSON.stringify({ ...spec, info: { ...spec.info, description: 'another' } }))
  t.not(keptReport(older, newer), kept, 'another document, another report')
  rmSync(kept)
  writeFileSync(newer, JSON.stringify(spec))
  t.strictSame(await diff(older, newer), found, 'a report removed is made again')
})
