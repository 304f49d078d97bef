/**
 * What the SDK test (test/sdk.test.ts) knows of its programs, and test/sdk-messages.test.ts
 * proves: where a served version's programs are (test/fixtures/sdk/vN/, or the nearest older
 * version's), what a client's folder is made of, the generators and how they run, and the
 * failures that say what to change: a kit type the generated one no longer equals, an
 * operation no program calls, a call of an operation the document does not have.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Contract } from '../../src/contract/model.js'
import { projectRoot } from '../../src/core/paths.js'
import { processBound, within } from './processes.js'

export interface Generator {
  /** the folder of its client, and the name of its programs in test/fixtures/sdk/vN/ */
  name: string
  /** the npm package, pinned in package.json */
  package: string
  /** its command line, run in a version's folder: input and output, nothing else */
  args: string[]
}

export const generators: Generator[] = [
  { name: 'openapi-typescript', package: 'openapi-typescript', args: ['openapi.json', '-o', 'openapi-typescript/generated/schema.ts'] },
  { name: 'hey-api', package: '@hey-api/openapi-ts', args: ['-i', 'openapi.json', '-o', 'hey-api/generated'] },
  { name: 'orval', package: 'orval', args: ['--config', 'orval.config.cjs'] },
]

// orval reads its input and output from a config file; every other option keeps its default
// (client `axios-functions`, one file, no mocks).
export const orvalConfig = `module.exports = { petstore: { input: './openapi.json', output: './orval/generated/petstore.ts' } }\n`

/** A pet id no pet has, and a category id no category has (the programs' `absentId`). */
export const absentId = 9_007_199_254_740_991

/** Where the SDK programs are, as the failures name it. */
export const fixturesDir = 'test/fixtures/sdk'
export const fixtures = join(projectRoot, fixturesDir)
export const nodeModules = join(projectRoot, 'node_modules')

/** The module of a version's folder that says what its programs must report (`expected.ts`). */
export const expectedModule = 'expected.ts'

/** Where a program runs: its server's origin and the version's base path (`/v2`); `url`, the
 * two together, is the server URL the program is given. */
export interface Served {
  url: string
  basePath: string
}

/** What `expected.ts` exports by default: what each program of its folder must report of a
 * server (the orders and webhooks apart: test/fixtures/sdk/orders-webhooks/expected.ts). */
export type Expected = (served: Served) => object

/** The folder of test/fixtures/sdk/ whose programs test major version `major`: `vN/`, or, for a
 * version with no folder of its own, that of the nearest older version with one. */
export function programsOf(major: number, root = fixtures): string | undefined {
  for (let older = major; older >= 1; older--) if (existsSync(join(root, `v${older}`))) return `v${older}`
  return undefined
}

/** One generated client of one served version, as the SDK test makes it in its temporary folder. */
export interface Client {
  contract: Contract
  /** `v2`: the name of the version, and its folder in the temporary folder */
  version: string
  generator: Generator
  /** the folder of test/fixtures/sdk/ its programs come from: its version's, or the nearest
   * older one's (programsOf) */
  programs: string
  /** its folder in the temporary folder: `v2/hey-api/` */
  folder: string
  /** each file copied into its folder, and the file of the project it is a copy of */
  sources: ReadonlyMap<string, string>
}

/** The client `generator` makes of `contract`, and what is copied next to it: the program of the
 * generator (as client.ts), every other file of the programs' folder but the other generators'
 * programs and expected.ts (the kit of the version), the orders' and webhooks' calls of the
 * generator (as orders-webhooks.ts), and client-kit.ts. */
