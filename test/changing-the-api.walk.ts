/**
 * The walk-throughs of docs/changing-the-api.md, each followed in a copy of the project as the
 * server team would follow it: its code blocks put where the page says, `npm run generate`,
 * `npm run typecheck` (failing where the page says it fails, then passing), `npm run
 * check:breaking`, and what the walk changed, checked in the copy by a program of its own (its
 * app built, each answer checked against its version's document).
 */
import t, { type Test } from 'tap'
import { docBlock, indented, projectCopy } from './helpers/project.js'

// One copy for the three walks, each made in it in turn from the copy as it was made: what one
// walk compiled, and what its typecheck found of the files it did not change, the next one
// keeps (test/helpers/project.ts).
t.setTimeout(1_800_000)
t.jobs = 1
const copy = projectCopy(t)
t.beforeEach(() => copy.reset())

const page = 'changing-the-api.md'
const block = (id: string) => docBlock(page, id)

/** A step that must pass, its output shown when it does not. */
async function passes(t: Test, what: string, done: Promise<{ code: number | null; output: string; ms: number }>) {
  const { code, output, ms } = await done
  t.comment(`${what}: ${ms} ms`)
  t.equal(code, 0, what, { output: output.slice(-4000) })
  return output
}

/** A component schema of a document, as written: from its name to what follows it. */
function schemaText(text: string, name: string): string {
  const start = text.indexOf(`\n    ${name}:\n`) + 1
  const next = /\n {0,4}\S/g
  next.lastIndex = start
  return text.slice(start, next.exec(text)!.index + 1)
}

t.test("a new field: openapi.yaml's two pet schemas, the column map, a migration, the SDK kit; the field makes its round trip in both versions", async (t) => {
  const property = block('field-property')
  // (each schema's properties come last: the property goes at its end)
  for (const schema of ['NewPet', 'Pet']) {
    const text = copy.read('openapi.yaml')
    const written = schemaText(text, schema)
    copy.write(
      'openapi.yaml',
      text.replace(written, () => `${written}${indented(property, 8)}`),
    )
  }
  const generated = await passes(t, 'generate', copy.generate())
  t.match(generated, /, 14 changed\n/, 'fourteen generated files change')
  const unmapped = await copy.typecheck()
  t.not(unmapped.code, 0)
  t.match(
    unmapped.output,
    /src\/pets\/repository\.ts\(\d+,\d+\): error TS2345: .*\n {2}Property 'tag' is missing in type .* but required in type 'Columns<Omit<Pet, "categoryName">>'\./,
    'the column map names the field',
  )
  copy.insert('src/pets/repository.ts', block('field-column'), { after: "    status: 'status',\n" })
  const unshown = await copy.typecheck()
  t.match(
    unshown.output,
    /src\/pets\/handlers\.ts\(\d+,\d+\): error TS2741: Property 'tag' is missing in type .* but required in type 'Every<.*>'/,
    'petOf names it',
  )
  t.match(
    unshown.output,
    /src\/versions\/changes\/category-object\.ts\(\d+,\d+\): error TS2741: Property 'tag' is missing in type .* but required in type 'Every<.*>'/,
    "and version 1's Pet change",
  )
  t.match(block('field-shown'), /status, tag \}/, 'the page shows the field written with the others')
  copy.write(
    'src/pets/handlers.ts',
    copy
      .read('src/pets/handlers.ts')
      .replace('categoryName, status }: Pet)', 'categoryName, status, tag }: Pet)')
      .replace('name: categoryName }, status }', 'name: categoryName }, status, tag }'),
  )
  const change = 'src/versions/changes/category-object.ts'
  copy.write(
    change,
    copy
      .read(change)
      .replace('({ id, name, category, status })', '({ id, name, category, status, tag })')
      .replace('categoryId: category.id, status })', 'categoryId: category.id, status, tag })'),
  )
  copy.insert('src/storage/migrations.ts', block('field-migration'), {
    after: "        await db.schema.dropTable('lifecycle_usage').execute()\n      },\n    },\n",
  })
  const kit = 'test/fixtures/sdk/v2/client-kit-v2.ts'
  copy.write(
    kit,
    copy
      .read(kit)
      .replace('  status?: PetStatus\n}\nexport interface NewPet {', '  status?: PetStatus\n  tag?: string\n}\nexport interface NewPet {')
      .replace('  categoryId: number\n  status?: PetStatus\n}', '  categoryId: number\n  status?: PetStatus\n  tag?: string\n}'),
  )
  await passes(t, 'typecheck', copy.typecheck())
  await passes(t, 'lint: no error, no warning', copy.lint())
  await passes(t, 'check:breaking: a compatible change', copy.checkBreaking())
  const pets = await copy.checks(t, 'the round trip, the pets', { file: 'test/walks/tag.ts' })
  for (const file of ['contract/versions/1.overlay.yaml', 'openapi.yaml']) {
    const made = pets.filter(({ name }) => name.startsWith(`${file}: createPet takes its optional tag and answers it as sent > `))
    t.ok(made.length > 0 && made.every(({ ok }) => ok), `${file}: the tag makes its round trip`)
  }
  await copy.checks(t, "the SDKs of version 2: the kit's Pet and NewPet are what each generator makes", { file: 'test/walks/sdk-v2.ts' })
})

