/**
 * The deprecation of an operation of an older version, by its overlay alone (docs/compatibility.md,
 * the block `older-deprecation`), on a copy of the contract in a temporary folder: version 1's
 * listPets. generate, the contract model, the start and the gate take it; version 1's listPets
 * answers with its lifecycle headers, then 410 from its sunset on, while the newer version's
 * listPets goes on as it was. No version change is written for it.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { checkBreaking, checkCoverage } from '../scripts/check-breaking.js'
import { generate } from '../scripts/generate.js'
import { loadContract, specPathsIn } from '../src/contract/load.js'
import { projectRoot } from '../src/core/paths.js'
import { generatedCompilers } from '../src/http/compilers.js'
import { categoryObject } from '../src/versions/changes/category-object.js'
import { build, call } from './helpers/app.js'
import { docBlock, indented } from './helpers/project.js'

t.setTimeout(900_000)

t.test("an older version's listPets deprecated by its overlay: its lifecycle headers, then 410; the newer version's as it was", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-older-deprecation-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(join(projectRoot, 'openapi.yaml'), join(dir, 'openapi.yaml'))
  cpSync(join(projectRoot, 'contract', 'versions'), join(dir, 'contract', 'versions'), { recursive: true })
  // (the generated validators load Ajv's runtime from the project's packages)
  symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'), 'dir')
  // (version 1: the version whose overlay the page edits, the one its changes lead to)
  const major = categoryObject.version
  const overlay = join(dir, 'contract', 'versions', `${major}.overlay.yaml`)
  const before = readFileSync(overlay, 'utf8')
  t.ok(before.trimEnd().split('\n').at(-1)!.startsWith('      '), 'the overlay ends with its actions, where the page appends two')
  writeFileSync(overlay, `${before.trimEnd()}\n${indented(docBlock('compatibility.md', 'older-deprecation'), 2)}`)

  const specs = specPathsIn(dir)
  const generated = join(dir, 'generated')
  const { files } = await generate(generated, specs)
  t.ok(files.includes(`serializers/get_v${major}_pets_410.cjs`), 'generate takes it: the 410 has its serializer')
  const contracts = specs.map((spec) => loadContract(spec, generated))
  const older = contracts.find(({ version }) => version[0] === major)!
  const newer = contracts.find(({ version }) => version[0] === major + 1)!
  t.match(older.operations.get('listPets')!.lifecycle.deprecation, { sunset: new Date('2027-07-05T00:00:00Z') }, 'the contract model takes it')
  t.equal(newer.operations.get('listPets')!.lifecycle.deprecation, undefined, "the newer version's listPets is not deprecated")

  const gate = await checkBreaking({ spec: overlay, now: new Date('2027-03-01T00:00:00Z') })
  t.ok(gate.ok, gate.lines.join('\n'))
  const coverage = await checkCoverage(contracts)
  t.ok(coverage.ok, `no version change to write: ${coverage.lines.join('\n')}`)

  let now = Date.parse('2027-03-01T00:00:00Z')
  const app = await build(t, { contracts, schemaController: generatedCompilers(generated), clock: () => now })
  const olderList = await call(t, app, { url: `${older.basePath}/pets` })
  t.equal(olderList.status, 200)
  t.match(
    olderList.headers,
    {
      deprecation: `@${Date.parse('2027-01-04T00:00:00Z') / 1000}`,
      sunset: 'Mon, 05 Jul 2027 00:00:00 GMT',
      link: `<${older.basePath}/docs/>; rel="deprecation"; type="text/html"`,
    },
    'its answers carry Deprecation, Sunset and the lifecycle Link',
  )
  const newerList = await call(t, app, { url: `${newer.basePath}/pets` })
  t.equal(newerList.status, 200)
  t.notOk('deprecation' in newerList.headers || 'sunset' in newerList.headers, "the newer version's answers carry neither")

  now = Date.parse('2027-07-05T00:00:00Z')
  t.equal((await call(t, app, { url: `${older.basePath}/pets` })).status, 410, 'from its sunset on: 410')
  t.equal((await call(t, app, { url: `${newer.basePath}/pets` })).status, 200, "and the newer version's listPets answers as it did")
})
