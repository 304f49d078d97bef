/**
 * The walk of docs/compatibility.md (Deprecation and sunsets), on a copy of the project in a
 * temporary folder: the newest version's listCategories, a paged list, is deprecated by its
 * markers, its 410 and the lifecycle headers of its 200, in openapi.yaml. The contract
 * model, `npm run generate` and the breaking-change gate take it; the server sends a page's next
 * link and the lifecycle links in one Link, the last page the lifecycle links alone, every answer
 * checked against the document. With the markers alone, the start, the gate and the lint refuse
 * it in the same words, each naming what to add.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import t from 'tap'
import { checkBreaking } from '../scripts/check-breaking.js'
import { generate } from '../scripts/generate.js'
import { bundledSpec, loadContract, newestSpecPath, specPaths } from '../src/contract/load.js'
import { projectRoot } from '../src/core/paths.js'
import { generatedCompilers } from '../src/http/compilers.js'
import { build, call, testKey } from './helpers/app.js'
import { contractRuleErrors } from './helpers/lint.js'
import { launch, processBound, within } from './helpers/processes.js'
import { keptAsMade } from './helpers/project.js'
import { escaped } from './helpers/spec.js'

t.setTimeout(900_000)

/** The newest version's base path (`/vN`): where openapi.yaml, and listCategories in it, is served. */
const base = loadContract(newestSpecPath).basePath

/** The steps, as written in openapi.yaml: what each finds in listCategories,
 * and what it writes there instead. */
const markers: [string, string] = [
  '      operationId: listCategories\n',
  `      operationId: listCategories
      deprecated: true
      x-deprecated-at: '2027-01-04'
      x-sunset: '2027-07-05'
      x-successor-reason: the categories are read with the pets
`,
]
const gone: [string, string] = [
  "        '408':\n          $ref: '#/components/responses/RequestTimeout'\n",
  `        '408':
          $ref: '#/components/responses/RequestTimeout'
        '410':
          $ref: '#/components/responses/Gone'
`,
]
const headers: [string, string] = [
  "            Link:\n              $ref: '#/components/headers/NextCategoriesPageLink'\n",
  `            Deprecation:
              $ref: '#/components/headers/Deprecation'
            Sunset:
              $ref: '#/components/headers/Sunset'
            Link:
              $ref: '#/components/headers/LifecycleLink'
`,
]

/**
 * The project (openapi.yaml, the overlays of the older versions, its code and generated/), copied
 * into a folder of its own, once for the walks of this file: each walk starts from the copy as
 * it was made (a git repository of its own, one commit, put back before each: the walks run one
 * at a time, as tap runs the subtests of a file). Its code compiled there once
 * (test/run/compile.mjs, into its .build/, which the put back keeps): the walk that starts the
 * copy's server runs that.
 */
const copied = (() => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-deprecation-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const part of ['openapi.yaml', 'src', 'generated', 'contract', 'package.json', 'test/run/compile.mjs'])
    cpSync(join(projectRoot, part), join(dir, part), { recursive: true })
  // (what generated modules require, found from beside them)
  symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'))
  writeFileSync(join(dir, '.gitignore'), 'node_modules\n.build/\n')
  const reset = keptAsMade(dir)
  execFileSync(process.execPath, [join(dir, 'test', 'run', 'compile.mjs')], { cwd: dir, stdio: 'pipe' })
  return { dir, reset }
})()

/** The lifecycle components, as written in openapi.yaml when its first operation is deprecated
 * (docs/compatibility.md): the 410 and the headers of a deprecated operation's answers. */