t.test("a new operation: openapi.yaml's path and header, version 1's overlay, the handler; its test passes", async (t) => {
  copy.insert('openapi.yaml', indented(block('operation-path'), 2), { before: '  /store/orders:\n' })
  copy.insert('openapi.yaml', indented(block('operation-header'), 4), { before: '    CategoryLocation:\n' })
  const overlay = 'contract/versions/1.overlay.yaml'
  // (each line as the page writes it: the action's target as it was, with one more name)
  for (const id of ['operation-overlay-path', 'operation-overlay-header']) {
    const line = block(id)
    const was = line.replace(/,'[^']*'\]\n$/, ']\n')
    t.ok(copy.read(overlay).includes(was), `${overlay} has ${was.trim()}`)
    copy.write(
      overlay,
      copy.read(overlay).replace(was, () => line),
    )
  }
  const generated = await passes(t, 'generate', copy.generate())
  t.match(generated, /validators\/get_v2_categories_categoryid_pets_params\.cjs/, 'its validators')
  t.notMatch(generated, /(validators|serializers)\/(?!get_v2_categories_categoryid_pets_)/, "no other route's module")
  const unwritten = await copy.typecheck()
  t.not(unwritten.code, 0)
  t.match(
    unwritten.output,
    /src\/app\.ts\(\d+,\d+\): error TS2741: Property 'listCategoryPets' is missing in type .* but required in type 'OperationHandlers'/,
    'the handler map names it',
  )

  copy.write(
    'src/pets/handlers.ts',
    copy
      .read('src/pets/handlers.ts')
      .replace("export type PetOperation = 'listPets' | 'createPet'", "export type PetOperation = 'listPets' | 'createPet' | 'listCategoryPets'"),
  )
  copy.insert('src/pets/handlers.ts', block('operation-option'), { after: '  petsUrl: string\n' })
  copy.write(
    'src/pets/handlers.ts',
    copy.read('src/pets/handlers.ts').replace('{ petsUrl }: PetHandlerOptions', '{ petsUrl, categoryPetsUrl }: PetHandlerOptions'),
  )
  copy.insert('src/pets/handlers.ts', block('operation-handler'), { before: '    async createPet(' })
  copy.write('src/pets/plugin.ts', copy.read('src/pets/plugin.ts').replace(/^ {2}app\.decorate\('petOperations'.*\n/m, block('operation-plugin')))
  copy.write('test/categories.test.ts', `${copy.read('test/categories.test.ts')}\n${block('operation-test')}`)
  await passes(t, 'typecheck', copy.typecheck())
  // (the test as the page writes it, run by a program: test/categories.test.ts's names, its `t` the checker's)
  await copy.checks(
    t,
    'its test, every answer checked against the document',
    `import { build, call, testKey } from './helpers/app.js'
import { checker } from './helpers/checks.js'
const { t, report } = checker()
const curator = 'curator-key-00001'
${block('operation-test')}
await report()
`,
  )
  t.match(
    await passes(t, 'check:breaking', copy.checkBreaking()),
    /openapi\.yaml against contract\/versions\/1\.overlay\.yaml: each of its \d+ breaking difference\(s\) covered/,
  )
})

