/**
 * The overlays that make each older major version from the next newer one
 * (contract/versions/N.overlay.yaml, Overlay Specification 1.0.0), and their applier
 * (src/contract/overlay.ts): the major after the oldest as served, with the oldest's overlay
 * applied, is the oldest as served; then each rule of the applier on small documents of its own.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import t from 'tap'
import { parse } from 'yaml'
import { loadContract, loadContracts, majorOfSource, newestSpecPath, specPaths, specPathsIn } from '../src/contract/load.js'
import { type Contract } from '../src/contract/model.js'
import { applyOverlay } from '../src/contract/overlay.js'
import { generatedDir, projectRoot } from '../src/core/paths.js'
import { escaped } from './helpers/spec.js'

const read = (file: string): unknown => parse(readFileSync(file, 'utf8'))

/** the paths (`/`-joined keys) of the objects whose keys come in another order in `b` than in `a` */
function keyOrderDifferences(a: unknown, b: unknown, path = ''): string[] {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return []
  const keys = Object.keys(a)
  const here = Array.isArray(a) || keys.join('\n') === Object.keys(b).join('\n') ? [] : [path]
  return [...here, ...keys.flatMap((key) => keyOrderDifferences(a[key as keyof typeof a], b[key as keyof typeof b], `${path}/${key}`))]
}

/** the small overlay of `actions` */
const overlay = (...actions: unknown[]) => ({ overlay: '1.0.0', info: { title: 'test', version: '1' }, actions })

/** The served documents, oldest first: the oldest is the next one's document with its overlay applied. */
const [oldest, next] = loadContracts()
/** the document of a served major, as generated/ holds it */
const generated = ({ version }: Contract): unknown => read(join(generatedDir, `v${version[0]}`, 'openapi.yaml'))
/** the released contract of a served document's version (its last release) */
const releasedOf = (document: unknown): unknown =>
  read(join(projectRoot, 'contract', 'released', `${(document as { info: { version: string } }).info.version}.yaml`))

t.test("the next major as served, with the oldest's overlay applied, is the oldest as served: its last release, key for key", async (t) => {
  const nextServed = generated(next!)
  const oldestServed = generated(oldest!)
  const { document, unmatched } = applyOverlay(nextServed, read(join(projectRoot, oldest!.file)), oldest!.file)
  t.strictSame(document, oldestServed, 'the same document')
  t.strictSame(keyOrderDifferences(document, oldestServed), [], 'in the same order')
  t.strictSame(unmatched, [], 'every action selects something in the next major')
  t.strictSame(nextServed, generated(next!), 'the next major is left as it was')
  const released = releasedOf(oldestServed)
  t.strictSame(oldestServed, released, 'the oldest as released')
  // (a release writes the document served, key for key: the order too. Before the overlay, a
  // release of the oldest was written of a document of its own, in places in another order.)
  t.strictSame(keyOrderDifferences(released, oldestServed), [], 'key order: as released')
  const nextReleased = releasedOf(nextServed)
  t.strictSame(nextServed, nextReleased, 'the next major as released')
  t.strictSame(keyOrderDifferences(nextReleased, nextServed), [], 'in its order')
})

t.test('written once: openapi.yaml and the overlays are at most 1.15 times the lines of the largest document served', async (t) => {
  const lines = (file: string) => readFileSync(file, 'utf8').split('\n').length - 1
  const sources = specPaths.reduce((sum, file) => sum + lines(file), 0)
  const largest = Math.max(...loadContracts().map(({ version }) => lines(join(generatedDir, `v${version[0]}`, 'openapi.yaml'))))
  t.ok(sources <= 1.15 * largest, `${sources} lines written, ${(sources / largest).toFixed(3)} times the ${largest} of the largest document served`)
})

