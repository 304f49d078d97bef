/**
 * Client teams generate SDKs from the published spec with the generator they already use, with
 * its default options. For each of three generators and each version the server serves
 * (loadContracts()), this test takes the version's `openapi.json` from a running server,
 * generates a client into a temporary folder, compiles it under `strict` with a small program
 * that makes every call of that version, and runs that program against a server of its own
 * (the app on port 0, a fresh SQLite file, an API key holding every role the version's
 * operations ask for). A version's programs are in test/fixtures/sdk/vN/, with what they must
 * report (expected.ts); a version without a folder of its own runs those of the nearest older
 * version with one (test/helpers/sdk.ts). A failure says what to change: the kit type that no
 * longer equals the generated one, the operation no program calls.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { parse } from 'yaml'
import { loadContracts } from '../src/contract/load.js'
import type { Contract } from '../src/contract/model.js'
import ordersAndWebhooks from './fixtures/sdk/orders-webhooks/expected.js'
import { build, testKey } from './helpers/app.js'
import {
  type Client,
  calledOperations,
  clientOf,
  generatedAndCompiled,
  type Expected,
  expectedModule,
  explain,
  fixtures,
  fixturesDir,
  generators,
  nodeModules,
  orvalConfig,
  ownPrograms,
  packageJson,
  step,
  uncalled,
} from './helpers/sdk.js'

/** The API_KEYS entry of a version's servers: the key its programs use (testKey), holding the
 * roles of every operation of the version (of each, its first way to be called). */
function apiKeysOf(contract: Contract): string {
  const roles = new Set([...contract.operations.values()].flatMap(({ roles }) => roles?.[0] ?? []))
  return roles.size === 0 ? testKey : `${testKey}:${[...roles].join('+')}`
}

/** What the programs of `programs` must report (its expected.ts), and the orders and webhooks. */
async function expectedOf(programs: string): Promise<Expected> {
  const { default: expected } = (await import(pathToFileURL(join(fixtures, programs, expectedModule)).href)) as { default: Expected }
  return (served) => ({ ...expected(served), ...ordersAndWebhooks })
}

t.test('SDKs generated with default options compile under strict and make every call of each version', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-sdk-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // The clients import openapi-fetch and axios, and the programs run with tsx: the project's own.
  symlinkSync(nodeModules, join(dir, 'node_modules'), 'dir')
  writeFileSync(join(dir, 'package.json'), '{ "private": true, "type": "module" }\n')

  // Every version served, each with the programs of its folder (or the nearest older one's).
  const contracts = loadContracts()
  const clients: Client[] = contracts.flatMap((contract) => generators.map((generator) => clientOf(contract, generator)))
  const expected = new Map(
    await Promise.all([...new Set(clients.map(({ programs }) => programs))].map(async (programs) => [programs, await expectedOf(programs)] as const)),
  )

  // One server per client, so each program meets an empty store: the app the server runs, on a
  // socket of its own (in this process, so that its start is paid once, not once a client).
  const servers = await Promise.all(
    clients.map(async ({ contract, version, generator }) => {
      const app = await build(t, { DATABASE_URL: `sqlite:${join(dir, `${version}-${generator.name}.db`)}`, API_KEYS: [apiKeysOf(contract)] })
      return { app, origin: await app.listen({ host: '127.0.0.1', port: 0 }) }
    }),
  )
  for (const contract of contracts) {
    const version = `v${contract.version[0]}`
    // every server serves every version's document
    const served = await fetch(`${servers[0]!.origin}${contract.basePath}/openapi.json`)
    t.equal(served.status, 200, `the server serves the document of ${version}`)
    const document: unknown = await served.json()
    // the clients made from the JSON are those its YAML makes
    const yaml = await fetch(`${servers[0]!.origin}${contract.basePath}/openapi.yaml`)
    t.strictSame(parse(await yaml.text()), document, `${version}/openapi.yaml is the same document`)
    mkdirSync(join(dir, version))
    writeFileSync(join(dir, version, 'openapi.json'), JSON.stringify(document))
    writeFileSync(join(dir, version, 'orval.config.cjs'), orvalConfig)
  }

  const { generated, compiled, diagnostics } = await generatedAndCompiled(dir, clients)
  t.comment(`tsc, the ${clients.length} clients: ${compiled.ms} ms`)
  t.ok(compiled.code === 0 || diagnostics.length > 0, 'tsc ran to its end', { output: compiled.output })
  t.strictSame(
    diagnostics.filter((line) => !clients.some(({ folder }) => line.startsWith(folder))),
    [],
    'no error outside the clients',
  )

  const results = await Promise.all(
    clients.map(async (client, index) => {
      const { app, origin } = servers[index]!
      const url = `${origin}${client.contract.basePath}`
      const errors = diagnostics.filter((line) => line.startsWith(client.folder))
      const ran =
        generated[index]!.code === 0 && errors.length === 0
          ? await step(join(dir, client.folder), ['--import', 'tsx', 'client.ts'], { PETSTORE_URL: url, PETSTORE_KEY: testKey })
          : undefined
      return { client, app, url, generated: generated[index]!, errors, ran }
    }),
  )

  for (const { client, app, url, generated, errors, ran } of results) {
    const { contract, version, generator, programs } = client
    const borrowed = programs === version ? '' : ` (the programs of ${programs})`
    t.test(`${version}${borrowed}: ${generator.name} ${packageJson(generator.package).version}`, async (t) => {
      t.comment(`generate ${generated.ms} ms, run ${ran?.ms ?? '-'} ms`)
      t.equal(generated.code, 0, 'generates', { output: generated.output })
      // each error, with what to change where the test can tell
      if (errors.length === 0) t.pass('compiles under strict')
      for (const failure of explain(errors, client, dir, contracts)) t.fail(failure, { tsc: errors })
      // (not run: it did not generate or compile, as said above)
      if (ran === undefined) return
      t.equal(ran.code, 0, 'runs', { output: ran.output })
      if (ran.code !== 0) return
      const otherwise = programs === version ? '' : `; where ${version} answers otherwise, ${ownPrograms(client, `write what it answers in ${expectedModule}`)}`
      const report = `reports what the server must have done (${fixturesDir}/${programs}/${expectedModule}${otherwise})`
      t.strictSame(JSON.parse(ran.stdout), expected.get(programs)!({ url, basePath: contract.basePath }), report)
      // a new operation in the document fails this until the program calls it
      const missing = uncalled(client, calledOperations(app, contract))
      if (missing.length === 0) t.pass(`calls every operation of ${contract.file}`)
      for (const message of missing) t.fail(message)
    })
  }
})