t.test('a breaking change: npm run new-major serves the next major with no code edited; the change made, set back, declared, then served', async (t) => {
  // step 1
  t.equal(block('new-major'), 'npm run new-major && npm run generate && npm run typecheck\n', 'the page runs these')
  await passes(t, 'new-major', copy.newMajor())
  await passes(t, 'generate', copy.generate())
  t.match(copy.read('generated/newest.ts'), "from './v3/api.js'", 'the newest is version 3')
  await passes(t, 'typecheck, no code edited', copy.typecheck())
  t.match(
    await passes(t, 'check:breaking', copy.checkBreaking()),
    /openapi\.yaml against contract\/versions\/2\.overlay\.yaml: each of its \d+ breaking difference\(s\) covered by the version changes of version 2/,
  )
  const served = await passes(t, 'served beside the others', copy.run(probe))
  const answers = JSON.parse(served.slice(served.indexOf('['))) as [string, number, unknown][]
  t.strictSame(
    answers.map(([url, status, body]) => [url, status, body]),
    [
      ['/v3/categories', 201, { id: 1, name: 'Bird' }],
      ['/v3/pets', 201, { id: 1, name: 'Rex', category: { id: 1, name: 'Bird' }, status: 'available' }],
      ['/v3/pets?id=1', 200, [{ id: 1, name: 'Rex', category: { id: 1, name: 'Bird' }, status: 'available' }]],
      ['/v2/pets?id=1', 200, [{ id: 1, name: 'Rex', category: { id: 1, name: 'Bird' }, status: 'available' }]],
      ['/v1/pets/1', 200, { id: 1, name: 'Rex', categoryId: 1, status: 'available' }],
    ],
  )
  await copy.checks(t, 'versions 1 and 2 answer as before', { file: 'test/walks/side-by-side.ts' })

  // step 2: version 3 renames name to title; version 2's overlay sets it back
  const renamed = (text: string) =>
    text
      .replace(/^( {8}- )name\n/m, '$1title\n')
      .replace("        name:\n          $ref: '#/components/schemas/", "        title:\n          $ref: '#/components/schemas/")
  let spec = copy.read('openapi.yaml')
  for (const name of ['NewPet', 'Pet']) {
    const schema = schemaText(spec, name)
    spec = spec.replace(schema, () => renamed(schema))
  }
  copy.write('openapi.yaml', spec)
  copy.write('contract/versions/2.overlay.yaml', `${copy.read('contract/versions/2.overlay.yaml')}${block('breaking-overlay')}`)
  await passes(t, 'generate', copy.generate())
  const refused = await copy.checkBreaking()
  t.equal(refused.code, 1, 'check:breaking refuses it')
  t.comment(
    refused.output
      .split('\n')
      .filter((line) => / against |covers it/.test(line))
      .join('\n'),
  )
  t.match(refused.output, /openapi\.yaml against contract\/versions\/2\.overlay\.yaml: \d+ of its \d+ breaking difference\(s\) covered by no version change/)
  t.match(refused.output, /no change of version 2 covers it: write schemas: \{ Pet: \{ down \} \}/, 'naming the change to write')

  // step 3: the change, declared; step 4: the column map
  copy.write('src/versions/changes/pet-title.ts', block('breaking-change'))
  copy.write(
    'src/versions/index.ts',
    copy
      .read('src/versions/index.ts')
      .replace(
        "import { getPetFromList } from './changes/get-pet.js'",
        "import { getPetFromList } from './changes/get-pet.js'\nimport { petTitle } from './changes/pet-title.js'",
      )
      .replace('= [getPetFromList, categoryObject]', '= [petTitle, getPetFromList, categoryObject]'),
  )
  const unmapped = await copy.typecheck()
  t.not(unmapped.code, 0)
  t.match(
    unmapped.output,
    /src\/pets\/repository\.ts\(\d+,\d+\): error TS2353: Object literal may only specify known properties, and 'name' does not exist in type 'Columns<Omit<Pet, "categoryName">>'/,
    'the column map names the field',
  )
  copy.write('src/pets/repository.ts', copy.read('src/pets/repository.ts').replace("    name: 'name',\n", "    title: 'name',\n"))
  const unshown = await copy.typecheck()
  t.match(unshown.output, /src\/pets\/handlers\.ts\(\d+,\d+\): error TS2339: Property 'name' does not exist on type 'Pet'/, 'then petOf')
  t.match(
    block('title-shown'),
    /\{ id, title, categoryId, categoryName, status \}: Pet\): Every<ApiPet> => \(\{ id, title, category, status \}\)/,
    'the page shows the title written',
  )
  copy.write(
    'src/pets/handlers.ts',
    copy
      .read('src/pets/handlers.ts')
      .replace('petOf({ id, name, categoryId,', 'petOf({ id, title, categoryId,')
      .replace('return { id, name, category:', 'return { id, title, category:'),
  )
  // what the typecheck names then is the tests written against the newest version's shapes
  const followed = await copy.typecheck()
  const errors = followed.output.split('\n').filter((line) => / error TS/.test(line))
  t.ok(errors.length > 0 && errors.every((line) => line.startsWith('test/')), 'the code compiles: what is left are tests of the newest shapes', { errors })
  await passes(t, 'check:breaking', copy.checkBreaking())
  const after = await passes(t, 'served', copy.run(probe.replaceAll("{ name: 'Rex', categoryId: 1 }", "{ title: 'Rex', categoryId: 1 }")))
  const renamedAnswers = JSON.parse(after.slice(after.indexOf('['))) as [string, number, unknown][]
  t.strictSame(
    renamedAnswers.slice(1).map(([url, status, body]) => [url, status, body]),
    [
      ['/v3/pets', 201, { id: 1, title: 'Rex', category: { id: 1, name: 'Bird' }, status: 'available' }],
      ['/v3/pets?id=1', 200, [{ id: 1, title: 'Rex', category: { id: 1, name: 'Bird' }, status: 'available' }]],
      ['/v2/pets?id=1', 200, [{ id: 1, name: 'Rex', category: { id: 1, name: 'Bird' }, status: 'available' }]],
      ['/v1/pets/1', 200, { id: 1, name: 'Rex', categoryId: 1, status: 'available' }],
    ],
    'version 3 says title; versions 2 and 1 say name, as they did',
  )
})

/** A program run in the copy: a category and a pet made through version 3, the pet read
 * through each version; prints [url, status, body] of each. */
const probe = `import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/core/config.js'
const key = 'walk-key-0123456789'
const app = await buildApp({ ...loadConfig({}), DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', API_KEYS: [\`\${key}:pets:read+pets:write+categories:write\`] })
const answers: unknown[] = []
const call = async (method: string, url: string, payload?: object) => {
  const answer = await app.inject({ method, url, payload, headers: { authorization: \`Bearer \${key}\` } })
  answers.push([url, answer.statusCode, answer.json()])
}
await call('POST', '/v3/categories', { name: 'Bird' })
await call('POST', '/v3/pets', { name: 'Rex', categoryId: 1 })
await call('GET', '/v3/pets?id=1')
await call('GET', '/v2/pets?id=1')
await call('GET', '/v1/pets/1')
await app.close()
console.log(JSON.stringify(answers))
`