t.test('the loader refuses an overlay that is none, one whose action selects nothing, one whose name says another major', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-overlay-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(join(projectRoot, 'openapi.yaml'), join(dir, 'openapi.yaml'))
  mkdirSync(join(dir, 'contract', 'versions'), { recursive: true })
  // the overlay that applies to openapi.yaml: the newest-but-one's, of major N
  const below = specPaths.at(-2)!
  const { file: name, version } = loadContract(below)
  const text = readFileSync(below, 'utf8')
  const at = (name: string, written: string) => {
    const file = join(dir, 'contract', 'versions', name)
    writeFileSync(file, written)
    return file
  }
  const overlayName = basename(name)
  t.throws(() => loadContract(at(overlayName, text.replace('overlay: 1.0.0', 'overlay: 2.0.0')), false), {
    message: `${name}: overlay: overlay is "2.0.0": this applier reads Overlay 1.0.x (overlay: 1.0.0)`,
  })
  const actions = (parse(text) as { actions: unknown[] }).actions.length
  t.throws(() => loadContract(at(overlayName, `${text}  - target: $.nothing\n    remove: true\n`), false), {
    message: `${name}: overlay: actions[${actions}] ($.nothing) select(s) nothing in the document of openapi.yaml: an overlay's every action must fit the document it applies to`,
  })
  rmSync(join(dir, name))
  t.equal(majorOfSource(join(dir, 'openapi.yaml')), loadContract(newestSpecPath).version[0], "openapi.yaml's major, by its info.version")
  writeFileSync(join(dir, 'empty.yaml'), '')
  t.equal(majorOfSource(join(dir, 'empty.yaml')), undefined, 'an empty file: none')
  writeFileSync(join(dir, 'bare.yaml'), 'openapi: 3.1.0\n')
  t.equal(majorOfSource(join(dir, 'bare.yaml')), undefined, 'a document without info: none')
  t.strictSame(specPathsIn(join(dir, 'contract')), [join(dir, 'contract', 'openapi.yaml')], 'a folder without overlays: its openapi.yaml alone')
  // (named as another major's overlay: openapi.yaml's own, to which it is applied)
  const another = `${version[0] + 1}.overlay.yaml`
  t.throws(() => loadContract(at(another, text), false), {
    message: new RegExp(
      `^${escaped(`contract/versions/${another}: info.version: info.version ${version.join('.')} is of major version ${version[0]}, which the overlay's name does not say`)}`,
    ),
  })
})

t.test('update: merged into each object selected, in the order of the actions', async (t) => {
  const document = { info: { title: 'a', version: '1', tags: ['x'], contact: { name: 'n' } }, items: [{ id: 1 }, { id: 2 }] }
  const { document: updated, unmatched } = applyOverlay(
    document,
    overlay(
      { target: '$.info', update: { version: '2', tags: ['y'], contact: { email: 'e' }, license: { name: 'MIT' } } },
      { target: '$.items[*]', update: { meta: {} } },
      { target: '$.items[0].meta', update: { seen: true } },
      { target: '$', update: { 'x-more': null } },
    ),
  )
  t.strictSame(updated, {
    info: { title: 'a', version: '2', tags: ['x', 'y'], contact: { name: 'n', email: 'e' }, license: { name: 'MIT' } },
    items: [
      { id: 1, meta: { seen: true } },
      { id: 2, meta: {} },
    ],
    'x-more': null,
  })
  t.strictSame(
    Object.keys((updated as typeof document).info),
    ['title', 'version', 'tags', 'contact', 'license'],
    'a replaced key keeps its place, a new one goes last',
  )
  t.strictSame(document.info, { title: 'a', version: '1', tags: ['x'], contact: { name: 'n' } }, 'the document given is left as it was')
  t.strictSame(unmatched, [])
})

t.test('arrays: an update is an entry appended; remove takes each element selected', async (t) => {
  const document = { list: [{ n: 1 }, { n: 0 }, { n: 2 }, { n: 3 }], nested: [[1], [2]] }
  const { document: changed } = applyOverlay(
    document,
    overlay(
      { target: '$.list[?@.n > 1]', remove: true },
      { target: '$.list[0,0]', remove: true },
      { target: '$.list', update: { n: 4 } },
      { target: '$.nested[1]', update: 3 },
    ),
  )
  t.strictSame(changed, { list: [{ n: 0 }, { n: 4 }], nested: [[1], [2, 3]] })
  const { document: without } = applyOverlay({ a: { b: {}, c: {}, d: {} } }, overlay({ target: "$.a['b','d']", remove: true }))
  t.strictSame(without, { a: { c: {} } }, 'remove takes keys of an object')
})

t.test('a target that selects nothing changes nothing, and is named', async (t) => {
  const document = { paths: {} }
  const { document: same, unmatched } = applyOverlay(
    document,
    overlay({ target: "$.paths['/gone']", remove: true }, { target: '$.paths', update: { '/pets': {} } }),
  )
  t.strictSame(same, { paths: { '/pets': {} } })
  t.strictSame(unmatched, ["actions[0] ($.paths['/gone'])"])
})