export function clientOf(contract: Contract, generator: Generator, programs = programsOf(contract.version[0])): Client {
  const version = `v${contract.version[0]}`
  if (programs === undefined) throw new Error(`${contract.file} (${version}) has no SDK programs: write them in ${fixturesDir}/${version}/`)
  const others = new Set([...generators.map(({ name }) => `${name}.ts`), expectedModule])
  const kits = readdirSync(join(fixtures, programs)).filter((name) => name.endsWith('.ts') && !others.has(name))
  const sources = new Map([
    ['client.ts', `${fixturesDir}/${programs}/${generator.name}.ts`],
    ['orders-webhooks.ts', `${fixturesDir}/orders-webhooks/${generator.name}.ts`],
    ['client-kit.ts', `${fixturesDir}/client-kit.ts`],
    ...kits.map((name) => [name, `${fixturesDir}/${programs}/${name}`] as const),
  ])
  return { contract, version, generator, programs, folder: `${version}/${generator.name}/`, sources }
}

/** Copies a client's program and what it imports into its folder under `dir`. */
export function copyClient(dir: string, client: Client): void {
  mkdirSync(join(dir, client.folder), { recursive: true })
  for (const [name, source] of client.sources) copyFileSync(join(projectRoot, source), join(dir, client.folder, name))
}

export function packageJson(name: string): { version: string; bin?: string | Record<string, string> } {
  return JSON.parse(readFileSync(join(nodeModules, name, 'package.json'), 'utf8'))
}

/** The script of a package's (first) command. */
export function binOf(name: string): string {
  const { bin } = packageJson(name)
  return join(nodeModules, name, typeof bin === 'string' ? bin : Object.values(bin ?? {})[0]!)
}

export interface Step {
  code: number | null
  stdout: string
  /** stdout and stderr, as they came */
  output: string
  ms: number
}

/** Runs a plain node process (no test loader: these are the client team's tools), bounded. */
export async function step(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Step> {
  // (nor tap's own settings: a tap run in it is a run of its own, not filtered as this one)
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_OPTIONS' && !name.startsWith('TAP')))
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
    const [code] = (await within(processBound, once(child, 'exit'))) as [number | null]
    return { code, stdout, output, ms: Date.now() - started }
  } finally {
    child.kill('SIGKILL')
  }
}

/** What to do to a version's programs, where they are the nearest older version's: write the
 * version's own, from a copy of those. */
export const ownPrograms = (client: Client, change: string) =>
  `${client.version} runs the programs of ${client.programs} (${fixturesDir}/${client.programs}/): copy that folder to ${fixturesDir}/${client.version}/ and ${change} there`

/** The operations of `contract` a server answered a request of (by its metrics): the calls a
 * program made, when it was the server's only client. */
export function calledOperations(app: FastifyInstance, contract: Contract): Set<string> {
  return new Set([...contract.operations.keys()].filter((id) => app.metrics.requests.of(id, contract.version[0]).series.size > 0))
}

/** A failure for each operation of the client's document its program did not call (`called`),
 * saying where to add the call. */
export function uncalled(client: Client, called: ReadonlySet<string>): string[] {
  const { contract, generator } = client
  const program = `${generator.name}.ts`
  return [...contract.operations.values()]
    .filter(({ id }) => !called.has(id))
    .map(({ id, method, path }) => {
      const add =
        client.programs === client.version
          ? `add its call to ${fixturesDir}/${client.programs}/${program} (or, as an order's or a webhook's, every version's, to ${fixturesDir}/orders-webhooks/${program}) and what it must report to ${fixturesDir}/${client.programs}/${expectedModule}`
          : ownPrograms(client, `add its call to ${program} and what it must report to ${expectedModule}`)
      return `${id} (${method} ${path}) of ${contract.file}: the ${generator.name} program of ${client.version} does not call it: ${add}`
    })
}

/** The files of a client's folder that hold its calls; the others are its kit. */
const programFiles = new Set(['client.ts', 'orders-webhooks.ts'])

