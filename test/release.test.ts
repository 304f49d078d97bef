/**
 * npm run release -- VERSION, on copies of openapi.yaml, contract/released/ and the changelog in
 * a temporary folder (the repository's contract/ is never touched).
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import t, { type Test } from 'tap'
import { parse, stringify } from 'yaml'
import { releasedDir } from '../scripts/check-breaking.js'
import { bundledSpec, bundleText, majorOfSource } from '../src/contract/load.js'
import { filesIn, generate } from '../scripts/generate.js'
import { correct, main, release, servedBeside } from '../scripts/release.js'
import { withVersion } from '../src/contract/version.js'
import { changelogPath, generatedDir, projectRoot, specPath } from '../src/core/paths.js'
import { specPaths } from '../src/contract/load.js'
import { runMain } from './helpers/main.js'
import { run } from './helpers/processes.js'

t.setTimeout(900_000)

/** A copy of the project's contract files as they were when 1.0.0 was the only release (the
 * oldest major's document as it is now, 1.0.0 alone released, the changelog's 1.0.0 entry
 * alone); `release` of it. The spec is the document as served, one file to edit; with `overlay`,
 * as written: its overlay, and openapi.yaml it applies to. */
function project(t: Test, { overlay = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-release-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const oldest = specPaths[0]!
  const files = {
    spec: join(dir, overlay ? relative(projectRoot, oldest) : 'openapi.yaml'),
    released: join(dir, 'released'),
    changelog: join(dir, 'CHANGELOG.md'),
  }
  if (overlay) {
    cpSync(specPath, join(dir, 'openapi.yaml'))
    cpSync(join(projectRoot, 'contract', 'versions'), join(dir, 'contract', 'versions'), { recursive: true })
  } else writeFileSync(files.spec, bundleText(bundledSpec(oldest).document))
  mkdirSync(files.released)
  cpSync(join(releasedDir, '1.0.0.yaml'), join(files.released, '1.0.0.yaml'))
  const changelog = readFileSync(changelogPath, 'utf8')
  writeFileSync(files.changelog, changelog.slice(0, changelog.indexOf('## 1.')) + changelog.slice(changelog.indexOf('## 1.0.0')))
  const untouched = () => ({
    spec: readFileSync(files.spec, 'utf8'),
    released: readdirSync(files.released).sort(),
    changelog: readFileSync(files.changelog, 'utf8'),
  })
  // (where release makes generated/ anew: beside the spec)
  return { ...files, untouched, now: new Date('2026-11-25T12:00:00Z'), generated: join(dir, 'generated') }
}

const repoState = () => ({
  spec: specPaths.map((path) => readFileSync(path, 'utf8')),
  released: readdirSync(releasedDir).sort(),
  changelog: readFileSync(changelogPath, 'utf8'),
  generated: filesIn(generatedDir).map((file) => readFileSync(join(generatedDir, file), 'utf8')),
})
const before = repoState()

t.test('refusals write nothing: not a version, not above the last release, a major without its segment', async (t) => {
  const files = project(t)
  const state = files.untouched()
  // (the major after the newest: the repository's own sources, which a refusal leaves as they are)
  const unmade = majorOfSource(specPath)! + 1
  await t.rejects(
    release({ version: `${unmade}.0.0` }),
    {
      message: `no served document is of major version ${unmade}: make it first (docs/changing-the-api.md), beside ${specPaths.map((path) => relative(projectRoot, path)).join(', ')}`,
    },
    'a major without its document',
  )
  await t.rejects(release({ ...files, version: 'v1.1' }), { message: '"v1.1" is not a version MAJOR.MINOR.PATCH' }, 'a usage error')
  t.strictSame(await release({ ...files, version: '1.0.0' }), { ok: false, lines: ['1.0.0 is not above the last release, 1.0.0'] })
  t.strictSame(await release({ ...files, version: '0.9.0' }), { ok: false, lines: ['0.9.0 is not above the last release, 1.0.0'] })
  const major = await release({ ...files, version: '2.0.0' })
  t.notOk(major.ok)
  t.equal(major.lines[0], 'release 2.0.0 refused by the breaking-change gate:')
  t.match(major.lines.join('\n'), /server https:\/\/api\.petstore\.example\.com\/v1 must end in \/v2/)
  t.strictSame(files.untouched(), state)
})

t.test('a new major version with its segment: released, its entry against the last release lists nothing the lifecycle allowed', async (t) => {
  const files = project(t)
  const spec = readFileSync(files.spec, 'utf8').replaceAll(/(url: https:\/\/[a-z.-]+)\/v1$/gm, '$1/v2')
  writeFileSync(files.spec, spec)
  const major = await release({ ...files, version: '2.0.0' })
  t.ok(major.ok, major.lines.join('\n'))
  t.match(major.lines, ['info.version 2.0.0 starts major version 2: breaking changes to 1.0.0 are allowed'])
  const changelog = readFileSync(files.changelog, 'utf8')
  t.match(changelog, /^## 2\.0\.0 \(2026-11-25\)$/m)
  t.notMatch(changelog, /Incompatible changes allowed by their lifecycle/)
})

t.test('a refused change: the gate names it, nothing is written', async (t) => {
  const files = project(t)
  const spec = parse(readFileSync(files.spec, 'utf8'))
  spec.components.parameters.Limit.required = true
  writeFileSync(files.spec, stringify(spec))
  const state = files.untouched()
  const refused = await release({ ...files, version: '1.1.0' })
  t.notOk(refused.ok)
  t.match(refused.lines.join('\n'), /`limit` query parameter became required/)
  t.strictSame(files.untouched(), state)
})

t.test('release 1.1.0, then 1.2.0: the contract, info.version and the changelog entries', async (t) => {
  const files = project(t)
  const source = readFileSync(files.spec, 'utf8')
  const first = await release({ ...files, version: '1.1.0' })
  t.ok(first.ok, first.lines.join('\n'))
  t.match(
    first.lines.at(-1),
    /^released 1\.1\.0: .*released\/1\.1\.0\.yaml, info\.version of .*openapi\.yaml, its entry in .*CHANGELOG\.md, and .*generated\/ made anew from it$/,
  )
  t.strictSame((await generate(files.generated, servedBeside(files.spec))).changed, [], 'generated/ beside the spec is as npm run generate makes it')
  const written = readFileSync(files.spec, 'utf8')
  t.equal(written, withVersion(source, '1.1.0'), 'only info.version changed')
  t.equal(parse(written).info.version, '1.1.0')
  t.equal(readFileSync(join(files.released, '1.1.0.yaml'), 'utf8'), written, 'the released contract is the spec')
  const changelog = readFileSync(files.changelog, 'utf8')
  t.match(changelog, /## 1\.1\.0 \(2026-11-25\)\n\n### Added\n\n- `listOrders` \(GET \/store\/orders\), experimental\n/)
  t.match(
    changelog,
    /### New refusals \(a request the release before took may be refused now\)\n\n(- .*\n)*- GET \/pets, response 429: Response 429 was added: a request version 1\.0\.0 took may be refused\./,
    'a new 4xx: a refusal, never a compatible change',
  )
  t.match(
    changelog,
    /### Compatible changes\n\n(- .*\n)*- GET \/pets: added .*headers [^.]*RateLimit[^.]* on responses 200, /,
    'a header added to several answers, once with their statuses',
  )
  t.match(changelog, '- tags: added tag store, tag webhooks\n', 'list items by their names, not their indexes')
  t.match(
    changelog,
    /### Changes a diff rates incompatible, which break no client\n\n(- .*\n)*- GET \/pets: .*listPets needs pets:read, which every key issued before roles existed holds/,
    'the roles the operations of 1.0.0 now name, with why no client fails',
  )
  t.ok(changelog.indexOf('## 1.1.0') < changelog.indexOf('## 1.0.0'), 'the new entry on top of the old ones')
  t.ok(changelog.endsWith(readFileSync(changelogPath, 'utf8').slice(readFileSync(changelogPath, 'utf8').indexOf('## 1.0.0'))), "1.0.0's entry kept as it was")

  // 1.2.0: an experimental change, a promotion, a new deprecation with a brownout (of a paged
  // list: its markers, its 410, and on its 200 the lifecycle headers, its Link the lifecycle one)
  const spec = parse(written)
  const order = spec.components.schemas.Order
  delete order.properties.placedAt
  order.required = order.required.filter((name: string) => name !== 'placedAt')
  spec.paths['/store/orders/{orderId}'].get['x-stability'] = 'beta'
  const listOrders = spec.paths['/store/orders'].get
  Object.assign(listOrders, {
    deprecated: true,
    'x-deprecated-at': '2026-11-25',
    'x-sunset': '2027-06-01',
    // (getOrder's URL is a template, no request a client can send: not a successor)
    'x-successor-reason': 'each order is read by its id, with getOrder',
    'x-brownouts': [{ start: '2027-05-01T12:00:00Z', end: '2027-05-01T13:00:00Z' }],
  })
  listOrders.responses['410'] = { $ref: '#/components/responses/Gone' }
  Object.assign(listOrders.responses['200'].headers, {
    Deprecation: { $ref: '#/components/headers/Deprecation' },
    Sunset: { $ref: '#/components/headers/Sunset' },
    Link: { $ref: '#/components/headers/LifecycleLink' },
  })
  writeFileSync(files.spec, stringify(spec))
  const second = await release({ ...files, version: '1.2.0' })
  t.ok(second.ok, second.lines.join('\n'))
  const entry = readFileSync(files.changelog, 'utf8')
  t.comment(entry.slice(0, entry.indexOf('## 1.1.0')))
  t.match(
    entry,
    /## Deprecations and sunsets in force\n\n- version 1: `listOrders` \(GET \/store\/orders\): deprecated on 2026-11-25; removed on 2027-06-01 \(requests answer 410 from 00:00 UTC that day\); no successor; brownouts \(410 already\): 2027-05-01T12:00:00Z to 2027-05-01T13:00:00Z\n- version 1: `getPet` \(GET \/pets\/\{petId\}\): .*\n/,
    'every deprecation in force, the nearest sunset first',
  )
  t.match(
    entry,
    /## 1\.2\.0 \(2026-11-25\)\n\n### Deprecated\n\n- `listOrders` .*\n\n### Stability\n\n- `getOrder` \(GET \/store\/orders\/\{orderId\}\): experimental to beta\n/,
  )
  t.match(
    entry,
    /### Incompatible changes allowed by their lifecycle\n\n(- allowed \(experimental\): .*\n)*- allowed \(experimental\): GET \/store\/orders: Property `placedAt` of `Order` was removed/,
  )
  t.ok(existsSync(join(files.released, '1.2.0.yaml')))
})

t.test('an older major, an overlay: the version it gives is set, the release is the document as served', async (t) => {
  const files = project(t, { overlay: true })
  const own = readFileSync(files.spec, 'utf8')
  // (the version the oldest's overlay gives now: its last release)
  const given = bundledSpec(specPaths[0]!).document.info.version
  const released = await release({ ...files, version: '1.1.0' })
  t.ok(released.ok, released.lines.join('\n'))
  const written = readFileSync(files.spec, 'utf8')
  t.equal(written, withVersion(own, '1.1.0'), 'only the versions changed')
  t.strictSame(
    own.split('\n').filter((line) => !written.split('\n').includes(line)),
    [`  version: ${given}`, `      version: ${given}`],
    "the overlay's own version and the one its action on $.info gives",
  )
  const served = bundledSpec(files.spec)
  t.equal(served.document.info.version, '1.1.0')
  t.equal(readFileSync(join(files.released, '1.1.0.yaml'), 'utf8'), bundleText(served.document), 'the document as served, released')
  t.strictSame((await generate(files.generated, servedBeside(files.spec))).changed, [], 'generated/ beside it is as npm run generate makes it')
  t.throws(() => withVersion('overlay: 1.0.0\ninfo:\n  version: 1.0.0\nactions: []\n', '1.1.0'), /the overlay has no action on \$\.info that sets version/)
})

t.test('a generated/ that cannot be made anew: released all the same, the last line says what to run', async (t) => {
  const files = project(t)
  writeFileSync(files.generated, 'a file in the way')
  const released = await release({ ...files, version: '1.1.0' })
  t.ok(released.ok, released.lines.join('\n'))
  t.match(released.lines.at(-1), /^released 1\.1\.0: .*, but .*generated\/ could not be made anew \(.+\): run npm run generate$/)
})

t.test('npm run release: exit 0 released, 1 refused, 2 a usage error', async (t) => {
  const files = project(t)
  const state = files.untouched()
  const args = ['--spec', files.spec, '--released', files.released, '--changelog', files.changelog, '--now', '2026-11-25']
  const usage = await runMain(main, [])
  t.equal(usage.code, 2)
  t.match(usage.stderr, /give one VERSION/)
  // the one real process of the script: its exit status and streams, the one line of its refusal
  const notVersion = await run(t, 'scripts/release.ts', ['v1.1', ...args])
  t.equal(notVersion.code, 2)
  t.equal(notVersion.stderr, 'release: "v1.1" is not a version MAJOR.MINOR.PATCH\n')
  t.equal(notVersion.stdout, '')
  const badDay = await runMain(main, ['1.0.1', ...args.slice(0, -1), 'tomorrow'])
  t.equal(badDay.code, 2)
  t.equal(badDay.stderr, 'release: --now tomorrow is not a date YYYY-MM-DD\n')
  t.strictSame(files.untouched(), state, 'a usage error writes nothing')
  const refused = await runMain(main, ['1.0.0', ...args])
  t.equal(refused.code, 1)
  t.equal(refused.stdout, '1.0.0 is not above the last release, 1.0.0\n')
  const released = await runMain(main, ['1.0.1', ...args])
  t.equal(released.code, 0, released.stderr)
  t.match(released.stdout, /^compatible with the released 1\.0\.0\nreleased 1\.0\.1: /)
  writeFileSync(files.spec, 'openapi: 3.1.0\n')
  const unreadable = await runMain(main, ['1.0.2', ...args])
  t.equal(unreadable.code, 2)
  t.match(unreadable.stderr, /^release: openapi\.yaml has no info\.version line to set\n$/)
})

t.test('--dry-run: the gate and the entry said, nothing written', async (t) => {
  const files = project(t)
  const state = files.untouched()
  const dry = await release({ ...files, version: '1.1.0', dryRun: true })
  t.ok(dry.ok, dry.lines.join('\n'))
  t.match(
    dry.lines.join('\n'),
    /^compatible with the released 1\.0\.0\nwould release 1\.1\.0 \(--dry-run: nothing written\); its entry:\n\n## 1\.1\.0 \(2026-11-25\)\n\n### Added\n/,
  )
  t.strictSame(files.untouched(), state)
  t.notOk(existsSync(files.generated), 'generated/ not made')
  const cli = await runMain(main, [
    '1.1.0',
    '--dry-run',
    '--spec',
    files.spec,
    '--released',
    files.released,
    '--changelog',
    files.changelog,
    '--now',
    '2026-11-25',
  ])
  t.equal(cli.code, 0, cli.stderr)
  t.match(cli.stdout, /would release 1\.1\.0 \(--dry-run: nothing written\)/)
  t.strictSame(files.untouched(), state)
})

t.test('--correct: a published entry written anew from the released contracts, its date kept, its note under its heading', async (t) => {
  // the repository's releases and changelog, copied
  const dir = mkdtempSync(join(tmpdir(), 'petstore-correct-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const released = join(dir, 'released')
  cpSync(releasedDir, released, { recursive: true })
  const changelog = join(dir, 'CHANGELOG.md')
  const published = readFileSync(changelogPath, 'utf8').replace(/\n\*Corrected: .*\*\n/, '')
  writeFileSync(changelog, published)
  const files = { released, changelog }
  const releasedFiles = () => readdirSync(released).map((name) => readFileSync(join(released, name), 'utf8'))
  const before = releasedFiles()

  t.strictSame(await correct({ ...files, version: '9.0.0', note: 'x' }), {
    ok: false,
    lines: [`9.0.0 was not released: ${relative(projectRoot, join(released, '9.0.0.yaml'))} does not exist`],
  })
  t.strictSame(await correct({ ...files, version: '2.0.0', note: 'two\nlines' }), {
    ok: false,
    lines: ['--correct takes one line: what the entry missed before'],
  })
  t.strictSame(await correct({ ...files, version: '2.0.0', note: ' ' }), { ok: false, lines: ['--correct takes one line: what the entry missed before'] })
  t.equal(readFileSync(changelog, 'utf8'), published, 'a refusal writes nothing')

  const dry = await correct({ ...files, version: '2.0.0', note: 'the events were left out.', dryRun: true })
  t.match(
    dry.lines.join('\n'),
    /^would correct the entry of 2\.0\.0 \(--dry-run: nothing written\):\n\n## 2\.0\.0 \(2026-11-27\)\n\n\*Corrected: the events were left out\.\*\n/,
  )
  t.equal(readFileSync(changelog, 'utf8'), published, 'a dry run writes nothing')

  const corrected = await correct({ ...files, version: '2.0.0', note: 'the events were left out.' })
  t.ok(corrected.ok)
  t.match(corrected.lines, [/^corrected the entry of 2\.0\.0 in .*CHANGELOG\.md, from .*1\.2\.0\.yaml and .*2\.0\.0\.yaml$/])
  const text = readFileSync(changelog, 'utf8')
  const entryOf = (version: string, of: string) => of.slice(of.indexOf(`## ${version} (`), of.indexOf('\n## ', of.indexOf(`## ${version} (`)) + 1)
  t.equal(
    entryOf('2.0.0', text),
    entryOf('2.0.0', readFileSync(changelogPath, 'utf8')).replace(/\*Corrected: .*\*/, '*Corrected: the events were left out.*'),
    "the repository's entry is what the engine writes",
  )
  t.match(
    text,
    /^- GET \/pets, response 200 body `category`; POST \/pets, response 201 body `category`; event pet\.created, payload `data\.category`; event pet\.status_changed, payload `data\.category`: Property `categoryId` was renamed to `category`/m,
  )
  t.equal(text.replace(entryOf('2.0.0', text), ''), published.replace(entryOf('2.0.0', published), ''), 'the rest of the changelog as it was')
  t.strictSame(releasedFiles(), before, 'the released contracts untouched')

  // the last entry (the first release, compared with nothing) and a later one within a major (what the gate allowed on its day)
  const first = await correct({ ...files, version: '1.0.0', note: 'nothing was missing; written anew.' })
  t.ok(first.ok)
  t.ok(
    readFileSync(changelog, 'utf8').endsWith(
      '*Corrected: nothing was missing; written anew.*\n\n### Added\n\n- `listPets` (GET /pets), stable\n- `createPet` (POST /pets), stable\n- `getPet` (GET /pets/{petId}), stable\n\n### Deprecated\n\n- `getPet` (GET /pets/{petId}): deprecated on 2026-11-21; removed on 2030-12-05 (requests answer 410 from 00:00 UTC that day); use `listPets` instead\n',
    ),
  )
  const cli = await runMain(main, ['1.1.0', '--correct', 'the refusals were listed as compatible.', '--released', released, '--changelog', changelog])
  t.equal(cli.code, 0, cli.stderr)
  const minor = entryOf('1.1.0', readFileSync(changelog, 'utf8'))
  t.match(minor, /### New refusals \(a request the release before took may be refused now\)\n\n- GET \/pets, response 403: Response 403 was added/)
  t.match(minor, /### Changes a diff rates incompatible, which break no client\n\n- GET \/pets: limit is already 1\.\.100/)
  writeFileSync(changelog, '# no entries\n')
  t.strictSame(await correct({ ...files, version: '2.0.0', note: 'x' }), {
    ok: false,
    lines: [`${relative(projectRoot, changelog)} has no entry of 2.0.0 to correct`],
  })
})

t.test("the repository's contract files are untouched by all of the above", async (t) => {
  t.strictSame(repoState(), before)
})
