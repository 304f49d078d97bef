/**
 * The SDK test's failures say what to change (test/helpers/sdk.ts). Shown here with one
 * generator (openapi-typescript, the quickest) on two changed documents rather than with every
 * client: the kit types that no longer equal what the spec says, named with their file, after
 * the server team adds an optional field as docs/changing-the-api.md does; a call of an
 * operation that a newer version without programs of its own dropped; and an operation no
 * program calls, named with the files to add its call to.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { OpenAPIV3 } from 'openapi-types'
import t from 'tap'
import { contractOf, loadContracts } from '../src/contract/load.js'
import type { Contract } from '../src/contract/model.js'
import { projectRoot } from '../src/core/paths.js'
import { build, testKey } from './helpers/app.js'
import { binOf, calledOperations, clientOf, copyClient, explain, fixtures, generators, nodeModules, step, uncalled } from './helpers/sdk.js'

const [v1, v2] = loadContracts() as [Contract, Contract]
const openapiTypescript = generators.find(({ name }) => name === 'openapi-typescript')!

/** A copy of `contract`'s document changed by `change`, read as the file `file`. */
function changed(contract: Contract, file: string, change: (document: OpenAPIV3.Document) => void): Contract {
  const document = structuredClone(contract.document)
  change(document)
  return contractOf(document, { file })
}

/** Version 2 where clients may give a pet an optional field, as docs/changing-the-api.md's step 1
 * adds `tag` (one the spec does not have yet: once a reader has walked it, `tag` is there). */
const tagged = changed(v2, v2.file, (document) => {
  const [newPet, pet] = ['NewPet', 'Pet'].map((name) => (document.components!.schemas![name] as OpenAPIV3.SchemaObject).properties!)
  let field = 'tag'
  while (field in pet!) field += 's'
  newPet![field] = pet![field] = { type: 'string', minLength: 1, maxLength: 50, pattern: '^[a-z0-9-]+$', description: 'A label for the pet.' }
})

/** Version 2 as the next major, `openapi-v3.yaml`, changed by `change`: it has no programs of its own. */
const nextMajor = (change: (document: OpenAPIV3.Document) => void) =>
  changed(v2, 'openapi-v3.yaml', (document) => {
    document.info.version = '3.0.0'
    for (const server of document.servers!) server.url = server.url.replace(/\/v2$/, '/v3')
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
  // version 3 drops getCategory, and runs the programs of version 2, which call it
  const v3 = nextMajor((document) => delete document.paths['/categories/{categoryId}']!.get)
  const clients = [clientOf(tagged, openapiTypescript), clientOf(v3, openapiTypescript)] as const
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
  const [v2Failures, v3Failures] = clients.map((client) =>
    explain(
      diagnostics.filter((line) => line.startsWith(client.folder)),
      client,
      dir,
      [v1, v2, v3],
    ),
  )

  const program = 'test/fixtures/sdk/v2/openapi-typescript.ts'
  const differs = (type: string, check: string) =>
    `${type} in test/fixtures/sdk/v2/client-kit-v2.ts differs from what openapi-typescript generates from openapi.yaml (${check} at ${linesOf(program, `${check}(`)[0]}): write it as the spec now says`
  t.strictSame(
    v2Failures,
    [differs('NewPet', "sameType<Body<paths['/pets']['post']>, NewPet>"), differs('Pet', 'exactly<Pet>'), differs('Pet', 'exactly<Pet[]>')],
    'the kit types to write as the spec now says, each with its file, where a check compares them',
    { tsc: compiled.output },
  )

  const absent =
    'calls getCategory (GET /categories/{categoryId}), which openapi-v3.yaml does not have: v3 runs the programs of v2 (test/fixtures/sdk/v2/): copy that folder to test/fixtures/sdk/v3/ and write them without it there'
  const calls = linesOf(program, "client.GET('/categories/{categoryId}'")
  t.strictSame(
    v3Failures!.slice(0, calls.length),
    calls.map((call) => `${call} ${absent}`),
    'each call of the operation the document lacks, first',
    { tsc: compiled.output },
  )
  t.ok(
    v3Failures!.slice(calls.length).every((failure) => failure.endsWith('(it may follow from the calls above)')),
    'then the errors that may follow from them, as tsc wrote them',
    { failures: v3Failures },
  )
})

t.test('an operation a program does not call is named with the files to add its call to', async (t) => {
  // the calls a program made are the operations its server answered
  const app = await build(t)
  await app.inject({ url: '/v2/pets', headers: { authorization: `Bearer ${testKey}` } })
  t.strictSame([...calledOperations(app, v2)], ['listPets'], 'a call is counted under its operation and version')
  t.strictSame([...calledOperations(app, v1)], [], 'and under no other version')

  // an operation added to a version: every other one is called
  const photos = (document: OpenAPIV3.Document) => {
    document.paths['/pet-photos'] = { get: { ...document.paths['/categories']!.get!, operationId: 'listPetPhotos' } }
  }
  const everyOther = new Set(v2.operations.keys())
  t.strictSame(
    uncalled(clientOf(changed(v2, v2.file, photos), openapiTypescript), everyOther),
    [
      "listPetPhotos (GET /pet-photos) of openapi.yaml: the openapi-typescript program of v2 does not call it: add its call to test/fixtures/sdk/v2/openapi-typescript.ts (or, as an order's or a webhook's, every version's, to test/fixtures/sdk/orders-webhooks/openapi-typescript.ts) and what it must report to test/fixtures/sdk/v2/expected.ts",
    ],
    'in a version with programs of its own: its program and expected.ts',
  )
  t.strictSame(
    uncalled(clientOf(nextMajor(photos), openapiTypescript), everyOther),
    [
      'listPetPhotos (GET /pet-photos) of openapi-v3.yaml: the openapi-typescript program of v3 does not call it: v3 runs the programs of v2 (test/fixtures/sdk/v2/): copy that folder to test/fixtures/sdk/v3/ and add its call to openapi-typescript.ts and what it must report to expected.ts there',
    ],
    "in a version that runs an older one's programs: the folder to make, and what to add there",
  )
})