const diagnosticForm = /^(?<file>[^(]+)\((?<line>\d+),(?<column>\d+)\): error (?<code>TS\d+): (?<message>.*)$/

/**
 * What the `tsc` diagnostics of a client's folder (under `dir`) ask to change, one failure each:
 * a call of an operation the document does not have; a kit type (of client-kit.ts or the
 * version's kit) that a `sameType` or `exactly` check found different from the generated one;
 * any other diagnostic as tsc wrote it. Where a call of an absent operation is found, those come
 * first, and the other diagnostics as tsc wrote them (they may follow from those calls).
 * `contracts`: every served version's, to name such an operation.
 */
export function explain(diagnostics: readonly string[], client: Client, dir: string, contracts: readonly Contract[]): string[] {
  const found = diagnostics.map((diagnostic) => {
    const at = where(diagnostic, client, dir)
    return { diagnostic, absent: at && absentOperation(client, at, contracts), typeCheck: at && typeCheckFailed(client, at) }
  })
  const absent = found.flatMap(({ absent }) => absent ?? [])
  const asWritten = (diagnostic: string) => `does not compile under strict: ${diagnostic}`
  return absent.length > 0
    ? [
        ...absent,
        ...found.filter(({ absent }) => absent === undefined).map(({ diagnostic }) => `${asWritten(diagnostic)} (it may follow from the calls above)`),
      ]
    : found.map(({ diagnostic, typeCheck }) => typeCheck ?? asWritten(diagnostic))
}

/** Where a diagnostic is, when it is in a file of the client's that the project holds. */
function where(diagnostic: string, client: Client, dir: string): At | undefined {
  const { file, line, column, code, message } = diagnosticForm.exec(diagnostic)?.groups ?? {}
  const source = file?.startsWith(client.folder) ? client.sources.get(file.slice(client.folder.length)) : undefined
  if (source === undefined) return undefined
  const text = readFileSync(join(dir, file!), 'utf8')
  return { code: code!, message: message!, source, text, line: text.split('\n')[Number(line) - 1]!, column: Number(column) - 1, where: `${source}:${line}` }
}

interface At {
  /** tsc's code (`TS2554`) and message */
  code: string
  message: string
  /** the fixture the file is a copy of */
  source: string
  /** the file's text, and the diagnostic's line of it */
  text: string
  line: string
  /** where on the line, from 0 */
  column: number
  /** `test/fixtures/sdk/v2/hey-api.ts:22` */
  where: string
}

/** The type arguments of the call whose `<` is at `start` of `line`, as written. */
function typeArguments(line: string, start: number): string[] {
  const args: string[] = []
  let depth = 0
  let from = start + 1
  for (let i = start; i < line.length; i++) {
    const char = line[i]!
    if ('<([{'.includes(char)) depth++
    else if ('>)]}'.includes(char) && line[i - 1] !== '=') depth--
    if ((char === ',' && depth === 1) || depth === 0) {
      args.push(line.slice(from, i).trim())
      from = i + 1
    }
    if (depth === 0) break
  }
  return args
}

/** The names a program imports: by local name, the name exported and the module (`./client-kit-v2`). */
function importsOf(text: string): Map<string, { name: string; module: string }> {
  const imports = new Map<string, { name: string; module: string }>()
  for (const [, names, module] of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'(\.\/[^']+)\.js'/g)) {
    for (const specifier of names!.split(',')) {
      const [name, local = name] = specifier
        .replace(/^\s*type\s+/, '')
        .trim()
        .split(/\s+as\s+/)
      if (name) imports.set(local!, { name, module: module! })
    }
  }
  return imports
}

/** A `sameType<Generated, Kit>()` or `exactly<Kit>()(value)` whose proof argument tsc asks for
 * (TS2554): the kit type to write as the spec says, and its file. */