const components = {
  responses: `    Gone:
      description: |
        This deprecated operation is gone (code \`gone\`): its sunset (\`x-sunset\`, 00:00 UTC)
        has passed, or it is in one of its brownouts (\`x-brownouts\`), when it already answers
        as it will after its sunset. The request was authenticated but not carried out. \`Link\`
        names the successor and the documentation page.
      headers:
        Deprecation:
          $ref: '#/components/headers/Deprecation'
        Sunset:
          $ref: '#/components/headers/Sunset'
        Link:
          $ref: '#/components/headers/LifecycleLink'
        X-Content-Type-Options:
          $ref: '#/components/headers/XContentTypeOptions'
        Cache-Control:
          $ref: '#/components/headers/CacheControl'
        RateLimit-Policy:
          $ref: '#/components/headers/RateLimitPolicy'
        RateLimit:
          $ref: '#/components/headers/RateLimit'
        Access-Control-Allow-Origin:
          $ref: '#/components/headers/Access-Control-Allow-Origin'
        Access-Control-Expose-Headers:
          $ref: '#/components/headers/AccessControlExposeHeaders'
        Vary:
          $ref: '#/components/headers/Vary'
        API-Stability:
          $ref: '#/components/headers/ApiStabilityWhenMarked'
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/Error'
          example:
            code: gone
            message: 'listCategories was removed on 2027-07-05 (its sunset)'
            status: 410
`,
  headers: `    Deprecation:
      description: |
        When this operation was deprecated, as \`@\` followed by Unix seconds (RFC 9745).
      required: true
      schema:
        type: string
        maxLength: 13
        pattern: ^@[0-9]{1,12}$
      example: '@1799020800'
    Sunset:
      description: When this operation will be removed, as an HTTP date (RFC 8594).
      required: true
      schema:
        type: string
        maxLength: 29
        pattern: ^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$
      example: Mon, 05 Jul 2027 00:00:00 GMT
    LifecycleLink:
      description: |
        The successor operation (\`rel="successor-version"\`) and the documentation
        page (\`rel="deprecation"\`), RFC 8288. On a page of a list that has more, the
        next page's link (\`rel="next"\`) comes first, in the same field.
      required: true
      schema:
        type: string
        maxLength: 500
        pattern: ^<[^>]+>; rel="[a-z-]+"
      example: <${base}/docs/>; rel="deprecation"; type="text/html"
`,
}

/** The copy of the project, put back as it was made, with `steps` made in listCategories (and,
 * `withComponents`, the lifecycle components added); the path of each copied document, oldest
 * first, and the YAML lines the steps added and changed in listCategories. */
function deprecated(steps: [string, string][], withComponents = true) {
  const { dir } = copied
  copied.reset()
  const specs = specPaths.map((spec) => join(dir, relative(projectRoot, spec)))
  const file = specs.at(-1)!
  const before = readFileSync(file, 'utf8')
  // (listCategories is the first operation of its path item: each step is made in it)
  const start = before.indexOf('  /categories:\n')
  const end = before.indexOf('operationId: createCategory')
  let list = before.slice(start, end)
  for (const [found, written] of steps) {
    if (!list.includes(found)) throw new Error(`listCategories has no ${found}`)
    list = list.replace(found, written)
  }
  let edited = before.slice(0, start) + list + before.slice(end)
  if (withComponents) for (const [section, text] of Object.entries(components)) edited = edited.replace(`\n  ${section}:\n`, (found) => `${found}${text}`)
  writeFileSync(file, edited)
  const [was, is] = [before.slice(start, end), list].map((text) => text.split('\n'))
  return { dir, specs, added: is!.length - was!.length, changed: was!.filter((line) => !is!.includes(line)).length }
}

const curator = 'curator-key-00001'
const lifecycleLink = `<${base}/docs/>; rel="deprecation"; type="text/html"`

t.test('deprecating a paged list: its markers, its 410 and the headers of its 200, ten lines added and one changed', async (t) => {
  const { dir, specs, added, changed } = deprecated([markers, gone, headers])
  t.equal(added, 10, 'ten lines added')
  t.equal(changed, 1, "one changed: its 200 documents the lifecycle Link, a next page's before it")
  t.comment(`${added} YAML lines added, ${changed} changed`)

  const generated = join(dir, 'generated')
  const { files } = await generate(generated, specs)
  t.ok(files.includes(`serializers/get${base.replace('/', '_')}_categories_410.cjs`), 'generate takes it: the 410 has its serializer')
  const contracts = specs.map((spec) => loadContract(spec, generated))
  t.equal(contracts.at(-1)!.basePath, base)
  t.ok(contracts.at(-1)!.operations.get('listCategories')!.lifecycle.deprecation, 'the contract model takes it: listCategories is deprecated')

  let now = Date.parse('2027-03-01T00:00:00Z')
  const app = await build(t, {
    contracts,
    schemaController: generatedCompilers(generated),
    API_KEYS: [testKey, `${curator}:pets:read+categories:write`],
    clock: () => now,
  })
  for (const name of ['Bird', 'Rodent', 'Fish'])
    t.equal((await call(t, app, { method: 'POST', url: `${base}/categories`, payload: { name }, key: curator })).status, 201)
  const lifecycle = { deprecation: `@${Date.parse('2027-01-04T00:00:00Z') / 1000}`, sunset: 'Mon, 05 Jul 2027 00:00:00 GMT' }
  const first = await call(t, app, { url: `${base}/categories?limit=2` })
  t.match(
    first,
    { status: 200, headers: { ...lifecycle, link: `<${base}/categories?limit=2&after=2>; rel="next", ${lifecycleLink}` } },
    'a page with more after it: the next page, then the lifecycle links, one field',
  )
  const last = await call(t, app, { url: `${base}/categories?limit=2&after=2` })
  t.match(last, { status: 200, headers: { ...lifecycle, link: lifecycleLink } }, 'the last page: the lifecycle links alone')
  t.equal(last.json.length, 1)
  for (const [request, status] of [
    [{ url: `${base}/categories`, key: null }, 401],
    [{ url: `${base}/categories?limit=0` }, 400],
  ] as const) {
    t.match(await call(t, app, request), { status, headers: { ...lifecycle, link: lifecycleLink } }, `its ${status} too, as its shared response documents`)
  }
  now = Date.parse('2027-07-05T00:00:00Z')
  const after = await call(t, app, { url: `${base}/categories?limit=2` })
  t.match(after, { status: 410, headers: { ...lifecycle, link: lifecycleLink } }, 'from its sunset on: 410')
  t.equal(after.json.message, 'listCategories was removed on 2027-07-05 (its sunset)')
})

