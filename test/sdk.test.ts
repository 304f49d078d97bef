/**
 * Client teams generate SDKs from the published spec with the generator they already use, with
 * its default options. For each of three generators and each version the server serves, this
 * test takes the version's `openapi.json` from a running server, generates a client into a
 * temporary folder, compiles it under `strict` with a small program that makes every call of
 * that version (test/fixtures/sdk/: version 1's programs at its top, version 2's in v2/), and
 * runs that program against a server of its own (the app on port 0, a fresh SQLite file, an API
 * key).
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { parse } from 'yaml'
import { loadContracts } from '../src/contract/load.js'
import { projectRoot } from '../src/core/paths.js'
import { build, testKey } from './helpers/app.js'
import { within } from './helpers/processes.js'

interface Generator {
  /** the folder of its client, and the name of its programs in test/fixtures/sdk/ */
  name: string
  /** the npm package, pinned in package.json */
  package: string
  /** its command line, run in a version's folder: input and output, nothing else */
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

/** A pet id no pet has, and a category id no category has (the programs' `absentId`). */
const absentId = 9_007_199_254_740_991

/** The calls of the orders and webhooks, the same in both versions (test/fixtures/sdk/orders-webhooks/). */
const ordersAndWebhooksCalls = [
  'createWebhook',
  'deleteWebhook',
  'enableWebhook',
  'getOrder',
  'getWebhook',
  'listOrders',
  'listWebhookDeliveries',
  'listWebhooks',
  'placeOrder',
  'redeliverWebhook',
  'rotateWebhookSecret',
  'updateOrder',
]

/** What every program reports of the orders and webhooks, in both versions. */
const ordersAndWebhooks = {
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
}

interface Document {
  paths: Record<string, Record<string, { operationId?: string }>>
}

interface Version {
  /** its base path, and its folder in the temporary folder */
  name: 'v1' | 'v2'
  /** where its programs are in test/fixtures/sdk/, and what they import from there beside
   * their client (copied next to it) */
  programs: string
  kits: string[]
  /** the calls each program makes, sorted: every operation of the version's document */
  calls: string[]
  /** the API_KEYS entry of its servers: the key its programs use (testKey), and its roles */
  apiKeys: string
  /** what each program must report, run against a server at `url` */
  report: (url: string) => object
}

const versions: Version[] = [
  {
    name: 'v1',
    programs: '.',
    kits: ['client-kit.ts'],
    calls: [...ordersAndWebhooksCalls, 'createPet', 'getPet', 'listPets'].sort(),
    apiKeys: testKey,
    report: (url) => {
      const rex = { id: 1, name: 'Rex', categoryId: 1, status: 'available' }
      return {
        // `{ name, categoryId }` compiled as a body, and the server filled in the status
        created: [rex, { id: 2, name: 'Tom', categoryId: 2, status: 'available' }, { id: 3, name: 'Kit', categoryId: 3, status: 'pending' }],
        pages: [
          { ids: [1, 2], next: `${url}/v1/pets?limit=2&after=2` },
          { ids: [3], next: null },
        ],
        found: rex,
        notFound: { status: 404, body: { code: 'not_found', message: `Pet ${absentId} not found`, status: 404 } },
        ...ordersAndWebhooks,
      }
    },
  },
  {
    name: 'v2',
    programs: 'v2',
    kits: ['client-kit.ts', 'client-kit-v2.ts'],
    calls: [...ordersAndWebhooksCalls, 'createCategory', 'createPet', 'getCategory', 'listCategories', 'listPets'].sort(),
    // every role a key gets by default, and `categories:write` (which it does not) for createCategory
    apiKeys: `${testKey}:${[...loadContracts().find(({ basePath }) => basePath === '/v2')!.roles.defaults, 'categories:write'].join('+')}`,
    report: (url) => {
      const bird = { id: 1, name: 'Bird' }
      const rodent = { id: 2, name: 'Rodent' }
      const rex = { id: 1, name: 'Rex', category: bird, status: 'available' }
      return {
        categories: {
          created: [bird, rodent],
          location: '/v2/categories/1',
          taken: { status: 409, body: { code: 'category_name_taken', message: 'A category named "Bird" exists already (category 1)', status: 409 } },
          found: bird,
          notFound: { status: 404, body: { code: 'not_found', message: `Category ${absentId} not found`, status: 404 } },
          pages: [
            { ids: [1], next: `${url}/v2/categories?limit=1&after=1` },
            { ids: [2], next: null },
          ],
        },
        pets: {
          // `{ name, categoryId }` compiled as a body, and the server filled in the status
          created: [rex, { id: 2, name: 'Tom', category: rodent, status: 'available' }, { id: 3, name: 'Kit', category: bird, status: 'pending' }],
          location: '/v2/pets?id=1',
          unknownCategory: { status: 422, body: { code: 'category_not_found', message: `Category ${absentId} not found: add it first (createCategory)`, status: 422 } },
          pages: [
            { ids: [1, 2], next: `${url}/v2/pets?limit=2&after=2` },
            { ids: [3], next: null },
          ],
          located: [rex],
          byStatus: [3],
          byCategory: [1, 3],
          byBoth: [1],
          byAbsentId: [],
        },
        ...ordersAndWebhooks,
      }
    },
  },
]

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