function typeCheckFailed(client: Client, at: At): string | undefined {
  const check = /^(sameType|exactly)</.exec(at.line.slice(at.column))?.[1]
  if (at.code !== 'TS2554' || check === undefined) return undefined
  const args = typeArguments(at.line, at.column + check.length)
  const expected = check === 'sameType' ? args[1] : args[0]
  const written = `${check}<${args.join(', ')}> at ${at.where}`
  const generates = `what ${client.generator.name} generates from ${client.contract.file}`
  // the kit's types the expected one names, each with its kit's file
  const imports = importsOf(at.text)
  const kitTypes = [...new Set(expected?.match(/[A-Za-z_$][\w$]*/g))].flatMap((local) => {
    const imported = imports.get(local)
    const file = imported && `${imported.module.slice('./'.length)}.ts`
    const kit = file === undefined || programFiles.has(file) ? undefined : client.sources.get(file)
    return kit === undefined ? [] : [{ name: imported!.name, kit }]
  })
  if (kitTypes.length === 0)
    return `${written}: the type ${client.generator.name} generates from ${client.contract.file} here is not ${expected}: write the program as the spec now says`
  const kits = [...new Set(kitTypes.map(({ kit }) => kit))]
  const names = kitTypes.map(({ name }) => name).join(', ')
  const write =
    client.programs === client.version || !kits.some((kit) => kit.startsWith(`${fixturesDir}/${client.programs}/`))
      ? 'write it as the spec now says'
      : ownPrograms(client, `write it as ${client.contract.file} says`)
  return `${names} in ${kits.join(', ')} differs from ${generates} (${written}): ${write}`
}

/** An openapi-fetch call: `client.GET('/pets/{petId}'`, its method and path. */
const fetchCall = /\.(GET|PUT|POST|DELETE|OPTIONS|HEAD|PATCH|TRACE)\(\s*'([^']+)'/

/** The operation, of one of `contracts` (or only its method and path), of a call the client's
 * document does not have: a name the generated module does not export (hey-api's and orval's
 * functions are named after operationIds), or a method and path its `paths` do not have
 * (openapi-fetch's `client.GET('/pets/{petId}')`). */
function absentCall(client: Client, at: At, contracts: readonly Contract[]): { id?: string; method: string; path: string } | undefined {
  const known = contracts.flatMap((contract) => [...contract.operations.values()])
  const name = /has no exported member (?:named )?'([\w$]+)'/.exec(at.message)?.[1]
  if (name !== undefined) return client.contract.operations.has(name) ? undefined : known.find(({ id }) => id === name)
  const [, method, path] = fetchCall.exec(at.line) ?? []
  const same = (operation: { method: string; path: string }) => operation.method === method && operation.path === path
  if (method === undefined || path === undefined || [...client.contract.operations.values()].some(same)) return undefined
  return known.find(same) ?? { method, path }
}

/** A call of an operation the client's document does not have: where it is, and what to do. */
function absentOperation(client: Client, at: At, contracts: readonly Contract[]): string | undefined {
  const operation = absentCall(client, at, contracts)
  if (operation === undefined) return undefined
  const named = operation.id === undefined ? `${operation.method} ${operation.path}` : `${operation.id} (${operation.method} ${operation.path})`
  const remove =
    client.programs === client.version || at.source.startsWith(`${fixturesDir}/orders-webhooks/`)
      ? `remove the call from ${at.source}`
      : ownPrograms(client, 'write them without it')
  return `${at.where} calls ${named}, which ${client.contract.file} does not have: ${remove}`
}

/** Each client generated in `dir` (its version's openapi.json and orval's config there already),
 * then all compiled by one tsc under strict (each folder a module of its own, not one tsc each):
 * each generator's step, tsc's, and its error lines. */
export async function generatedAndCompiled(dir: string, clients: readonly Client[]) {
  const generated = await Promise.all(
    clients.map((client) => {
      copyClient(dir, client)
      return step(join(dir, client.version), [binOf(client.generator.package), ...client.generator.args])
    }),
  )
  copyFileSync(join(fixtures, 'tsconfig.json'), join(dir, 'tsconfig.json'))
  const compiled = await step(dir, [binOf('typescript'), '-p', '.'])
  const diagnostics = compiled.output.split('\n').filter((line) => line.includes(' error TS'))
  return { generated, compiled, diagnostics }
}
