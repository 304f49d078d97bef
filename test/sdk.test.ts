/**
 * Client teams generate SDKs from the published spec with the generator they already use, with
 * its default options. For each of three generators this test takes `/v1/openapi.json` from a
 * running server, generates a client into a temporary folder, compiles it under `strict` with
 * a small program that makes every call of the interface (test/fixtures/sdk/), and runs that
 * program against a server of its own (the app on port 0, a fresh SQLite file, an API key).
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../src/core/paths.js'
import { build, testKey } from './helpers/app.js'
import { within } from './helpers/processes.js'

interface Generator {
  /** the folder of its client, and the name of its program in test/fixtures/sdk/ */
  name: string
  /** the npm package, pinned in package.json */
  package: string
  /** its command line, run in the temporary folder: input and output, nothing else */
  args: string[]
}

const generators: Generator[] = [
  { name: 'openapi-typescript', package: 'openapi-typescript', args: ['openapi.json', '-o', 'openapi-typescript/generated/schema.ts'] },
  { name: 'hey-api', package: '@hey-api/openapi-ts', args: ['-i', 'openapi.json', '-o', 'hey-api/generated'] },
  { name: 'orval', package: 'orval', args: ['--config', 'orval.config.cjs'] },
]

// orval reads its input and output from a config file; every other option keeps its default
// (client `axios-functions`, one file, no mocks).
const orvalConfig = `module.exports = { petstore: { input: './openapi.json', output: './orval/generated/petstore.ts' } }\n`

const methods = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

/** The calls each program makes: every operation of the spec. */
const calls = [
  'createPet',
  'createWebhook',
  'deleteWebhook',
  'enableWebhook',
  'getOrder',
  'getPet',
  'getWebhook',
  'listOrders',
  'listPets',
  'listWebhookDeliveries',
  'listWebhooks',
  'placeOrder',
  'redeliverWebhook',
  'rotateWebhookSecret',
  'updateOrder',
]

/** A pet id no pet has (the programs' `absentId`). */
const absentId = 9_007_199_254_740_991

/** Generation or a compile may take a while on a busy machine; none may hang. */
const stepBound = 120_000

const fixtures = join(projectRoot, 'test', 'fixtures', 'sdk')
const nodeModules = join(projectRoot, 'node_modules')

function packageJson(name: string): { version: string; bin?: string | Record<string, string> } {
  return JSON.parse(readFileSync(join(nodeModules, name, 'package.json'), 'utf8'))
}

/** The script of a package's (first) command. */
function binOf(name: string): string {
  const { bin } = packageJson(name)
  return join(nodeModules, name, typeof bin === 'string' ? bin : Object.values(bin ?? {})[0]!)
}

interface Step {
  code: number | null
  stdout: string
  /** stdout and stderr, as they came */
  output: string
  ms: number
}

