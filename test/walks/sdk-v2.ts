/**
 * Run in the copy of the walk "a new field" (test/changing-the-api.walk.ts), once `tag` is added
 * and the kit of version 2 says it: the part of the SDK test (test/sdk.test.ts) that the walk
 * changes, the clients of version 2. Each generator makes its client of the document the app
 * serves (`/v2/openapi.json`), and one tsc compiles them with their programs under strict: each
 * program holds its generator's `Pet` and `NewPet` exactly equal to the kit's
 * (test/fixtures/sdk/v2/client-kit-v2.ts). Not run against a server: the programs send no tag.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadContracts } from '../../src/contract/load.js'
import { build } from '../helpers/app.js'
import { checker } from '../helpers/checks.js'
import { clientOf, explain, generatedAndCompiled, generators, nodeModules, orvalConfig } from '../helpers/sdk.js'

const { t, report } = checker()
const contracts = loadContracts()
const contract = contracts.find(({ version }) => version[0] === 2)!
const dir = mkdtempSync(join(tmpdir(), 'petstore-walk-sdk-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
symlinkSync(nodeModules, join(dir, 'node_modules'), 'dir')
writeFileSync(join(dir, 'package.json'), '{ "private": true, "type": "module" }\n')

const app = await build(t)
const served = await app.inject({ url: `${contract.basePath}/openapi.json` })
t.equal(served.statusCode, 200, 'the app serves the document of v2')
mkdirSync(join(dir, 'v2'))
writeFileSync(join(dir, 'v2', 'openapi.json'), served.body)
writeFileSync(join(dir, 'v2', 'orval.config.cjs'), orvalConfig)

const clients = generators.map((generator) => clientOf(contract, generator))
const { generated, compiled, diagnostics } = await generatedAndCompiled(dir, clients)
t.ok(compiled.code === 0 || diagnostics.length > 0, 'tsc ran to its end')
t.strictSame(
  diagnostics.filter((line) => !clients.some(({ folder }) => line.startsWith(folder))),
  [],
  'no error outside the clients',
)
for (const [i, client] of clients.entries()) {
  t.equal(generated[i]!.code, 0, `${client.folder}: generates`)
  const errors = diagnostics.filter((line) => line.startsWith(client.folder))
  t.strictSame(explain(errors, client, dir, contracts), [], `${client.folder}: compiles under strict, its types equal to the kit's`)
}

await report()
