/**
 * npm run new-major, on a copy of the project's contract (openapi.yaml and the overlays) in a
 * temporary folder: openapi.yaml becomes the next major, and every older major is served as it
 * was, the newest-but-one by the overlay the command writes.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { parse } from 'yaml'
import { jsonPath, main, newMajor, nextMajorText, overlayActions } from '../scripts/new-major.js'
import { bundledSpec, loadContracts, specPaths, specPathsIn } from '../src/contract/load.js'
import { servedTogether } from '../src/contract/served.js'
import { projectRoot } from '../src/core/paths.js'
import { applyOverlay } from '../src/contract/overlay.js'
import { runMain } from './helpers/main.js'
import { run } from './helpers/processes.js'

/** A folder holding a copy of the project's openapi.yaml and overlays. */
function contractCopy(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-new-major-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(join(projectRoot, 'openapi.yaml'), join(dir, 'openapi.yaml'))
  cpSync(join(projectRoot, 'contract', 'versions'), join(dir, 'contract', 'versions'), { recursive: true })
  return dir
}

/** The contract of one source of a copy. */
const loadContractsOf = (spec: string) => loadContracts([spec], false)[0]!

const served = loadContracts()
const newest = served.at(-1)!
const major = newest.version[0]

t.test('the next major: openapi.yaml at /vN+1, every older major served as it was', async (t) => {
  const dir = contractCopy(t)
  // (a line of prose that names the version by its number, whatever openapi.yaml's own prose says)
  writeFileSync(join(dir, 'openapi.yaml'), `${readFileSync(join(dir, 'openapi.yaml'), 'utf8')}# This is version ${major}.\n`)
  const source = readFileSync(join(dir, 'openapi.yaml'), 'utf8')
  const prose = source.split('\n').filter((line) => new RegExp(`\\bversion ${major}\\b`, 'i').test(line)).length
  const made = newMajor(dir)
  t.ok(made.ok, made.lines.join('\n'))
  t.match(
    made.lines[0],
    new RegExp(
      `^openapi\\.yaml is version ${major + 1}\\.0\\.0, served at /v${major + 1}; contract/versions/${major}\\.overlay\\.yaml gives version ${major} back \\(\\d+ actions\\)$`,
    ),
  )
  t.equal(
    made.lines[1],
    `openapi.yaml names version ${major} in ${prose} line(s) of prose: say what version ${major + 1} is there`,
    'the prose that names the version by its number, said',
  )
  const specs = specPathsIn(dir)
  t.equal(specs.length, specPaths.length + 1, 'one more served document')
  const documents = specs.map((spec) => bundledSpec(spec).document)
  t.strictSame(
    documents.slice(0, -1),
    served.map(({ document }) => document),
    'each older major, as it is served now',
  )
  const next = documents.at(-1)!
  t.equal(next.info.version, `${major + 1}.0.0`)
  t.strictSame(
    next.servers!.map(({ url }) => url.slice(-3)),
    newest.document.servers!.map(() => `/v${major + 1}`),
  )
  const text = readFileSync(join(dir, 'openapi.yaml'), 'utf8')
  t.equal(text, nextMajorText(source, major), 'openapi.yaml as written, its comments kept')
  t.ok(text.endsWith(`# This is version ${major}.\n`), 'its prose left to the server team')
  t.match(text, /^# The pet store service's contract/, 'its comments')
  // (the API's description is every version's: the command leaves it to the server team)
  const { description, ...info } = (parse(text) as { info: { description: string } }).info
  t.equal(description, (parse(source) as { info: { description: string } }).info.description, "the API's description, as it was")
  t.notMatch(JSON.stringify({ ...(parse(text) as object), info }), new RegExp(`/v${major}(?![0-9])`), `no /v${major} left elsewhere`)
  // (the documents load and are served together: versions, roles and limits agree)
  t.equal(servedTogether(specs.map((spec) => loadContractsOf(spec))).length, specs.length)

  const again = newMajor(dir)
  t.ok(again.ok, 'and the next: a second overlay in the chain')
  t.strictSame(
    specPathsIn(dir)
      .slice(0, -1)
      .map((spec) => bundledSpec(spec).document),
    [...served.map(({ document }) => document), next],
    'each major before it, as it was',
  )
})

t.test('refused, nothing written: an overlay of that major already there, a version that is none, what it cannot set back', async (t) => {
  const dir = contractCopy(t)
  const before = readFileSync(join(dir, 'openapi.yaml'), 'utf8')
  writeFileSync(join(dir, 'contract', 'versions', `${major}.overlay.yaml`), 'there')
  t.strictSame(newMajor(dir), { ok: false, lines: [`contract/versions/${major}.overlay.yaml is there already: version ${major} is an older major already`] })
  t.equal(readFileSync(join(dir, 'openapi.yaml'), 'utf8'), before)

  const bare = mkdtempSync(join(tmpdir(), 'petstore-new-major-'))
  t.teardown(() => rmSync(bare, { recursive: true, force: true }))
  writeFileSync(join(bare, 'openapi.yaml'), 'info:\n  title: t\n  version: two\n')
  t.strictSame(newMajor(bare), { ok: false, lines: ['openapi.yaml: info.version "two" is not MAJOR.MINOR.PATCH'] })
  // a list of lists that names the segment: Overlay 1.0 cannot set back one of its entries
  writeFileSync(join(bare, 'openapi.yaml'), "info:\n  title: t\n  version: 1.0.0\nx-urls:\n  - ['/v1/a']\n")
  t.strictSame(newMajor(bare), {
    ok: false,
    lines: ['contract/versions/1.overlay.yaml would not give version 1 back: openapi.yaml holds what this command cannot tell apart; make the major by hand'],
  })
  t.notOk(existsSync(join(bare, 'contract')), 'nothing written')
})

t.test('the actions: each object that holds a changed value, updated; a list of strings written whole', async (t) => {
  const older = { info: { version: '1.0.0', title: 'same' }, servers: [{ url: '/v1' }], tags: ['/v1', 'x'], deep: { a: { b: '/v1' } } }
  const newer = { info: { version: '2.0.0', title: 'same' }, servers: [{ url: '/v2' }], tags: ['/v2', 'x'], deep: { a: { b: '/v2' } } }
  const actions = overlayActions(older, newer)
  t.strictSame(actions, [
    { target: "$['info']", update: { version: '1.0.0' } },
    { target: "$['servers'][0]", update: { url: '/v1' } },
    { target: "$['tags']", description: 'tags, written whole', remove: true },
    { target: '$', description: 'tags, as it was', update: { tags: ['/v1', 'x'] } },
    { target: "$['deep']['a']", update: { b: '/v1' } },
  ])
  t.strictSame(applyOverlay(newer, { overlay: '1.0.0', info: { title: 't', version: '1' }, actions }).document, { ...older, tags: older.tags })
  t.equal(jsonPath(['paths', "/it's", 'get', 0]), "$['paths']['/it\\'s']['get'][0]", 'a quote in a key, escaped')
  t.equal(jsonPath(['a\\b']), "$['a\\\\b']", 'a backslash too')
  t.equal(
    nextMajorText('info:\n  title: t\n  version: 2.3.4\nservers:\n  - url: https://x/v2\nx: /v20 /v2/a /v2\n', 2),
    'info:\n  title: t\n  version: 3.0.0\nservers:\n  - url: https://x/v3\nx: /v20 /v3/a /v3\n',
  )
  t.equal(
    nextMajorText('info:\n  description: |\n    At /v2.\n  version: 2.0.0\nx: /v2\n', 2),
    'info:\n  description: |\n    At /v2.\n  version: 3.0.0\nx: /v3\n',
    "the API's description kept",
  )
})

t.test('npm run new-major: exit 0 made, 1 refused, 2 a usage error', async (t) => {
  const dir = contractCopy(t)
  const usage = await runMain(main, ['--major', '3'])
  t.equal(usage.code, 2)
  t.match(usage.stderr, /^new-major: Unknown option '--major'/)
  // the one real process of the script: its exit status and streams
  const made = await run(t, 'scripts/new-major.ts', ['--dir', dir])
  t.equal(made.code, 0, made.stderr)
  t.match(made.stdout, new RegExp(`^openapi\\.yaml is version ${major + 1}\\.0\\.0`))
  t.equal(made.stderr, '')
  mkdirSync(join(dir, 'contract', 'versions'), { recursive: true })
  writeFileSync(join(dir, 'contract', 'versions', `${major + 1}.overlay.yaml`), 'there')
  const refused = await runMain(main, ['--dir', dir])
  t.equal(refused.code, 1)
  t.equal(refused.stdout, '')
  t.match(refused.stderr, /is there already/)
  t.equal(parse(readFileSync(join(dir, 'openapi.yaml'), 'utf8')).info.version, `${major + 1}.0.0`, 'left as the first run made it')
})
