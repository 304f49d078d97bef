/**
 * The breaking-change gate (npm run check:breaking): edits of the released contract 1.0.0,
 * each judged by the real redocly diff. Breaking edits fail, each named; compatible ones pass.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { parse, stringify } from 'yaml'
import { type AcceptedChange, checkBreaking, checkCoverage, classify, releasedDir } from '../scripts/check-breaking.js'
import { contractOf, loadContract, loadContracts } from '../src/contract/load.js'
import type { Contract } from '../src/contract/model.js'
import { runMain } from './helpers/main.js'
import { run } from './helpers/processes.js'
import { main } from '../scripts/check-breaking.js'
import { escaped, oldestSpecPath } from './helpers/spec.js'

// each check runs redocly in a process of its own (about a second each): side by side, and
// more time than a test file's default on a busy machine
t.jobs = 2
t.setTimeout(900_000)

/** The released contract, as a plain object to edit, with the notice periods the service gives
 * now (openapi.yaml's x-service, which 1.0.0 did not have yet). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a parsed contract, which each case edits freely
type Spec = any
const released = (): Spec => ({
  ...parse(readFileSync(join(releasedDir, '1.0.0.yaml'), 'utf8')),
  'x-service': loadContract(oldestSpecPath).document['x-service' as never],
})

/** A folder with 1.0.0 as the only release: what the edits of 1.0.0 are judged against (a later
 * release holds more than 1.0.0, and would take each edit's missing parts for removals). */
const firstRelease = mkdtempSync(join(tmpdir(), 'petstore-first-release-'))
copyFileSync(join(releasedDir, '1.0.0.yaml'), join(firstRelease, '1.0.0.yaml'))
t.teardown(() => rmSync(firstRelease, { recursive: true, force: true }))

/** What the gate says of openapi.yaml against every release of the repository, oldest first. */
/** What the gate says of a served document of major version `major`: compatible with each of its releases. */
const releases = readdirSync(releasedDir)
  .map((file) => file.replace(/\.yaml$/, ''))
  .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
const compatibleWithEveryRelease = (major: number) =>
  releases.filter((version) => version.startsWith(`${major}.`)).map((version) => `compatible with the released ${version}`)

/** What the gate says of a served document against the releases: compatible with each of its
 * major's, or, for a major not released yet (a new major), that it starts after the last release. */
function gateLines({ version: [major, minor, patch] }: Contract): string[] {
  const compatible = compatibleWithEveryRelease(major)
  if (compatible.length > 0) return compatible
  return [`info.version ${major}.${minor}.${patch} starts major version ${major}: breaking changes to ${releases.at(-1)} are allowed`]
}

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-breaking-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Writes `document` to a file of its own; returns the path. */
function writtenAs(t: Test, document: unknown, name: string): string {
  const file = join(tempDir(t), name)
  writeFileSync(file, stringify(document))
  return file
}

/**
 * An edit of 1.0.0 as a document the server would serve, whatever the edit marks: the gate
 * refuses every problem the server would (test/contract-rules.test.ts), and here it judges the
 * changes alone. 1.0.0 predates some rules (Error.message and WebhookDelivery.lastError state
 * their maxLength; a deprecated operation documents its 410); every response documents
 * API-Stability, Deprecation, Sunset and Link as present when the operation is marked, as the
 * shared responses of the served documents do.
 */
function servable(edited: Spec): Spec {
  const spec = structuredClone(edited)
  spec.components.schemas.Error.properties.message.maxLength ??= 500
  spec.components.schemas.WebhookDelivery ??= { type: 'object', properties: { lastError: { type: 'string', maxLength: 500 } } }
  const error = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } }
  spec.components.responses.Gone ??= { description: 'Gone.', content: error }
  const operations = Object.values<Spec>(spec.paths ?? {}).flatMap((item) => Object.values<Spec>(item))
  for (const operation of operations) if (operation.deprecated) operation.responses['410'] ??= { $ref: '#/components/responses/Gone' }
  const whenMarked = { required: false, schema: { type: 'string', maxLength: 500 } }
  const inline = operations.flatMap((operation) => Object.values<Spec>(operation.responses)).filter((response) => response.$ref === undefined)
  for (const response of [...inline, ...Object.values<Spec>(spec.components.responses)]) {
    response.headers = { 'API-Stability': whenMarked, Deprecation: whenMarked, Sunset: whenMarked, Link: whenMarked, ...response.headers }
  }
  return spec
}

