/**
 * The SDK test's failures say what to change (test/helpers/sdk.ts). Shown here with one
 * generator (openapi-typescript, the quickest) on two changed documents rather than with every
 * client: the kit types that no longer equal what the spec says, named with their file, after
 * the server team adds an optional field as docs/changing-the-api.md does; a call of an
 * operation that a newer version without programs of its own dropped; and an operation no
 * program calls, named with the files to add its call to.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { OpenAPIV3 } from 'openapi-types'
import t from 'tap'
import { contractOf } from '../src/contract/load.js'
import type { Contract } from '../src/contract/model.js'
import { projectRoot } from '../src/core/paths.js'
import { build, testKey } from './helpers/app.js'
import { binOf, calledOperations, clientOf, copyClient, explain, fixtures, fixturesDir, generators, nodeModules, step, uncalled } from './helpers/sdk.js'
import { newest, served } from './helpers/version-roles.js'

const openapiTypescript = generators.find(({ name }) => name === 'openapi-typescript')!

/** The newest served version with programs of its own (test/fixtures/sdk/vN/: a new major runs
 * those of the version before it until it has its own), its folder and its openapi-typescript
 * program. */
const owner = served.findLast(({ version }) => existsSync(join(fixtures, `v${version[0]}`)))!
const ownFolder = `${fixturesDir}/v${owner.version[0]}`
const program = `${ownFolder}/openapi-typescript.ts`
/** The version after the newest served one, which has no programs of its own, and its name. */
const nextMajor = newest.version[0] + 1
const next = `v${nextMajor}`
const nextFile = `openapi-${next}.yaml`

/** A copy of `contract`'s document changed by `change`, read as the file `file`. */
function changed(contract: Contract, file: string, change: (document: OpenAPIV3.Document) => void): Contract {
  const document = structuredClone(contract.document)
  change(document)
  return contractOf(document, { file })
}

/** The newest version with programs of its own where clients may give a pet an optional field,
 * as docs/changing-the-api.md's step 1 adds `tag` (one the spec does not have yet: once a reader
 * has walked it, `tag` is there). */
const tagged = changed(owner, owner.file, (document) => {
  const [newPet, pet] = ['NewPet', 'Pet'].map((name) => (document.components!.schemas![name] as OpenAPIV3.SchemaObject).properties!)
  let field = 'tag'
  while (field in pet!) field += 's'
  newPet![field] = pet![field] = { type: 'string', minLength: 1, maxLength: 50, pattern: '^[a-z0-9-]+$', description: 'A label for the pet.' }
})

/** The newest version as the next major, `openapi-vN.yaml`, changed by `change`: it has no programs of its own. */
const asNextMajor = (change: (document: OpenAPIV3.Document) => void) =>
  changed(newest, nextFile, (document) => {
    document.info.version = `${nextMajor}.0.0`
    for (const server of document.servers!) server.url = server.url.replace(new RegExp(`${newest.basePath}$`), `/${next}`)
    change(document)
  })

/** `file:N` of each line N of the fixture `file` that holds `text`. */
function linesOf(file: string, text: string): string[] {
  const lines = readFileSync(join(projectRoot, file), 'utf8').split('\n')
  return lines.flatMap((line, index) => (line.includes(text) ? [`${file}:${index + 1}`] : []))
}

