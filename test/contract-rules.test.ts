/**
 * One rule, one refusal: a problem the contract model finds (a lifecycle marker, what a deprecated
 * operation documents, a role, x-service...) is refused in the same words by the server as it
 * starts, by the breaking-change gate (npm run check:breaking, which npm run release runs) and by
 * the lint (npm run lint:owasp, Spectral's petstore-contract rule), each on a copy of openapi.yaml
 * that breaks it; and openapi.yaml itself passes all three.
 */
import { copyFileSync, cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import t, { type Test } from 'tap'
import { stringify } from 'yaml'
import { checkBreaking, releasedDir } from '../scripts/check-breaking.js'
import { contractOf, loadContract, newestSpecPath } from '../src/contract/load.js'
import { generatedDir, projectRoot } from '../src/core/paths.js'
import { oldestSpecPath } from './helpers/spec.js'
import { contractRuleErrors } from './helpers/lint.js'
import { launch, processBound, within } from './helpers/processes.js'

t.setTimeout(900_000)
t.jobs = 2

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a parsed contract, which each case edits freely
type Spec = any
// (the document as served: bundled, one file a copy of which is served alone)
const spec = (): Spec => structuredClone(loadContract(oldestSpecPath).document)
const getPet = (document: Spec) => document.paths['/pets/{petId}'].get
const listPets = (document: Spec) => document.paths['/pets'].get

function written(t: Test, document: Spec): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-rules-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'openapi.yaml')
  writeFileSync(file, stringify(document))
  return file
}

// the day the gate judges on: before getPet's sunset
const now = new Date('2027-01-01T00:00:00Z')

// The gate judges each case by the oldest version's last release alone (the one it is served as):
// the refusal is what is asked, and each release more is one more comparison, a redocly process
// of seconds.
const lastRelease = mkdtempSync(join(tmpdir(), 'petstore-rules-released-'))
t.teardown(() => rmSync(lastRelease, { recursive: true, force: true }))
const released = `${String(spec().info.version)}.yaml`
copyFileSync(join(releasedDir, released), join(lastRelease, released))

const cases: [string, (document: Spec) => void, string, string][] = [
  [
    'an unknown stability level',
    (d) => (listPets(d)['x-stability'] = 'alpha'),
    'operation listPets',
    'x-stability "alpha" is not a level: experimental or beta (none means stable)',
  ],
  [
    'a deprecation without its date',
    (d) => delete getPet(d)['x-deprecated-at'],
    'operation getPet',
    'a deprecated operation says when it was deprecated: x-deprecated-at, a date YYYY-MM-DD',
  ],
  [
    'an impossible day',
    (d) => (getPet(d)['x-deprecated-at'] = '2026-02-30'),
    'operation getPet',
    'a deprecated operation says when it was deprecated: x-deprecated-at, a date YYYY-MM-DD, not "2026-02-30"',
  ],
  [
    'a deprecation without its sunset',
    (d) => delete getPet(d)['x-sunset'],
    'operation getPet',
    'a deprecated operation says when it goes: x-sunset, a date YYYY-MM-DD',
  ],
  [
    'a sunset that is no date',
    (d) => (getPet(d)['x-sunset'] = 'soon'),
    'operation getPet',
    'a deprecated operation says when it goes: x-sunset, a date YYYY-MM-DD, not "soon"',
  ],
  [
    'a sunset before the deprecation',
    (d) => (getPet(d)['x-sunset'] = '2020-01-01'),
    'operation getPet',
    'x-sunset 2020-01-01 is earlier than x-deprecated-at 2026-11-21',
  ],
  [
    'a notice shorter than the level gives',
    (d) => (getPet(d)['x-sunset'] = '2027-05-19'),
    'operation getPet',
    'x-sunset 2027-05-19 is less than 180 days (the stable notice period, x-service.lifecycle.noticeDays) after x-deprecated-at 2026-11-21',
  ],
  [
    'a successor that is no operation',
    (d) => (getPet(d)['x-successor'] = 'findPets'),
    'operation getPet',
    'x-successor findPets names no operation of this document',
  ],
  [
    'a successor whose URL is a template',
    (d) => {
      getPet(d)['x-successor'] = 'getPet'
      delete getPet(d)['x-successor-parameters']
    },
    'operation getPet',
    'x-successor getPet is at /v1/pets/{petId}, a template, not a request a client can send: name an operation without path parameters (x-successor-parameters fills its query), or say in x-successor-reason why there is none',
  ],
  [
    'neither a successor nor why none',
    (d) => delete getPet(d)['x-successor'],
    'operation getPet',
    'a deprecated operation names its x-successor (an operationId), or says in x-successor-reason why there is none',
  ],
  [
    'a brownout that is no date-time',
    (d) => (getPet(d)['x-brownouts'] = [{ start: '2030-11-01', end: '2030-11-02T00:00:00Z' }]),
    'operation getPet',
    'x-brownouts[0].start must be a UTC date-time written YYYY-MM-DDTHH:MM:SSZ, not "2030-11-01"',
  ],
  [
    'a brownout past the sunset',
    (d) => (getPet(d)['x-brownouts'] = [{ start: '2030-12-04T00:00:00Z', end: '2030-12-06T00:00:00Z' }]),
    'operation getPet',
    'x-brownouts[0] must end after it starts, and by the sunset',
  ],
  ['brownouts that are no list', (d) => (getPet(d)['x-brownouts'] = 'soon'), 'operation getPet', 'x-brownouts must be a list of {start, end}'],
  ['a sunset on an operation that is not deprecated', (d) => (listPets(d)['x-sunset'] = '2031-01-01'), 'operation listPets', 'x-sunset needs deprecated: true'],
  [
    'an unknown level on an event',
    (d) => (d.webhooks['pet.created'].post['x-stability'] = 'alpha'),
    'event pet.created',
    'x-stability "alpha" is not a level: experimental or beta (none means stable)',
  ],
  // the other rules: what a response documents, the roles, x-service
  [
    'a deprecated operation without its 410',
    (d) => delete getPet(d).responses['410'],
    'operation getPet',
    "a deprecated operation documents its 410 (gone, from its sunset on): add '410': $ref '#/components/responses/Gone'",
  ],
  [
    'a deprecated operation whose answer lacks its lifecycle headers',
    (d) => delete getPet(d).responses['200'].headers.Sunset,
    'operation getPet',
    "response 200 does not document Sunset: add Sunset: $ref '#/components/headers/Sunset' to its headers",
  ],
  [
    'a deprecated operation whose Link does not admit the one it sends',
    (d) => (getPet(d).responses['404'].headers.Link = { $ref: '#/components/headers/NextPageLink' }),
    'operation getPet',
    'response 404 documents a Link that does not admit `</v1/pets?id=1>; rel="successor-version", </v1/docs/>; rel="deprecation"; type="text/html"`, which the server sends: document Link as $ref \'#/components/headers/LifecycleLink\'',
  ],
  [
    'a role the catalogue lacks',
    (d) => (listPets(d).security = [{ bearerAuth: ['pets:fly'] }]),
    'operation listPets',
    "needs pets:fly, which bearerAuth's x-roles does not list",
  ],
  [
    'a limit that is no number',
    (d) => (d['x-service'].limits.requestBodyBytes = 'big'),
    'x-service',
    'limits.requestBodyBytes must be a whole number above 0, not "big"',
  ],
]