/** Writes an edit of 1.0.0, as a document the server would serve; returns the path. */
const written = (t: Test, spec: Spec) => writtenAs(t, servable(spec), 'openapi.yaml')

/** The gate on 1.0.0 edited by `edit`, against the released contracts of the repo. */
async function gate(t: Test, edit: (spec: Spec) => void, accepted: AcceptedChange[] = []) {
  const spec = released()
  edit(spec)
  const result = await checkBreaking({ spec: written(t, spec), released: firstRelease, accepted: writtenAs(t, accepted, 'accepted.yaml') })
  t.comment(result.lines.join('\n'))
  return result
}

const pet = (spec: Spec) => spec.components.schemas.Pet
const bumpMajor = (spec: Spec) => {
  spec.info.version = '2.0.0'
  for (const server of spec.servers) server.url = server.url.replace(/\/v1$/, '/v2')
}

t.test('the first released contract is 1.0.0, and each served document keeps to every release of its major', async (t) => {
  t.equal(released().info.version, '1.0.0')
  t.ok(compatibleWithEveryRelease(1).length >= 2, 'releases after 1.0.0 are judged too')
  const oldest = await checkBreaking({ spec: oldestSpecPath })
  t.ok(oldest.ok)
  t.strictSame(oldest.lines, gateLines(loadContracts()[0]!))
  const newest = await checkBreaking()
  t.ok(newest.ok, 'openapi.yaml, by default')
  t.strictSame(newest.lines, gateLines(loadContracts().at(-1)!))
})