t.test('a kit type the generated one no longer equals, and a call of an operation the document lacks, are named with the file to change', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-sdk-messages-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  symlinkSync(nodeModules, join(dir, 'node_modules'), 'dir')
  writeFileSync(join(dir, 'package.json'), '{ "private": true, "type": "module" }\n')
  // the next major drops getCategory, and runs the programs of the newest version with programs
  // of its own, which call it
  const dropped = asNextMajor((document) => delete document.paths['/categories/{categoryId}']!.get)
  const clients = [clientOf(tagged, openapiTypescript), clientOf(dropped, openapiTypescript)] as const
  t.strictSame(
    clients.map(({ version, programs }) => [version, programs]),
    [
      [`v${owner.version[0]}`, `v${owner.version[0]}`],
      [next, `v${owner.version[0]}`],
    ],
    'one version with programs of its own, one that runs them',
  )
  const generated = await Promise.all(
    clients.map((client) => {
      mkdirSync(join(dir, client.version))
      writeFileSync(join(dir, client.version, 'openapi.json'), JSON.stringify(client.contract.document))
      copyClient(dir, client)
      return step(join(dir, client.version), [binOf(openapiTypescript.package), ...openapiTypescript.args])
    }),
  )
  t.strictSame(
    generated.map(({ code }) => code),
    [0, 0],
    'generated',
    { output: generated.map(({ output }) => output) },
  )
  copyFileSync(join(fixtures, 'tsconfig.json'), join(dir, 'tsconfig.json'))
  const compiled = await step(dir, [binOf('typescript'), '-p', '.'])
  const diagnostics = compiled.output.split('\n').filter((line) => line.includes(' error TS'))
  const [taggedFailures, droppedFailures] = clients.map((client) =>
    explain(
      diagnostics.filter((line) => line.startsWith(client.folder)),
      client,
      dir,
      [...served, dropped],
    ),
  )

  // the version's kit: the module of its folder its program takes NewPet from
  const kitModule = /import \{[^}]*\btype NewPet\b[^}]*\} from '\.\/([\w-]+)\.js'/.exec(readFileSync(join(projectRoot, program), 'utf8'))?.[1]
  t.ok(kitModule, `${program} takes NewPet from a kit of its own folder`)
  const differs = (type: string, check: string) =>
    `${type} in ${ownFolder}/${kitModule}.ts differs from what openapi-typescript generates from ${owner.file} (${check} at ${linesOf(program, `${check}(`)[0]}): write it as the spec now says`
  t.strictSame(
    taggedFailures,
    [differs('NewPet', "sameType<Body<paths['/pets']['post']>, NewPet>"), differs('Pet', 'exactly<Pet>'), differs('Pet', 'exactly<Pet[]>')],
    'the kit types to write as the spec now says, each with its file, where a check compares them',
    { tsc: compiled.output },
  )

  const absent = `calls getCategory (GET /categories/{categoryId}), which ${nextFile} does not have: ${next} runs the programs of v${owner.version[0]} (${ownFolder}/): copy that folder to ${fixturesDir}/${next}/ and write them without it there`
  const calls = linesOf(program, "client.GET('/categories/{categoryId}'")
  t.ok(calls.length > 0, `${program} calls getCategory`)
  t.strictSame(
    droppedFailures!.slice(0, calls.length),
    calls.map((call) => `${call} ${absent}`),
    'each call of the operation the document lacks, first',
    { tsc: compiled.output },
  )
  t.ok(
    droppedFailures!.slice(calls.length).every((failure) => failure.endsWith('(it may follow from the calls above)')),
    'then the errors that may follow from them, as tsc wrote them',
    { failures: droppedFailures },
  )
})

t.test('an operation a program does not call is named with the files to add its call to', async (t) => {
  // the calls a program made are the operations its server answered
  const app = await build(t)
  await app.inject({ url: `${newest.basePath}/pets`, headers: { authorization: `Bearer ${testKey}` } })
  t.strictSame([...calledOperations(app, newest)], ['listPets'], 'a call is counted under its operation and version')
  for (const other of served.filter((contract) => contract !== newest))
    t.strictSame([...calledOperations(app, other)], [], `and under no other version (${other.basePath})`)

  // an operation added to a version: every other one is called
  const photos = (document: OpenAPIV3.Document) => {
    document.paths['/pet-photos'] = { get: { ...document.paths['/categories']!.get!, operationId: 'listPetPhotos' } }
  }
  const v = `v${owner.version[0]}`
  t.strictSame(
    uncalled(clientOf(changed(owner, owner.file, photos), openapiTypescript), new Set(owner.operations.keys())),
    [
      `listPetPhotos (GET /pet-photos) of ${owner.file}: the openapi-typescript program of ${v} does not call it: add its call to ${ownFolder}/openapi-typescript.ts (or, as an order's or a webhook's, every version's, to ${fixturesDir}/orders-webhooks/openapi-typescript.ts) and what it must report to ${ownFolder}/expected.ts`,
    ],
    'in a version with programs of its own: its program and expected.ts',
  )
  t.strictSame(
    uncalled(clientOf(asNextMajor(photos), openapiTypescript), new Set(newest.operations.keys())),
    [
      `listPetPhotos (GET /pet-photos) of ${nextFile}: the openapi-typescript program of ${next} does not call it: ${next} runs the programs of ${v} (${ownFolder}/): copy that folder to ${fixturesDir}/${next}/ and add its call to openapi-typescript.ts and what it must report to expected.ts there`,
    ],
    "in a version that runs an older one's programs: the folder to make, and what to add there",
  )
})
