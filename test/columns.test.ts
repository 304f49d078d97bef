/**
 * A field the spec adds cannot be dropped on its way to the database unnoticed: the repositories
 * map every property of the generated Pet and Order to a column (src/storage/columns.ts), and a
 * property without one fails typecheck at that map. Shown here as the server team meets it: a
 * copy of openapi.yaml with a new optional field, its types generated as `npm run generate`
 * makes them, and the storage code compiled against them in a folder of its own (the
 * repositories and what they import: a small program, not the whole project).
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import t from 'tap'
import ts from 'typescript'
import { apiTypes } from '../scripts/generate.js'
import { loadContract, newestSpecPath } from '../src/contract/load.js'
import { projectRoot } from '../src/core/paths.js'
import { mapping } from '../src/storage/columns.js'

const repositories = ['src/pets/repository.ts', 'src/orders/repository.ts']

/** `files` (relative to the project) and every module of the project they import, transitively;
 * generated/ excepted, which each program brings its own of. */
function closure(files: string[]): string[] {
  const found = new Set<string>()
  const visit = (file: string) => {
    if (found.has(file)) return
    found.add(file)
    const text = readFileSync(join(projectRoot, file), 'utf8')
    for (const [, specifier] of text.matchAll(/from '(\.[^']+)'/g)) {
      const target = relative(projectRoot, join(projectRoot, dirname(file), specifier!.replace(/\.js$/, '.ts')))
      if (!target.startsWith('generated/')) visit(target)
    }
  }
  for (const file of files) visit(file)
  return [...found].sort()
}

/** `label`, or `label2`, `label3`…: the first that is not one of `taken`. */
function unusedName(taken: readonly string[]): string {
  let name = 'label'
  for (let n = 2; taken.includes(name); n++) name = `label${n}`
  return name
}

/** The project's compiler options, for a program rooted in `dir`. */
function compilerOptions(dir: string): ts.CompilerOptions {
  const config = ts.readConfigFile(join(projectRoot, 'tsconfig.json'), (path) => ts.sys.readFile(path)).config as object
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, projectRoot)
  return { ...options, rootDir: dir, noEmit: true, incremental: false }
}

/** The errors of compiling the repositories in `dir`, as `file(line): TSnnnn message` lines. */
function typecheck(dir: string): string[] {
  const program = ts.createProgram(
    repositories.map((file) => join(dir, file)),
    compilerOptions(dir),
  )
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where = diagnostic.file
      ? `${relative(dir, diagnostic.file.fileName)}(${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start!).line + 1})`
      : ''
    return `${where}: TS${diagnostic.code} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`
  })
}

t.test('a new optional field of Pet fails typecheck at the repository until it names its column', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-columns-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const file of closure(repositories)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    writeFileSync(join(dir, file), readFileSync(join(projectRoot, file)))
  }
  symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'), 'dir')
  // (ES modules, as in the project)
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  // (the storage is written against the newest version's types, generated/newest.ts)
  const newest = loadContract(newestSpecPath)
  const types = `v${newest.version[0]}`
  cpSync(join(projectRoot, 'generated', types), join(dir, 'generated', types), { recursive: true, filter: (file) => !file.endsWith('.cjs') })
  cpSync(join(projectRoot, 'generated', 'newest.ts'), join(dir, 'generated', 'newest.ts'))
  const generate = async (document: object) => writeFileSync(join(dir, 'generated', types, 'api.ts'), await apiTypes(JSON.stringify(document)))

  const spec = structuredClone(newest.document) as unknown as {
    components: { schemas: Record<string, { properties: Record<string, object> }> }
  }
  await generate(spec)
  t.strictSame(typecheck(dir), [], 'the repositories compile against the spec as it is')

  // step 1 and 2 of docs/changing-the-api.md: the spec gains a field on NewPet and Pet, the types
  // follow. (One the spec does not have yet: the README's `tag`, once a reader has walked it,
  // is in the spec and in the map.)
  const field = unusedName(Object.keys(spec.components.schemas.Pet!.properties))
  const property = { type: 'string', minLength: 1, maxLength: 50, description: 'A free label for the pet.' }
  for (const schema of ['NewPet', 'Pet']) spec.components.schemas[schema]!.properties[field] = property
  await generate(spec)
  const errors = typecheck(dir)
  t.equal(errors.length, 1, errors.join('\n'))
  t.match(
    errors[0],
    new RegExp(
      `^src/pets/repository\\.ts\\(\\d+\\): TS2345 .*\\n {2}Property '${field}' is missing in type .* but required in type 'Columns<Omit<Pet, "categoryName">>'\\.$`,
    ),
    'at the map of pets, naming the field',
  )

  // step 3: the map names its column, and the selects and the insert follow from it
  const pets = join(dir, 'src/pets/repository.ts')
  writeFileSync(pets, readFileSync(pets, 'utf8').replace("    status: 'status',\n", `    status: 'status',\n    ${field}: '${field}',\n`))
  t.strictSame(typecheck(dir), [], 'mapped, it compiles')
})

t.test('a mapping: the select list, rows as objects (a NULL leaves an optional property out), the insert', async (t) => {
  interface Thing {
    id: number
    label: string
    note?: string
    at: string
  }
  const things = mapping<Thing>('things', {
    id: 'id',
    label: 'label',
    note: 'note',
    at: { name: 'at_ms', read: (ms: number) => new Date(ms).toISOString(), write: (iso) => Date.parse(iso) },
  })
  t.equal(things.list, 'id, label, note, at_ms')
  t.strictSame(things.read([1, 'a', null, 0]), { id: 1, label: 'a', at: '1970-01-01T00:00:00.000Z' })
  t.strictSame(things.read([2, 'b', 'n', 1_000]), { id: 2, label: 'b', note: 'n', at: '1970-01-01T00:00:01.000Z' })
  const thing = { id: 1, label: 'a', at: '1970-01-01T00:00:01.000Z' }
  t.strictSame(things.stored(thing), { id: 1, label: 'a', at_ms: 1_000 }, 'its stored form: by column, converted, no optional property it lacks')
  t.strictSame(things.fromStored(things.stored(thing)), thing, 'and back')
  t.equal(things.insert().text, 'insert into things (label, note, at_ms) values ($1, $2, $3) returning id, label, note, at_ms')
  t.equal(
    things.insert(['owner']).text,
    'insert into things (label, note, at_ms, owner) values ($1, $2, $3, $4) returning id, label, note, at_ms',
    'a column the API does not show',
  )
  t.strictSame(things.values({ label: 'c', at: '1970-01-01T00:00:02.000Z' }), ['c', null, 2_000], 'an optional property left out is NULL')
  t.equal(things.ownList, things.list, 'nothing computed: the same list')
  const named = mapping<Thing & { kind?: string }, 'kind'>(
    'things',
    { id: 'id', label: 'label', note: 'note', at: 'at_ms' },
    { computed: { kind: '(select name from kinds)' } },
  )
  t.equal(named.list, 'id, label, note, at_ms, (select name from kinds)')
  t.equal(named.ownList, 'id, label, note, at_ms, null', 'a computed property read as NULL: the same shape')
  t.strictSame(named.read([3, 'd', null, 5, null]), { id: 3, label: 'd', at: 5 }, 'and left out of the row')
})