// each case's document, and the document as served, linted in one run of Spectral (on first need)
const served = join(generatedDir, 'v1', 'openapi.yaml')
const edited = cases.map(([, edit]) => {
  const document = spec()
  edit(document)
  return { document, file: written(t, document) }
})
let linted: Promise<Map<string, string[]>> | undefined
/** The lint's errors of the contract rule in `file`. */
const lintErrors = async (file: string) => (await (linted ??= contractRuleErrors([served, ...edited.map(({ file }) => file)]))).get(file)!

t.test('openapi.yaml passes the server, the gate and the lint', async (t) => {
  t.doesNotThrow(() => contractOf(spec()))
  t.ok((await checkBreaking()).ok, 'the gate')
  t.strictSame(await lintErrors(served), [], 'the lint, of the document as served')
})

for (const [index, [what, , where, message]] of cases.entries()) {
  t.test(`${what}: refused by the server, the gate and the lint, in the same words`, async (t) => {
    const { document, file } = edited[index]!
    const line = `openapi.yaml: ${where}: ${message}`
    t.throws(() => contractOf(document), { message: new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm') }, 'the server')
    const gate = await checkBreaking({ spec: file, now, released: lastRelease })
    t.notOk(gate.ok, 'the gate refuses it')
    t.ok(gate.lines.includes(line), `the gate says: ${line}`)
    t.ok((await lintErrors(file)).includes(message), `the lint says: ${message}`)
  })
}

t.test('the server, started on a copy of the project whose openapi.yaml has an unknown level, refuses in one line', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-start-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // (the server as the tests run it, compiled: .build/src/server.js, which finds the copy's
  // package.json, documents and generated/ above it)
  for (const part of ['.build/src', '.build/generated', 'generated', 'contract', 'package.json'])
    cpSync(join(projectRoot, part), join(dir, part), { recursive: true })
  symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'))
  const document = structuredClone(loadContract(newestSpecPath).document) as Spec
  listPets(document)['x-stability'] = 'alpha'
  writeFileSync(join(dir, 'openapi.yaml'), stringify(document))
  const server = launch(t, relative(projectRoot, join(dir, '.build', 'src', 'server.js')), [], { DATABASE_URL: 'sqlite::memory:', API_KEYS: 'k', PORT: '0' })
  const { code, stderr } = await within(processBound, server.exited)
  t.equal(code, 1)
  t.equal(stderr, 'petstore: openapi.yaml: operation listPets: x-stability "alpha" is not a level: experimental or beta (none means stable)\n')
})