t.test('what the applier refuses, and says why', async (t) => {
  const refused = (document: unknown, overlay: unknown, name?: string) => (t.throws(() => applyOverlay(document, overlay, name)) as Error).message
  const action = { target: '$' }
  const cases: Array<[unknown, RegExp]> = [
    [[], /^overlay: an overlay is an object, not an array$/],
    [{ ...overlay({ ...action, remove: true }), overlays: [] }, /^overlay has overlays, which Overlay 1\.0\.0 does not define$/],
    [{ ...overlay({ ...action, update: {} }), overlay: '1.1.0' }, /^overlay: overlay is "1\.1\.0": this applier reads Overlay 1\.0\.x \(overlay: 1\.0\.0\)$/],
    [{ info: { title: 't', version: '1' }, actions: [] }, /^overlay: overlay is missing: /],
    [{ ...overlay({ ...action, update: {} }), info: { title: 't' } }, /^overlay: info must be an object with a title and a version \(strings\)$/],
    [{ ...overlay({ ...action, update: {} }), info: null }, /^overlay: info must be an object/],
    [{ ...overlay({ ...action, update: {} }), info: { title: 't', version: '1', summary: 's', 'x-ok': 1 } }, /^overlay: info has summary, which /],
    [{ ...overlay({ ...action, update: {} }), extends: 1 }, /^overlay: extends must be a string \(a URI reference\)$/],
    [overlay(), /^overlay: actions must be a list of at least one action$/],
    [{ ...overlay(), actions: {} }, /^overlay: actions must be a list/],
    [overlay('remove'), /^overlay: actions\[0\] is a string, not an object$/],
    [overlay({ ...action, remove: true, delete: true }), /^overlay: actions\[0\] has delete, which Overlay 1\.0\.0 does not define$/],
    [overlay({ update: {} }), /^overlay: actions\[0\] has no target \(a JSONPath, a string\)$/],
    [overlay({ ...action, update: {}, description: 1 }), /^overlay: actions\[0\] \(\$\): description must be a string$/],
    [overlay({ ...action, remove: 'yes' }), /^overlay: actions\[0\] \(\$\): remove must be true or false$/],
    [overlay({ ...action, update: {}, remove: true }), /^overlay: actions\[0\] \(\$\): an action has exactly one of update and remove: true$/],
    [overlay({ ...action, remove: false }), /^overlay: actions\[0\] \(\$\): an action has exactly one of update and remove: true$/],
    [overlay({ target: '$.a[?@.b = 1]', remove: true }), /^overlay: actions\[0\]: target \$\.a\[\?@\.b = 1\] is not an RFC 9535 JSONPath: /],
    [overlay({ target: ' $.a', remove: true }), /^overlay: actions\[0\]: target {2}\$\.a is not an RFC 9535 JSONPath: /],
  ]
  for (const [overlay, message] of cases) t.match(refused({}, overlay), message)
  t.match(
    refused({}, overlay('remove'), 'contract/versions/1.overlay.yaml'),
    /^contract\/versions\/1\.overlay\.yaml: actions\[0\] is a string/,
    'named as its caller names it',
  )

  // what the document selected cannot take
  const document = { info: { title: 't', license: null, tags: ['a'] }, list: [] }
  t.match(
    refused(document, overlay({ target: '$.info.title', update: 'u' })),
    /^overlay: actions\[0\] \(\$\.info\.title\) selects a string at \$\['info'\]\['title'\]: Overlay 1\.0\.0 targets objects and arrays only$/,
  )
  t.match(refused(document, overlay({ target: '$.info.license', remove: true })), /selects null at \$\['info'\]\['license'\]: /)
  t.match(refused(document, overlay({ target: '$', remove: true })), /^overlay: actions\[0\] \(\$\): the document itself cannot be removed$/)
  t.match(
    refused(document, overlay({ target: '$.info', update: 'u' })),
    /^overlay: actions\[0\] \(\$\.info\) at \$\['info'\]: the node is an object, the update a string: an object's update is an object$/,
  )
  t.match(
    refused(document, overlay({ target: '$.list', update: ['a'] })),
    /^overlay: actions\[0\] \(\$\.list\) at \$\['list'\]: an array update on an array is one entry in Overlay 1\.0\.0, its entries in 1\.1\.0/,
  )
  t.match(
    refused(document, overlay({ target: '$', update: { info: { tags: { a: 1 } } } })),
    /^overlay: actions\[0\] \(\$\) at \$\['info'\]\['tags'\] is an array: the update's an object cannot be merged with it$/,
  )
  t.match(refused(document, overlay({ target: '$', update: { info: 'i' } })), /\$\['info'\] is an object: the update's a string cannot/)
})