t.test('breaking edits fail, each named', async (t) => {
  t.jobs = 2
  const breaking: [string, (spec: Spec) => void, RegExp][] = [
    [
      'a response field removed',
      (spec) => {
        delete pet(spec).properties.categoryId
        pet(spec).required = ['id', 'name']
      },
      /^ {2}GET \/pets: Property `categoryId` of `Pet` was removed\. \(property-removed at #\/components\/schemas\/Pet\/properties\/categoryId\)$/m,
    ],
    ['an optional response field removed', (spec) => delete pet(spec).properties.status, /^ {2}GET \/pets: Property `status` of `Pet` was removed\./m],
    [
      '`limit` made required',
      (spec) => (spec.components.parameters.Limit.required = true),
      /^ {2}GET \/pets: `limit` query parameter became required\. \(parameter-became-required at #\/components\/parameters\/Limit\/required\)$/m,
    ],
    [
      'PetStatus narrowed',
      (spec) => (spec.components.schemas.PetStatus.enum = ['available', 'pending']),
      /^ {2}GET \/pets: Enum of `PetStatus` lost values: 'sold'\. \(enum-values-removed at #\/components\/schemas\/PetStatus\/enum\)$/m,
    ],
    [
      'PetStatus widened: clients receive it in responses',
      (spec) => spec.components.schemas.PetStatus.enum.push('adopted'),
      /Enum of `PetStatus` gained values: 'adopted'\. \(enum-values-added/,
    ],
    [
      'a shorter maxLength on a field clients send',
      (spec) => (spec.components.schemas.PetName.maxLength = 50),
      /`maxLength` of `name` changed from '100' to '50'\. \(schema-constraint-changed at #\/components\/schemas\/PetName\/maxLength\)/,
    ],
    [
      // PetName is also in every response: a client may hold names to 100 characters
      'a wider limit on a field clients also receive',
      (spec) => (spec.components.schemas.PetName.maxLength = 200),
      /`maxLength` of `name` changed from '100' to '200'\. \(schema-constraint-changed at #\/components\/schemas\/PetName\/maxLength\)/,
    ],
    [
      'a new format on a parameter clients send',
      (spec) => (spec.components.parameters.Limit.schema.format = 'int32'),
      /`format` was set to 'int32'\. \(schema-constraint-changed at #\/components\/parameters\/Limit\/schema\/format\)/,
    ],
    [
      'a new required request field',
      (spec) => {
        spec.components.schemas.NewPet.properties.tag = { type: 'string', maxLength: 20 }
        spec.components.schemas.NewPet.required.push('tag')
      },
      /^ {2}POST \/pets: Properties of `NewPet` became required: `tag`\./m,
    ],
    ['an operation removed', (spec) => delete spec.paths['/pets/{petId}'], /^ {2}\/pets\/\{petId\}: Path `\/pets\/\{petId\}` was removed\. \(path-removed/m],
  ]
  for (const [name, edit, named] of breaking) {
    t.test(name, async (t) => {
      const { ok, lines } = await gate(t, edit)
      t.notOk(ok, 'fails')
      t.match(
        lines.join('\n'),
        // (the accepted changes of this test are in a file of its own)
        /^\d breaking change\(s\) to the released 1\.0\.0; each needs a new major version, served beside this one \(a document of its own with info\.version 2\.0\.0 and servers ending in \/v2, and the change declared in src\/versions\/: docs\/compatibility\.md\), or, if it breaks no client that worked before, a reviewed entry in \S*accepted\.yaml \(its rule, its pointer and why\):$/m,
        'the two ways on',
      )
      t.match(lines.join('\n'), named, 'names the change')
    })
  }
})

t.test('compatible edits pass', async (t) => {
  t.jobs = 2
  const compatible: [string, (spec: Spec) => void][] = [
    [
      'a new operation',
      (spec) => (spec.paths['/categories'] = { get: { operationId: 'listCategories', responses: { 200: { description: 'The categories.' } } } }),
    ],
    ['a new optional request field', (spec) => (spec.components.schemas.NewPet.properties.tag = { type: 'string', maxLength: 20 })],
    ['a new optional response field', (spec) => (pet(spec).properties.tag = { type: 'string' })],
    [
      'a new response header',
      (spec) => (spec.paths['/pets'].get.responses['200'].headers['X-Request-Id'] = { required: true, schema: { type: 'string', maxLength: 64 } }),
    ],
    ['a new error code (the catalogue is extensible)', (spec) => spec.components.schemas.Error.properties.code['x-extensible-enum'].push('too_many_requests')],
    ['a maxLength on a string clients receive', (spec) => (spec.components.schemas.Error.properties.message.maxLength = 1000)],
    [
      'a new deprecation',
      (spec) =>
        Object.assign(spec.paths['/pets'].post, { deprecated: true, 'x-deprecated-at': '2027-01-01', 'x-sunset': '2028-01-01', 'x-successor-reason': 'none' }),
    ],
    [
      // what the rate limits, health and OWASP work adds: 1.1.0, a 429 and RateLimit headers
      // on every operation, new operations without a key, maxItems on a response array
      'rate limits, health endpoints and limits on responses, as 1.1.0',
      (spec) => {
        spec.info.version = '1.1.0'
        for (const operation of [spec.paths['/pets'].get, spec.paths['/pets'].post, spec.paths['/pets/{petId}'].get]) {
          operation.responses['429'] = {
            description: 'Too many requests (code `too_many_requests`).',
            headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
          }
          for (const response of Object.values<Spec>(operation.responses)) {
            if (response.$ref === undefined) response.headers.RateLimit = { required: true, schema: { type: 'string', maxLength: 256 } }
          }
        }
        spec.paths['/livez'] = { get: { operationId: 'livez', security: [], responses: { 200: { description: 'The process answers.' } } } }
        spec.components.schemas.Pets.maxItems = 100
      },
    ],
  ]
  for (const [name, edit] of compatible) {
    t.test(name, async (t) => {
      const { ok, lines } = await gate(t, edit)
      t.ok(ok, 'passes')
      t.strictSame(lines, ['compatible with the released 1.0.0'])
    })
  }

  t.test('a new value of an enum that only clients send, a wider limit on what only clients send', async (t) => {
    // 1.0.0 has neither: a release that has both, then a revision that widens them
    const order = { name: 'order', in: 'query', required: false, schema: { type: 'string', enum: ['asc'] } }
    const query = { name: 'q', in: 'query', required: false, schema: { type: 'string', maxLength: 50 } }
    const base = released()
    base.paths['/pets'].get.parameters.push(query, order)
    const releases = tempDir(t)
    writeFileSync(join(releases, '1.0.0.yaml'), stringify(base))
    base.paths['/pets'].get.parameters.at(-1).schema.enum.push('desc')
    base.paths['/pets'].get.parameters.at(-2).schema.maxLength = 100
    const widened = await checkBreaking({ spec: written(t, base), released: releases })
    t.ok(widened.ok, widened.lines.join('\n'))
    base.paths['/pets'].get.parameters.at(-1).schema.enum = ['desc']
    const narrowed = await checkBreaking({ spec: written(t, base), released: releases })
    t.notOk(narrowed.ok, 'while taking one away breaks clients that send it')
    t.match(narrowed.lines.join('\n'), /GET \/pets: Enum lost values: 'asc'\. \(enum-values-removed at #\/paths\/~1pets\/get\/parameters\/4\/schema\/enum\)/)
  })
})

t.test('a breaking change needs the next major version, and its version segment', async (t) => {
  const narrow = (spec: Spec) => (spec.components.schemas.PetStatus.enum = ['available', 'pending'])

  const major = await gate(t, (spec) => {
    narrow(spec)
    bumpMajor(spec)
  })
  t.ok(major.ok, 'with 2.0.0 and /v2, it passes')
  t.strictSame(major.lines, ['info.version 2.0.0 starts major version 2: breaking changes to 1.0.0 are allowed'])

  const noSegment = await gate(t, (spec) => {
    narrow(spec)
    spec.info.version = '2.0.0'
  })
  t.notOk(noSegment.ok, 'with 2.0.0 but /v1, it fails')
  t.match(noSegment.lines, [
    'server https://api.petstore.example.com/v1 must end in /v2: the version segment is the major version of info.version 2.0.0',
    'server https://staging-api.petstore.example.com/v1 must end in /v2: the version segment is the major version of info.version 2.0.0',
  ])

  const noBump = await gate(t, (spec) => {
    narrow(spec)
    for (const server of spec.servers) server.url = server.url.replace(/\/v1$/, '/v2')
  })
  t.notOk(noBump.ok, 'with /v2 but 1.0.0, it fails')
  t.match(noBump.lines.join('\n'), /server https:\/\/api\.petstore\.example\.com\/v2 must end in \/v1/)
  t.match(noBump.lines.join('\n'), /Server `https:\/\/api\.petstore\.example\.com\/v1` became `https:\/\/api\.petstore\.example\.com\/v2`/)

  const noServers = await gate(t, (spec) => delete spec.servers)
  t.notOk(noServers.ok, 'without servers: the base address changed')
  t.match(noServers.lines.join('\n'), /^ {2}servers: /m)

  const older = await gate(t, (spec) => (spec.info.version = '0.9.0'))
  t.notOk(older.ok)
  t.strictSame(older.lines, [
    'info.version 0.9.0 is older than the released 1.0.0',
    'openapi.yaml: servers: server https://api.petstore.example.com/v1 must end in /v0: the version segment is the major version of info.version 0.9.0',
    'openapi.yaml: servers: server https://staging-api.petstore.example.com/v1 must end in /v0: the version segment is the major version of info.version 0.9.0',
  ])
})

t.test('a reviewed exception in the accepted changes lets that change, and only it, through', async (t) => {
  const int32 = (spec: Spec) => (spec.components.parameters.Limit.schema.format = 'int32')
  const accepted = [
    {
      rule: 'schema-constraint-changed',
      pointer: '#/components/parameters/Limit/schema/format',
      reason: 'limit is 1..100: int32 holds every value a client could send',
    },
  ]
  t.ok((await gate(t, int32, accepted)).ok, 'accepted')
  const other = await gate(
    t,
    (spec) => {
      int32(spec)
      spec.components.parameters.Limit.schema.maximum = 50
    },
    accepted,
  )
  t.notOk(other.ok, 'another change at the same place is not')
  t.match(other.lines.join('\n'), /Upper bound changed from '<= 100' to '<= 50'/)
  t.notMatch(other.lines.join('\n'), /format/)

  // an accepted-changes file with comments only accepts nothing
  const dir = tempDir(t)
  writeFileSync(join(dir, 'accepted.yaml'), '# none yet\n')
  const spec = released()
  int32(spec)
  t.notOk((await checkBreaking({ spec: written(t, spec), released: firstRelease, accepted: join(dir, 'accepted.yaml') })).ok)
})

t.test('a major change redocly gives no verdict is still reported, by its place', async (t) => {
  const change = { path: '#/paths/~1pets/get/parameters/0', kind: 'modified', impact: 'major' as const, verdicts: [] }
  t.strictSame(classify([change], []).breaking, ['  GET /pets: rated major (modified at #/paths/~1pets/get/parameters/0)'])
})

t.test('npm run check:breaking: exit 0, 1 naming the change, 2 for a document it cannot read', async (t) => {
  const passing = await runMain(main)
  t.equal(passing.code, 0, passing.stderr)
  const everyDocument = loadContracts().flatMap((contract) => [`${contract.file}:`, ...gateLines(contract)])
  const covered = (await checkCoverage(loadContracts())).lines
  t.equal(
    passing.stdout,
    [...everyDocument, ...covered].map((line) => `${line}\n`).join(''),
    'each served document, against the releases of its major; each against the major before it',
  )

  const spec = released()
  spec.components.parameters.Limit.required = true
  const failing = await runMain(main, ['--spec', written(t, spec), '--released', firstRelease])
  t.equal(failing.code, 1)
  t.match(failing.stdout, /`limit` query parameter became required/)
  t.match(
    failing.stdout,
    /^1 breaking change\(s\) to the released 1\.0\.0; each needs a new major version, served beside this one \(a document of its own with info\.version 2\.0\.0 and servers ending in \/v2, and the change declared in src\/versions\/: docs\/compatibility\.md\), or, if it breaks no client that worked before, a reviewed entry in contract\/accepted-changes\.yaml \(its rule, its pointer and why\):$/m,
    'the two ways on, naming the file of reviewed entries',
  )

  spec.info.version = 'v1'
  // the one real process of the script: its exit status and streams, the one line of its refusal
  const unreadable = await run(t, 'scripts/check-breaking.ts', ['--spec', written(t, spec), '--released', firstRelease])
  t.equal(unreadable.code, 2)
  t.match(unreadable.stderr, /^check:breaking: .*openapi\.yaml: info\.version "v1" is not a version MAJOR\.MINOR\.PATCH\n$/)
  t.equal(unreadable.stdout, '')

  const removed = released()
  delete removed.paths['/pets/{petId}']
  t.equal(
    (await runMain(main, ['--spec', written(t, removed), '--released', firstRelease, '--now', '2030-12-05'])).code,
    0,
    'on the day of the sunset, getPet may go',
  )
  const badDay = await runMain(main, ['--now', 'tomorrow'])
  t.equal(badDay.code, 2)
  t.match(badDay.stderr, /--now tomorrow is not a date YYYY-MM-DD/)

  const empty = tempDir(t)
  mkdirSync(join(empty, 'released'))
  const none = await runMain(main, ['--released', join(empty, 'released')])
  t.equal(none.code, 2)
  t.match(none.stderr, /holds no released contract/)

  writeFileSync(join(empty, 'released', 'latest.yaml'), stringify(released()))
  const misnamed = await runMain(main, ['--released', join(empty, 'released')])
  t.equal(misnamed.code, 2)
  t.match(misnamed.stderr, /latest\.yaml: the name "latest" is not a version MAJOR\.MINOR\.PATCH/)
})

/**
 * The stability levels: `base` edits the released contract (written as the only release), then
 * `revise` edits a copy of it; the gate judges the revision on the day `now`.
 */
async function levels(t: Test, base: (spec: Spec) => void, revise: (spec: Spec) => void, now = new Date('2027-01-01T00:00:00Z')) {
  const spec = released()
  base(spec)
  const releases = tempDir(t)
  writeFileSync(join(releases, '1.0.0.yaml'), stringify(spec))
  revise(spec)
  const result = await checkBreaking({ spec: written(t, spec), released: releases, now })
  t.comment(result.lines.join('\n'))
  return { ...result, text: result.lines.join('\n') }
}

const createPet = (spec: Spec) => spec.paths['/pets'].post
const getPet = (spec: Spec) => spec.paths['/pets/{petId}'].get
const listPets = (spec: Spec) => spec.paths['/pets'].get
const requireTag = (spec: Spec) => {
  spec.components.schemas.NewPet.properties.tag = { type: 'string', maxLength: 20 }
  spec.components.schemas.NewPet.required.push('tag')
}
const deprecate = (operation: Spec, at: string, sunset: string) =>
  Object.assign(operation, {
    deprecated: true,
    'x-deprecated-at': at,
    'x-sunset': sunset,
    ...(operation['x-successor'] === undefined && { 'x-successor-reason': 'none' }),
  })

t.test('stability levels: what the gate lets through within the major version', async (t) => {
  t.jobs = 2
  t.test('experimental: an incompatible change passes, listed as allowed', async (t) => {
    const result = await levels(t, (spec) => (createPet(spec)['x-stability'] = 'experimental'), requireTag)
    t.ok(result.ok, 'passes')
    t.match(result.text, /^ {2}allowed \(experimental\): POST \/pets: Properties of `NewPet` became required: `tag`\./m)
  })
  t.test('an experimental change beside a breaking one: both listed, the gate fails', async (t) => {
    const result = await levels(
      t,
      (spec) => (createPet(spec)['x-stability'] = 'experimental'),
      (spec) => {
        requireTag(spec)
        spec.components.parameters.Limit.required = true
      },
    )
    t.notOk(result.ok)
    t.match(
      result.text,
      /`limit` query parameter became required[^]*\nand 1 change\(s\) allowed by their operations' lifecycle:\n {2}allowed \(experimental\): POST \/pets/,
    )
  })
  t.test('stable: the same change fails', async (t) => {
    const result = await levels(t, () => {}, requireTag)
    t.notOk(result.ok)
    t.match(result.text, /^ {2}POST \/pets: Properties of `NewPet` became required: `tag`\./m)
  })
  t.test('experimental: removal passes', async (t) => {
    const result = await levels(
      t,
      (spec) => (getPet(spec)['x-stability'] = 'experimental'),
      (spec) => delete spec.paths['/pets/{petId}'],
    )
    t.ok(result.ok)
    t.match(result.text, /allowed \(experimental\): \/pets\/\{petId\}: Path `\/pets\/\{petId\}` was removed/)
  })

  const beta = (sunset?: string) => (spec: Spec) => {
    createPet(spec)['x-stability'] = 'beta'
    if (sunset !== undefined) deprecate(createPet(spec), '2026-01-01', sunset)
  }
  t.test('beta: an incompatible change fails without a released deprecation', async (t) => {
    const result = await levels(t, beta(), requireTag)
    t.notOk(result.ok)
    t.match(result.text, /POST \/pets: Properties of `NewPet` became required: `tag`.* \[beta: only a released deprecation with a passed sunset lets it go\]/)
  })
  t.test('beta: it passes once the released sunset, 30 days after deprecation, has passed', async (t) => {
    const result = await levels(t, beta('2026-01-31'), requireTag, new Date('2026-01-31T00:00:00Z'))
    t.ok(result.ok, result.text)
    t.match(result.text, /allowed \(beta, sunset 2026-01-31 passed\): POST \/pets/)
  })
  t.test('beta: a sunset less than the notice period after the deprecation does not count', async (t) => {
    const result = await levels(t, beta('2026-01-30'), requireTag, new Date('2026-06-01T00:00:00Z'))
    t.notOk(result.ok)
    t.match(result.text, /\[beta: its sunset 2026-01-30 was less than 30 days after its deprecation 2026-01-01\]/)
  })

  const removeGetPet = (spec: Spec) => delete spec.paths['/pets/{petId}']
  t.test('stable: removing getPet before its sunset fails', async (t) => {
    const result = await levels(t, () => {}, removeGetPet, new Date('2030-12-04T23:59:59.999Z'))
    t.notOk(result.ok)
    t.match(result.text, /Path `\/pets\/\{petId\}` was removed\. .*\[stable, deprecated, but its sunset 2030-12-05 has not passed\]/)
  })
  t.test('stable: removing getPet from its sunset on passes', async (t) => {
    const result = await levels(t, () => {}, removeGetPet, new Date('2030-12-05T00:00:00Z'))
    t.ok(result.ok, result.text)
    t.match(result.text, /allowed \(stable, sunset 2030-12-05 passed\): \/pets\/\{petId\}: Path `\/pets\/\{petId\}` was removed/)
  })
  t.test('stable: after its sunset, getPet may go but not change', async (t) => {
    const result = await levels(
      t,
      () => {},
      (spec) => delete getPet(spec).responses['404'],
      new Date('2031-01-01T00:00:00Z'),
    )
    t.notOk(result.ok)
  })
  t.test('stable: a sunset less than 180 days after the deprecation does not count', async (t) => {
    const result = await levels(t, (spec) => deprecate(getPet(spec), '2026-11-21', '2027-05-19'), removeGetPet, new Date('2028-01-01T00:00:00Z'))
    t.notOk(result.ok)
    t.match(result.text, /\[stable: its sunset 2027-05-19 was less than 180 days after its deprecation 2026-11-21\]/)
  })

  t.test('promotion is compatible: experimental to beta to stable', async (t) => {
    const result = await levels(
      t,
      (spec) => {
        createPet(spec)['x-stability'] = 'experimental'
        listPets(spec)['x-stability'] = 'beta'
      },
      (spec) => {
        createPet(spec)['x-stability'] = 'beta'
        delete listPets(spec)['x-stability']
      },
    )
    t.ok(result.ok, result.text)
    t.strictSame(result.lines, ['compatible with the released 1.0.0'])
  })
  t.test('demotion is breaking', async (t) => {
    const result = await levels(
      t,
      (spec) => (createPet(spec)['x-stability'] = 'beta'),
      (spec) => (createPet(spec)['x-stability'] = 'experimental'),
    )
    t.notOk(result.ok)
    t.match(result.text, /^ {2}POST \/pets: demoted from beta to experimental \(x-stability\)$/m)
    const fromStable = await levels(
      t,
      () => {},
      (spec) => (listPets(spec)['x-stability'] = 'beta'),
    )
    t.match(fromStable.text, /^ {2}GET \/pets: demoted from stable to beta/m)
  })

  t.test('a released sunset moved later passes; moved earlier, or shortened by re-deprecating, fails', async (t) => {
    const later = await levels(
      t,
      () => {},
      (spec) => (getPet(spec)['x-sunset'] = '2031-06-01'),
    )
    t.ok(later.ok, later.text)
    const earlier = await levels(
      t,
      () => {},
      (spec) => (getPet(spec)['x-sunset'] = '2030-06-01'),
    )
    t.notOk(earlier.ok)
    t.match(earlier.text, /^ {2}GET \/pets\/\{petId\}: x-sunset moved earlier, from 2030-12-05 to 2030-06-01: clients were promised that date$/m)
    const redeprecated = await levels(
      t,
      () => {},
      (spec) => deprecate(getPet(spec), '2027-01-01', '2029-01-01'),
    )
    t.notOk(redeprecated.ok)
    t.match(redeprecated.text, /x-sunset moved earlier, from 2030-12-05 to 2029-01-01/)
  })

  t.test("a $ref switched to another component is judged by its operation, not by that component's other users", async (t) => {
    const result = await levels(
      t,
      (spec) => {
        createPet(spec)['x-stability'] = 'experimental'
        spec.components.headers.Location.schema.pattern = '^/v1/pets/[0-9]+$'
        spec.components.headers.NextPageLink.schema.pattern = '^<[^>]+>; rel="next"$'
      },
      (spec) => (createPet(spec).responses['201'].headers.Location = { $ref: '#/components/headers/NextPageLink' }),
    )
    t.ok(result.ok, "NextPageLink is listPets' (stable) as it was")
    t.match(result.text, /^ {2}allowed \(experimental\): POST \/pets: `pattern` changed/m)
  })

  t.test('deprecating a paged list changes its Link with it; a Link changed otherwise breaks', async (t) => {
    // (a release whose Link has a pattern, which the lifecycle links joined to the next page's change)
    const link = (pattern: string) => (operation: Spec) =>
      (operation.responses['200'].headers.Link = { required: true, schema: { type: 'string', maxLength: 500, pattern } })
    const nextPage = link('^<[^>]+>; rel="next"$')
    const lifecycleLink = link('^<[^>]+>; rel="[a-z-]+"')
    const released = (spec: Spec) => nextPage(listPets(spec))
    const deprecated = await levels(t, released, (spec) => lifecycleLink(deprecate(listPets(spec), '2027-01-01', '2027-07-01')))
    t.ok(deprecated.ok, deprecated.text)
    t.match(deprecated.text, /^ {2}allowed \(deprecated: its Link carries its lifecycle links\): GET \/pets: `pattern` changed from/m)
    const alone = await levels(t, released, (spec) => lifecycleLink(listPets(spec)))
    t.notOk(alone.ok, 'without a deprecation')
    t.match(alone.text, /^ {2}GET \/pets: `pattern` changed from .*headers\/Link\/schema\/pattern\)$/m)
    const before = await levels(
      t,
      (spec) => nextPage(getPet(spec)),
      (spec) => lifecycleLink(getPet(spec)),
    )
    t.notOk(before.ok, 'of an operation the release deprecated already')
  })

  t.test('a schema is judged by its most stable user', async (t) => {
    const dropStatus = (spec: Spec) => delete pet(spec).properties.status
    const mixed = await levels(
      t,
      (spec) => {
        createPet(spec)['x-stability'] = 'experimental'
        getPet(spec)['x-stability'] = 'experimental'
      },
      dropStatus,
    )
    t.notOk(mixed.ok, "Pet is also listPets' (stable)")
    t.match(mixed.text, /Property `status` of `Pet` was removed/)
    const allExperimental = await levels(
      t,
      (spec) => {
        for (const operation of [createPet(spec), getPet(spec), listPets(spec)]) operation['x-stability'] = 'experimental'
      },
      dropStatus,
    )
    t.ok(allExperimental.ok, allExperimental.text)
    t.match(allExperimental.text, /allowed \(experimental\): .*Property `status` of `Pet` was removed/)
  })
})

t.test('each served major against the one before it: every breaking difference covered by a declared version change', async (t) => {
  const served = loadContracts()
  const coverage = await checkCoverage(served)
  t.ok(coverage.ok, coverage.lines.join('\n'))
  t.strictSame(
    coverage.lines.map((line) => line.replace(/ \d+ breaking/, ' N breaking')),
    served
      .slice(1)
      .map(
        (newer, i) =>
          `${newer.file} against ${served[i]!.file}: each of its N breaking difference(s) covered by the version changes of version ${served[i]!.version[0]}`,
      ),
  )
  // the next major, a copy of the newest under its own segment: nothing to cover but that segment
  const newest = served.at(-1)!
  const major = newest.version[0]
  const next = (edit: (document: Spec) => void = () => {}) => {
    const document = structuredClone(newest.document) as Spec
    document.info.version = `${major + 1}.0.0`
    document.servers = document.servers.map((server: { url: string }) => ({ ...server, url: server.url.replace(/\/v\d+$/, `/v${major + 1}`) }))
    for (const header of Object.values<Spec>(document.components.headers))
      if (typeof header.schema?.pattern === 'string') header.schema.pattern = header.schema.pattern.replaceAll(`/v${major}/`, `/v${major + 1}/`)
    edit(document)
    return contractOf(document, { file: 'openapi-next.yaml' })
  }
  const copy = await checkCoverage([newest, next()])
  t.ok(copy.ok, copy.lines.join('\n'))
  // one that drops Pet.status, with no change declared: refused, the change to write named
  const dropped = await checkCoverage([
    newest,
    next((document) => {
      delete document.components.schemas.Pet.properties.status
    }),
  ])
  t.notOk(dropped.ok)
  t.match(
    dropped.lines.join('\n'),
    new RegExp(
      `openapi-next\\.yaml against ${escaped(newest.file)}: \\d+ of its \\d+ breaking difference\\(s\\) covered by no version change.*\\n {2}GET /pets, response 200 body \`status\`: Property \`status\` was removed\\. \\(property-removed at #/components/schemas/Pet/properties/status\\): no change of version ${major} covers it: write schemas: \\{ Pet: \\{ down \\} \\}`,
    ),
  )
  t.match(
    dropped.lines.join('\n'),
    /\n {2}event pet\.created, payload `data\.status`: Property `status` of `data` was removed\. .*: write schemas: \{ Pet: \{ down \} \}/,
    'in the events too',
  )
})
