/**
 * A start checks that the storage keeps every field of the contract and that the database has
 * every column the storage names: the typecheck says the first, but `npm start` builds without
 * one; the second is the state between mapping a column and writing its migration. Either way
 * the server refuses to start, saying what to do, instead of dropping the field or answering 500.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Sqlite from 'better-sqlite3'
import t, { type Test } from 'tap'
import { loadContracts } from '../src/contract/load.js'
import { projectRoot } from '../src/core/paths.js'
import { openStorage, storedSchemas } from '../src/repositories.js'
import { StorageMismatch, unmappedFields } from '../src/storage/schema-check.js'
import { build } from './helpers/app.js'
import { freshPostgres, postgresMissing, query } from './helpers/postgres.js'
import { run } from './helpers/processes.js'
import { editedContract } from './helpers/spec.js'

const label = { type: 'string', minLength: 1, maxLength: 50, pattern: '^\\S' }
/** A property name no stored schema has: the one docs/changing-the-api.md adds (`tag`) may be
 * in the spec by the time this runs. */
const field = ['label', 'label2', 'label3'].find((name) => !JSON.stringify(loadContracts().map(({ document }) => document.components)).includes(`"${name}"`))!

t.test('the contract as it is: every field of a stored schema has its column', async (t) => {
  for (const contract of loadContracts()) t.strictSame(unmappedFields(contract, storedSchemas), [], contract.file)
})

t.test('a contract with a field the storage does not keep is refused, naming the field and the map', async (t) => {
  const edited = editedContract((document) => {
    const schemas = document.components!.schemas as Record<string, { properties: Record<string, object> }>
    for (const name of ['NewPet', 'Pet', 'Order', 'NewWebhook']) schemas[name]!.properties[field] = label
  })
  const refused = await build(t, { contract: edited }).catch((error: Error) => error)
  t.type(refused, StorageMismatch, 'reported in words, without a stack (src/failure.ts)')
  t.equal(
    (refused as Error).message,
    [
      // (version 1's Pet is made of the newest's by a version change: its fields come from there)
      `openapi.yaml: NewPet.${field} has no column: map it in petColumns (src/pets/repository.ts)`,
      `openapi.yaml: Order.${field} has no column: map it in orderColumns (src/orders/repository.ts)`,
      `openapi.yaml: NewWebhook.${field} has no column: map it in webhookColumns (src/webhooks/repository.ts)`,
    ].join('\n'),
  )
})

t.test('a schema the contract does not have, or one without properties, asks for nothing', async (t) => {
  const document = { openapi: '3.1.0', info: { title: 'none', version: '1.0.0' }, paths: {} }
  const served = (edited: object) => ({ file: 'none.yaml', document: { ...document, ...edited } })
  t.strictSame(unmappedFields(served({}), storedSchemas), [], 'no components')
  t.strictSame(unmappedFields(served({ components: {} }), storedSchemas), [], 'no schemas')
  t.strictSame(unmappedFields(served({ components: { schemas: { Pet: { type: 'object' } } } }), storedSchemas), [], 'no properties')
})

t.test('each line names a map that is in the file it names', async (t) => {
  for (const { map, file } of storedSchemas) t.match(readFileSync(join(projectRoot, file), 'utf8'), `export const ${map} = `, `${map} in ${file}`)
})

/** The server started on `DATABASE_URL`: it must stop in one line that says what to add. */
async function refusesInOneLine(t: Test, DATABASE_URL: string) {
  const { code, stdout, stderr } = await run(t, 'src/server.ts', [], { DATABASE_URL, API_KEYS: 'schema-check-key' })
  t.equal(code, 1, 'exit code 1')
  t.equal(
    stderr,
    'petstore: the database has no column pets.category_id, which petColumns (src/pets/repository.ts) maps: add it by a migration at the end of migrations() in src/storage/migrations.ts (a start applies it, as npm run migrate does)\n',
    'one line, the column, the map and the migration to write',
  )
  t.equal(stdout, '', 'and nothing else')
}

t.test('a SQLite database without a column a map names: the start refuses it, saying what to add', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-schema-check-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'pets.db')
  await (await openStorage(`sqlite:${file}`, { poolSize: 1 })).close()
  // (as if petColumns had named a column that no migration adds)
  const database = new Sqlite(file)
  database.exec('drop index pets_category_id; alter table pets drop column category_id')
  database.close()
  await refusesInOneLine(t, `sqlite:${file}`)
})

t.test('the same on PostgreSQL', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  await (await openStorage(url, { poolSize: 1 })).close()
  await query(url, 'alter table pets drop column category_id')
  await refusesInOneLine(t, url)
})
