/**
 * The applier of OpenAPI Overlays (Overlay Specification 1.0.0, src/contract/overlay.ts): each of
 * its rules on small documents of its own.
 */
import t from 'tap'
import { applyOverlay } from '../src/contract/overlay.js'

/** the small overlay of `actions` */
const overlay = (...actions: unknown[]) => ({ overlay: '1.0.0', info: { title: 'test', version: '1' }, actions })

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