t.test('the gate takes the walk: the Link of its 200 changes with its deprecation', async (t) => {
  const { dir, specs } = deprecated([markers, gone, headers])
  // The walk deprecates in a released major: the gate compares it with that major's releases. A
  // new major not yet released has none (the gate allows it every change to the major before
  // it): the copy's releases then hold the newest, as it was before the walk, released.
  const released = join(dir, 'contract', 'released')
  const version = loadContract(newestSpecPath).version.join('.')
  if (!existsSync(join(released, `${version}.yaml`))) writeFileSync(join(released, `${version}.yaml`), readFileSync(newestSpecPath, 'utf8'))
  const gate = await checkBreaking({ spec: specs.at(-1)!, released, now: new Date('2027-03-01T00:00:00Z') })
  t.ok(gate.ok, gate.lines.join('\n'))
  t.match(gate.lines.join('\n'), new RegExp(`^compatible with the released ${escaped(version)}; `, 'm'), 'compared with the release of its own version')
  t.match(gate.lines.join('\n'), /^ {2}allowed \(deprecated: its Link carries its lifecycle links\): GET \/categories: `pattern` changed from/m)
})

t.test('with its markers alone, the start, the gate and the lint refuse it in the same words, each naming what to add', async (t) => {
  const { dir, specs } = deprecated([markers], false)
  const refusals = [
    "a deprecated operation documents its 410 (gone, from its sunset on): add '410': $ref '#/components/responses/Gone'",
    "response 200 does not document Deprecation, Sunset: add Deprecation: $ref '#/components/headers/Deprecation', Sunset: $ref '#/components/headers/Sunset' to its headers",
    `response 200 documents a Link that does not admit \`${lifecycleLink}\` nor \`<${base}/categories?limit=1&after=1>; rel="next", ${lifecycleLink}\`, which the server sends: document Link as $ref '#/components/headers/LifecycleLink'`,
  ]
  const lines = refusals.map((message) => `openapi.yaml: operation listCategories: ${message}`)

  // (the copy's server, as compiled there)
  const server = launch(t, relative(projectRoot, join(dir, '.build', 'src', 'server.js')), [], { DATABASE_URL: 'sqlite::memory:', API_KEYS: 'k', PORT: '0' })
  const { code, stderr } = await within(processBound, server.exited)
  t.equal(code, 1)
  t.equal(stderr, `petstore: ${lines.join('\n')}\n`, 'the start')

  const gate = await checkBreaking({ spec: specs.at(-1)!, now: new Date('2027-03-01T00:00:00Z') })
  t.notOk(gate.ok)
  t.notOk(gate.servable)
  t.strictSame(
    gate.lines.filter((line) => line.startsWith('openapi.yaml: ')),
    lines,
    'the gate',
  )

  // (npm run generate refuses it too, in those words: the lint reads the bundle as it would be served)
  const served = join(dir, 'served.yaml')
  writeFileSync(served, bundledSpec(specs.at(-1)!).source)
  const lint = (await contractRuleErrors([served])).get(served)
  t.strictSame(lint, refusals, 'the lint (at its place in the document)')
})