t.test('SDKs generated with default options compile under strict and make every call of each version', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-sdk-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // The clients import openapi-fetch and axios, and the programs run with tsx: the project's own.
  symlinkSync(nodeModules, join(dir, 'node_modules'), 'dir')
  writeFileSync(join(dir, 'package.json'), '{ "private": true, "type": "module" }\n')

  // One server per client, so each program meets an empty store: the app the server runs, on a
  // socket of its own (in this process, so that its start is paid once, not six times).
  const clients = versions.flatMap((version) => generators.map((generator) => ({ version, generator, folder: `${version.name}/${generator.name}/` })))
  const urls = await Promise.all(
    clients.map(async ({ version, generator }) => {
      const app = await build(t, { DATABASE_URL: `sqlite:${join(dir, `${version.name}-${generator.name}.db`)}`, API_KEYS: [version.apiKeys] })
      return app.listen({ host: '127.0.0.1', port: 0 })
    }),
  )
  for (const version of versions) {
    // every server serves both versions' documents
    const served = await fetch(`${urls[0]}/${version.name}/openapi.json`)
    t.equal(served.status, 200, `the server serves the document of ${version.name}`)
    const document = (await served.json()) as Document
    // the clients made from the JSON are those its YAML makes
    const yaml = await fetch(`${urls[0]}/${version.name}/openapi.yaml`)
    t.strictSame(parse(await yaml.text()), document, `${version.name}/openapi.yaml is the same document`)
    const operationIds = Object.values(document.paths).flatMap((item) =>
      Object.entries(item)
        .filter(([method]) => methods.has(method))
        .map(([, operation]) => operation.operationId),
    )
    // a new operation in a document fails this until each of its programs calls it
    t.strictSame(operationIds.sort(), version.calls, `the ${version.name} programs make every call of its served document`)
    mkdirSync(join(dir, version.name))
    writeFileSync(join(dir, version.name, 'openapi.json'), JSON.stringify(document))
    writeFileSync(join(dir, version.name, 'orval.config.cjs'), orvalConfig)
  }

  const generated = await Promise.all(
    clients.map(({ version, generator, folder }) => {
      mkdirSync(join(dir, folder))
      copyFileSync(join(fixtures, version.programs, `${generator.name}.ts`), join(dir, folder, 'client.ts'))
      copyFileSync(join(fixtures, 'orders-webhooks', `${generator.name}.ts`), join(dir, folder, 'orders-webhooks.ts'))
      for (const kit of version.kits) copyFileSync(join(fixtures, kit), join(dir, folder, kit))
      return step(join(dir, version.name), [binOf(generator.package), ...generator.args])
    }),
  )

  // One tsc for the six clients (each folder a module of its own), not six.
  copyFileSync(join(fixtures, 'tsconfig.json'), join(dir, 'tsconfig.json'))
  const compiled = await step(dir, [binOf('typescript'), '-p', '.'])
  t.comment(`tsc, the six clients: ${compiled.ms} ms`)
  const diagnostics = compiled.output.split('\n').filter((line) => line.includes(' error TS'))
  t.ok(compiled.code === 0 || diagnostics.length > 0, 'tsc ran to its end', { output: compiled.output })
  t.strictSame(diagnostics.filter((line) => !clients.some(({ folder }) => line.startsWith(folder))), [], 'no error outside the clients')

  const results = await Promise.all(
    clients.map(async (client, index) => {
      const url = urls[index]!
      const errors = diagnostics.filter((line) => line.startsWith(client.folder))
      const ran =
        generated[index]!.code === 0 && errors.length === 0
          ? await step(join(dir, client.folder), ['--import', 'tsx', 'client.ts'], { PETSTORE_URL: `${url}/${client.version.name}`, PETSTORE_KEY: testKey })
          : undefined
      return { ...client, url, generated: generated[index]!, errors, ran }
    }),
  )

  for (const { version, generator, url, generated, errors, ran } of results) {
    t.test(`${version.name}: ${generator.name} ${packageJson(generator.package).version}`, async (t) => {
      t.comment(`generate ${generated.ms} ms, run ${ran?.ms ?? '-'} ms`)
      t.equal(generated.code, 0, 'generates', { output: generated.output })
      t.strictSame(errors, [], 'compiles under strict')
      t.equal(ran?.code, 0, 'runs', { output: ran?.output })
      if (ran?.code !== 0) return
      t.strictSame(JSON.parse(ran.stdout), version.report(url), 'reports what the server must have done')
    })
  }
})