/** Runs a plain node process (no test loader: these are the client team's tools), bounded. */
async function step(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Step> {
  const { NODE_OPTIONS: _, ...inherited } = process.env
  const started = Date.now()
  const child = spawn(process.execPath, args, { cwd, env: { ...inherited, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
    output += chunk
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  try {
    const [code] = (await within(stepBound, once(child, 'exit'))) as [number | null]
    return { code, stdout, output, ms: Date.now() - started }
  } finally {
    child.kill('SIGKILL')
  }
}

t.test('SDKs generated with default options compile under strict and make every call of the interface', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-sdk-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // The clients import openapi-fetch and axios, and the programs run with tsx: the project's own.
  symlinkSync(nodeModules, join(dir, 'node_modules'), 'dir')
  writeFileSync(join(dir, 'package.json'), '{ "private": true, "type": "module" }\n')
  writeFileSync(join(dir, 'orval.config.cjs'), orvalConfig)

  // One server per client, so each program meets an empty store: the app the server runs, on a
  // socket of its own (in this process, so that its start is paid once, not three times).
  const servers = await Promise.all(
    generators.map(async ({ name }) => {
      const app = await build(t, { DATABASE_URL: `sqlite:${join(dir, `${name}.db`)}` })
      return { url: await app.listen({ host: '127.0.0.1', port: 0 }) }
    }),
  )
  const served = await fetch(`${servers[0]!.url}/v1/openapi.json`)
  t.equal(served.status, 200, 'the server serves its spec')
  const spec = (await served.json()) as { paths: Record<string, Record<string, { operationId?: string }>> }
  writeFileSync(join(dir, 'openapi.json'), JSON.stringify(spec))
  const operationIds = Object.values(spec.paths).flatMap((item) =>
    Object.entries(item)
      .filter(([method]) => methods.has(method))
      .map(([, operation]) => operation.operationId),
  )
  // a new operation in the spec fails this until each program in test/fixtures/sdk/ calls it
  t.strictSame(operationIds.sort(), calls, 'the programs make every call of the served spec')

  const generated = await Promise.all(
    generators.map((generator) => {
      const folder = join(dir, generator.name)
      mkdirSync(folder)
      copyFileSync(join(fixtures, `${generator.name}.ts`), join(folder, 'client.ts'))
      copyFileSync(join(fixtures, 'client-kit.ts'), join(folder, 'client-kit.ts'))
      return step(dir, [binOf(generator.package), ...generator.args])
    }),
  )
  // One tsc for the three clients (each folder a module of its own): a third of the time of three.
  copyFileSync(join(fixtures, 'tsconfig.json'), join(dir, 'tsconfig.json'))
  const compiled = await step(dir, [binOf('typescript'), '-p', '.'])
  t.comment(`tsc, the three clients: ${compiled.ms} ms`)
  const diagnostics = compiled.output.split('\n').filter((line) => line.includes(' error TS'))
  const errorsOf = (name: string) => diagnostics.filter((line) => line.startsWith(`${name}/`))
  t.ok(compiled.code === 0 || diagnostics.length > 0, 'tsc ran to its end', { output: compiled.output })
  t.strictSame(diagnostics.filter((line) => !generators.some(({ name }) => line.startsWith(`${name}/`))), [], 'no error outside the clients')

  const results = await Promise.all(
    generators.map(async (generator, index) => {
      const errors = errorsOf(generator.name)
      const ran =
        generated[index]!.code === 0 && errors.length === 0
          ? await step(join(dir, generator.name), ['--import', 'tsx', 'client.ts'], {
              PETSTORE_URL: `${servers[index]!.url}/v1`,
              PETSTORE_KEY: testKey,
            })
          : undefined
      return { generator, url: servers[index]!.url, generated: generated[index]!, errors, ran }
    }),
  )

  for (const { generator, url, generated, errors, ran } of results) {
    t.test(`${generator.name} ${packageJson(generator.package).version}`, async (t) => {
      t.comment(`generate ${generated.ms} ms, run ${ran?.ms ?? '-'} ms`)
      t.equal(generated.code, 0, 'generates', { output: generated.output })
      t.strictSame(errors, [], 'compiles under strict')
      t.equal(ran?.code, 0, 'runs', { output: ran?.output })
      if (ran?.code !== 0) return
      const rex = { id: 1, name: 'Rex', categoryId: 1, status: 'available' }
      t.strictSame(JSON.parse(ran.stdout), {
        // `{ name, categoryId }` compiled as a body, and the server filled in the status
        created: [rex, { id: 2, name: 'Tom', categoryId: 2, status: 'available' }, { id: 3, name: 'Kit', categoryId: 3, status: 'pending' }],
        pages: [
          { ids: [1, 2], next: `${url}/v1/pets?limit=2&after=2` },
          { ids: [3], next: null },
        ],
        found: rex,
        notFound: { status: 404, body: { code: 'not_found', message: `Pet ${absentId} not found`, status: 404 } },
        // Tom ordered, found, listed among the placed orders, delivered
        orders: {
          placed: { id: 1, petId: 2, status: 'placed' },
          found: { id: 1, petId: 2, status: 'placed' },
          listed: [1],
          delivered: { id: 1, petId: 2, status: 'delivered' },
        },
        // subscribed, listed, found, its secret rotated, no delivery (no change since), enabled (active already), deleted
        webhooks: {
          created: { id: 1, url: 'https://93.184.215.14/hooks', events: ['pet.created'] },
          listed: [1],
          found: { id: 1, url: 'https://93.184.215.14/hooks', events: ['pet.created'] },
          rotated: true,
          deliveries: 0,
          redeliver: 404,
          enabled: 'active',
          deleted: 204,
        },
      })
    })
  }
})
