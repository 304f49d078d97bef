/**
 * Versioned migrations: `npm run migrate` (scripts/migrate.ts) and the migrations the server
 * applies at startup, on SQLite and PostgreSQL. Applied once, under a lock, all pending ones in
 * one transaction.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Migrator, sql } from 'kysely'
import t, { type Test } from 'tap'
import { orderEvents } from '../src/orders/events.js'
import { petEvents } from '../src/pets/events.js'
import { openStorage } from '../src/repositories.js'
import { connect } from '../src/storage/index.js'
import { nameKey } from '../src/core/names.js'
import { MigrationError, migrate, migrations } from '../src/storage/migrations.js'
import { migrationStatementMs } from '../src/storage/postgres.js'
import { partRevisions } from '../src/storage/revision.js'
import { freshPostgres, postgresMissing, query } from './helpers/postgres.js'
import { runMain } from './helpers/main.js'
import { launch, processBound, run, within } from './helpers/processes.js'
import { main } from '../scripts/migrate.js'

// Each process costs seconds under the TypeScript loader: the tests run side by side.
t.jobs = 3

/** Every migration there is, in order (the same list for both dialects). */
const allMigrations = Object.keys(migrations('sqlite'))
/** What `npm run migrate` printed: the migrations it applied, then the line that ends it. */
function outputOf(stdout: string): { applied: string[]; last: string | undefined } {
  const lines = stdout.trimEnd().split('\n')
  return { applied: lines.slice(0, -1).map((line) => line.replace(/^applied /, '')), last: lines.at(-1) }
}
/** The last migration of version 1.0.0, the first release. */
const release100 = '0003_api_keys_notify'

/** A new folder, removed when the test ends. */
function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-migrate-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const sqliteFile = async (t: Test) => `sqlite:${join(tempDir(t), 'pets.db')}`

/** What the database holds: the migrations recorded as applied, and the tables. */
async function schemaOf(url: string): Promise<{ recorded: string[]; tables: string[] }> {
  const { db } = await connect(url, { poolSize: 1 })
  try {
    const tables = (await db.introspection.getTables({ withInternalKyselyTables: true })).map((table) => table.name).sort()
    const recorded = tables.includes('kysely_migration')
      ? (await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db)).rows.map((row) => row.name)
      : []
    return { recorded, tables }
  } finally {
    await db.destroy()
  }
}

/** Runs SQL on the database at `url`, outside the code under test's migrations. */
async function execute(url: string, statement: string) {
  const { db } = await connect(url, { poolSize: 1 })
  try {
    await sql.raw(statement).execute(db)
  } finally {
    await db.destroy()
  }
}

const migrateScript = 'scripts/migrate.ts'

/** `npm run migrate`, its main called here, on the database at `url`. */
const migrateCli = (url: string) => runMain(main, [], { DATABASE_URL: url })

/** The connections to the database at `url` (PostgreSQL), but the one that asks. */
const connectionsTo = async (url: string) =>
  Number((await query(url, 'select count(*) as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')).rows[0].n)

/** The first run on SQLite is the script's one real process: its exit status, its streams, and
 * that it ends at once. On PostgreSQL, main is called here, and leaves no connection open. */
async function appliesOnceThenNothing(t: Test, url: string) {
  t.strictSame(Object.keys(migrations('postgres')), allMigrations, 'both dialects have the same migrations')
  let first
  if (url.startsWith('sqlite:')) {
    const migrating = launch(t, migrateScript, [], { DATABASE_URL: url })
    // it exits as soon as it has said so: no pool left open behind it (the bound leaves room for
    // a busy machine and for the coverage data written at exit)
    const saidDoneAt = new Promise<number>((resolve) =>
      migrating.child.stdout!.on('data', () => migrating.stdout().includes(' is up to date') && resolve(Date.now())),
    )
    first = await within(processBound, migrating.exited)
    const lingered = Date.now() - (await within(1_000, saidDoneAt))
    t.ok(lingered < 7_000, `it exits within seconds of its last line (${lingered} ms)`)
  } else {
    first = await migrateCli(url)
    // no pool left open behind it: an idle pg connection would hold the process of
    // `npm run migrate` until pg closes it, 10 s later (a connection ends on the server a moment
    // after its client closes it)
    let open = await connectionsTo(url)
    for (const deadline = Date.now() + 5_000; open > 0 && Date.now() < deadline; open = await connectionsTo(url)) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    t.equal(open, 0, 'it leaves no connection open')
  }
  t.equal(first.code, 0, first.stderr)
  t.match(first.stdout, /^(applied \S+\n)+(SQLite|PostgreSQL) \S+ is up to date\n$/)
  t.strictSame(outputOf(first.stdout).applied, allMigrations, 'every migration, in order')
  t.strictSame((await schemaOf(url)).recorded, allMigrations)

  const second = await migrateCli(url)
  t.equal(second.code, 0, second.stderr)
  t.match(second.stdout, /^(SQLite|PostgreSQL) \S+ is up to date; nothing to apply\n$/, 'the second run applies nothing')
  t.equal(second.stderr, '')
  t.strictSame((await schemaOf(url)).recorded, allMigrations)
}

t.test('npm run migrate on a SQLite file applies every migration, then nothing the second time', async (t) => {
  await appliesOnceThenNothing(t, await sqliteFile(t))
})

t.test('npm run migrate on PostgreSQL applies every migration, then nothing the second time', { skip: postgresMissing }, async (t) => {
  await appliesOnceThenNothing(t, await freshPostgres(t))
})

/** Starts `count` migrate processes on one fresh database and lets them go at the same instant;
 * what each printed, or undefined (a failure said) when not all got ready. */
async function processesTogether(t: Test, url: string, count: number) {
  const signal = join(tempDir(t), 'go')
  const processes = Array.from({ length: count }, () => launch(t, 'test/fixtures/migrate-on-signal.ts', [signal], { DATABASE_URL: url }))
  const deadline = Date.now() + 60_000
  while (!processes.every((process) => process.stdout().startsWith('ready\n'))) {
    if (processes.some((process) => process.child.exitCode !== null) || Date.now() > deadline) {
      t.fail(`not all processes got ready: ${processes.map((process) => process.stderr()).join('\n')}`)
      return undefined
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  writeFileSync(signal, '')
  return Promise.all(processes.map((process) => process.exited))
}

/**
 * `count` npm run migrate at once on one fresh database. On SQLite, processes: in one, a
 * transaction waiting for another's write lock would block the very thread that holds it. On
 * PostgreSQL, main called `count` times here, each with connections of its own, which the
 * database's lock orders as it orders processes'.
 */
async function migrateTogether(t: Test, url: string, count: number) {
  const finished = url.startsWith('sqlite:') ? await processesTogether(t, url, count) : await Promise.all(Array.from({ length: count }, () => migrateCli(url)))
  if (finished === undefined) return

  t.strictSame(
    finished.map(({ code }) => code),
    Array(count).fill(0),
    `every run exits 0 ${finished.map(({ stderr }) => stderr).join('')}`,
  )
  const applied = finished.flatMap(({ stdout }) => [...stdout.matchAll(/^applied (\S+)$/gm)].map((match) => match[1]))
  t.strictSame(applied.sort(), allMigrations, 'each migration is applied by exactly one run')
  t.equal(finished.filter(({ stdout }) => stdout.includes('nothing to apply')).length, count - 1, 'the others find nothing to apply')
  t.strictSame((await schemaOf(url)).recorded, allMigrations, 'and is recorded once')
}

t.test('four npm run migrate at once on one fresh SQLite file: all exit 0, each migration applied once', async (t) => {
  await migrateTogether(t, await sqliteFile(t), 4)
})

t.test('four npm run migrate at once on one fresh PostgreSQL database: all exit 0, each migration applied once', { skip: postgresMissing }, async (t) => {
  await migrateTogether(t, await freshPostgres(t), 4)
})

t.test('eight connections migrating one fresh PostgreSQL database at once apply each migration once', { skip: postgresMissing }, async (t) => {
  // In one process, so that the eight overlap for certain: the race on creating Kysely's own
  // tables, then the advisory lock.
  const url = await freshPostgres(t)
  const databases = await Promise.all(Array.from({ length: 8 }, () => connect(url, { poolSize: 1 })))
  t.teardown(() => Promise.all(databases.map(({ db }) => db.destroy())))
  const applied = await Promise.all(databases.map((database) => migrate(database)))
  t.strictSame(applied.flat().sort(), allMigrations)
  t.equal(applied.filter((names) => names.length === 0).length, 7, 'seven found nothing to apply')
})

/**
 * A store of version 1.0.0 (its migrations, up to 0003), in use: pets of every status and a key.
 * The migrations since (1.1.0's adds the orders) lose nothing; the pets can be ordered at once.
 */
async function previousVersionMigrates(t: Test, url: string) {
  const database = await connect(url, { poolSize: 1 })
  const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations(database.dialect) } })
  const { error } = await migrator.migrateTo(release100)
  t.equal(error, undefined)
  for (const [i, status] of ['available', 'pending', 'sold', 'available'].entries()) {
    await database.sql.run('insert into pets (name, category_id, status) values ($1, $2, $3)', [`Pet ${i} é🐕`, i + 1, status])
  }
  await database.sql.run("insert into api_keys (name, prefix, hash, created_at) values ('ci', 'pet_1', 'h', 1)")
  const pets = await database.sql.rows('select * from pets order by id')
  await database.close()

  const { code, stdout, stderr } = await migrateCli(url)
  t.equal(code, 0, stderr)
  t.strictSame(outputOf(stdout).applied, allMigrations.slice(allMigrations.indexOf(release100) + 1), 'only the later migrations are applied')
  const storage = await openStorage(url, { poolSize: 1 })
  t.teardown(() => storage.close())
  t.strictSame(
    (await storage.pets.list({ limit: 100 })).map(({ id, name, categoryId, status }) => ({ id, name, category_id: categoryId, status })),
    pets,
    'every pet is there, as it was',
  )
  const [key] = await storage.keys.list()
  t.strictSame(
    key?.roles,
    ['pets:read', 'pets:write', 'orders:read', 'orders:write', 'webhooks:read', 'webhooks:write'],
    'and the key, with every role given by default: no client loses an operation',
  )
  t.match(await storage.orders.place({ petId: 1 }, 'key:1'), { placed: { id: 1, petId: 1, status: 'placed' } }, 'an old pet can be ordered')
  t.match(await storage.orders.place({ petId: 2 }, 'key:1'), { unavailable: { petId: 2, status: 'pending' } })
}

t.test('a SQLite file of the previous version migrates without losing a pet', async (t) => {
  await previousVersionMigrates(t, await sqliteFile(t))
})

t.test('a PostgreSQL database of the previous version migrates without losing a pet', { skip: postgresMissing }, async (t) => {
  await previousVersionMigrates(t, await freshPostgres(t))
})

/** That migrating `database` stops with a MigrationError (which the server reports in one line)
 * naming the stored names that are now one name, by id, not merged. */
async function refusesToMigrate(t: Test, database: Awaited<ReturnType<typeof connect>>, message: string) {
  const error = await migrate(database).catch((error: Error) => error)
  t.ok(error instanceof MigrationError, 'a MigrationError: the server reports it in one line')
  t.equal((error as Error).message, message, 'each name, by id, not merged')
}

/** A connection to the database at `url`, closed when the test ends, migrated up to `migration`. */
async function migratedTo(t: Test, url: string, migration: string) {
  const database = await connect(url, { poolSize: 1 })
  t.teardown(() => database.close())
  const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations(database.dialect) } })
  t.equal((await migrator.migrateTo(migration)).error, undefined, `migrated up to ${migration}`)
  return database
}

/** The last migration of version 2.0.0, which added categories unique by their lower case. */
const release200 = '0011_categories_and_versions'

/**
 * Categories of version 2.0.0, whose names were unique only by their lower case, and pets of
 * version 1 that name categories never added: names that are now one name stop the migration,
 * named; once renamed, it applies, and the ids pets named are never given to a category.
 */
async function categoryNamesMigrate(t: Test, url: string) {
  const database = await migratedTo(t, url, release200)
  // (numbered 1 to 5, as version 2.0.0 numbered them)
  for (const name of ['Café', 'CAFÉ ', 'Straße', 'STRASSE', 'Bird']) {
    await database.sql.run('insert into categories (name, name_key, created_at) values ($1, $2, 0)', [name, name.toLowerCase()])
  }
  for (const categoryId of [1, 7, 7, 9]) await database.sql.run("insert into pets (name, category_id, status) values ('Rex', $1, 'available')", [categoryId])

  await refusesToMigrate(
    t,
    database,
    'migration 0012_category_names_and_ids failed: categories whose names are now one name (Unicode NFKC and case folding, invisible characters ignored): ' +
      '1 "Café" and 2 "CAFÉ "; 3 "Straße" and 4 "STRASSE". Rename all but one of each in the database (categories.name, and name_key as its lower case), ' +
      'then migrate again; no migration was applied',
  )
  t.equal((await database.sql.rows('select name_key from categories')).length, 5, 'the categories are as they were')

  await database.sql.run("update categories set name = 'Café Ouest', name_key = 'café ouest' where id = 2")
  await database.sql.run("update categories set name = 'Strasse Nord', name_key = 'strasse nord' where id = 4")
  t.strictSame(await migrate(database), allMigrations.slice(allMigrations.indexOf('0012_category_names_and_ids')))
  const storage = await openStorage(url, { poolSize: 1 })
  t.teardown(() => storage.close())
  t.strictSame(
    (await storage.categories.list({ limit: 10 })).map(({ name }) => name),
    ['Café', 'Café Ouest', 'Straße', 'Strasse Nord', 'Bird'],
    'every category is there, as it was',
  )
  t.match(await storage.categories.create('CAFE\u0301'), { taken: { id: 1 } }, 'a stored name is taken by its fold')
  t.match(await storage.categories.create('strasse'), { taken: { id: 3 } })
  t.equal(await storage.categories.find(7), undefined, 'an id the pets named is no category')
  const ids: number[] = []
  for (const name of ['Fish', 'Rodent', 'Reptile']) ids.push(((await storage.categories.create(name)) as { created: { id: number } }).created.id)
  t.strictSame(ids, [6, 8, 10], "nor given to one: 7 and 9 are the pets' ids")
}

t.test('SQLite: categories of version 2.0.0 migrate to one name per look-alike, and keep the ids pets named', async (t) => {
  await categoryNamesMigrate(t, await sqliteFile(t))
})

t.test('PostgreSQL: categories of version 2.0.0 migrate to one name per look-alike, and keep the ids pets named', { skip: postgresMissing }, async (t) => {
  await categoryNamesMigrate(t, await freshPostgres(t))
})

/** The last migration of version 2.1.0, whose outbox kept events by the API's property names. */
const release210 = '0014_revision_of_changed_rows'

/**
 * Events waiting in the outbox of version 2.1.0, their pet or order by version 2's property
 * names: they are kept by their tables' columns from then on, and shown as they were.
 */
async function waitingEventsMigrate(t: Test, url: string) {
  const database = await migratedTo(t, url, release210)
  const pet = { id: 1, name: 'Rex', categoryId: 2, categoryName: 'Dogs', status: 'pending' }
  const unnamed = { id: 2, name: 'Tom', categoryId: 7, status: 'available' }
  const order = { id: 3, petId: 1, status: 'placed', placedAt: '2026-11-23T10:02:41.512Z' }
  const written = [
    ['pet.created', { data: unnamed }],
    ['order.placed', { data: order }],
    ['pet.status_changed', { data: pet, from: 'available', to: 'pending' }],
    ['order.status_changed', { data: { ...order, status: 'delivered' }, from: 'placed', to: 'delivered' }],
  ] as const
  for (const [type, fields] of written) {
    await database.sql.run('insert into webhook_events (type, occurred_at, fields) values ($1, 0, $2)', [type, JSON.stringify(fields)])
  }
  t.strictSame(await migrate(database), allMigrations.slice(allMigrations.indexOf(release210) + 1))
  const stored = (await database.sql.rows<{ fields: string }>('select fields from webhook_events order by id')).map(({ fields }) => JSON.parse(fields))
  const placedAt = Date.parse(order.placedAt)
  t.strictSame(
    stored,
    [
      { data: { id: 2, name: 'Tom', category_id: 7, status: 'available' } },
      { data: { id: 3, pet_id: 1, status: 'placed', placed_at: placedAt } },
      { data: { id: 1, name: 'Rex', category_id: 2, status: 'pending', categoryName: 'Dogs' }, from: 'available', to: 'pending' },
      { data: { id: 3, pet_id: 1, status: 'delivered', placed_at: placedAt }, from: 'placed', to: 'delivered' },
    ],
    "each by its table's columns",
  )
  const shown = { ...petEvents, ...orderEvents }
  t.strictSame(
    written.map(([type], i) => shown[type](stored[i])),
    [
      { data: { id: 2, name: 'Tom', category: { id: 7 }, status: 'available' } },
      { data: order },
      { data: { id: 1, name: 'Rex', category: { id: 2, name: 'Dogs' }, status: 'pending' }, from: 'available', to: 'pending' },
      { data: { ...order, status: 'delivered' }, from: 'placed', to: 'delivered' },
    ],
    'and shown as they were',
  )
}

t.test("SQLite: events waiting in version 2.1.0's outbox are kept by their tables' columns, and shown as they were", async (t) => {
  await waitingEventsMigrate(t, await sqliteFile(t))
})

t.test(
  "PostgreSQL: events waiting in version 2.1.0's outbox are kept by their tables' columns, and shown as they were",
  { skip: postgresMissing },
  async (t) => {
    await waitingEventsMigrate(t, await freshPostgres(t))
  },
)

/** The last migration before categories were unique by their confusable skeleton (UTS #39). */
const beforeSkeletons = '0015_events_by_column'

/**
 * Categories unique by nameKey (NFKC and case folding), among them look-alikes of other scripts
 * and a name with a dot its i shows already, and an id a pet named: names that are now one name
 * stop the migration, named; once renamed, it applies, and every stored name is taken by its
 * look-alikes.
 */
async function skeletonNamesMigrate(t: Test, url: string) {
  const database = await migratedTo(t, url, beforeSkeletons)
  // (numbered 1 to 6, with their keys of the day; 7 an id a pet named, without a name)
  // (ids given: since 0012 the insert that adds a category chooses them)
  for (const [i, name] of ['Cats', 'C\u0430ts', 'Ti\u0307gers', 'Big\u2800Dogs', 'Tigers', 'Fox\u2212Hound'].entries()) {
    await database.sql.run('insert into categories (id, name, name_fold, created_at) values ($1, $2, $3, 0)', [i + 1, name, nameKey(name)])
  }
  await database.sql.run('insert into categories (id, created_at) values (7, 0)')

  await refusesToMigrate(
    t,
    database,
    "migration 0016_category_names_by_skeleton failed: categories whose names are now one name (look-alikes of any script, Unicode's confusable skeleton of UTS #39): " +
      '1 "Cats" and 2 "C\u0430ts"; 3 "Ti\u0307gers" and 5 "Tigers". Rename all but one of each in the database (categories.name), then migrate again; ' +
      'no migration was applied',
  )
  t.strictSame(
    (await database.sql.rows<{ name_fold: string | null }>('select name_fold from categories order by id')).map(({ name_fold }) => name_fold),
    ['Cats', 'C\u0430ts', 'Ti\u0307gers', 'Big\u2800Dogs', 'Tigers', 'Fox\u2212Hound', null].map((name) => (name === null ? null : nameKey(name))),
    'the categories are as they were',
  )

  await database.sql.run("update categories set name = 'Cats of Kazan' where id = 2")
  await database.sql.run("update categories set name = 'Tiger Cubs' where id = 3")
  t.strictSame(await migrate(database), allMigrations.slice(allMigrations.indexOf(beforeSkeletons) + 1))
  const storage = await openStorage(url, { poolSize: 1 })
  t.teardown(() => storage.close())
  t.strictSame(
    (await storage.categories.list({ limit: 10 })).map(({ name }) => name),
    ['Cats', 'Cats of Kazan', 'Tiger Cubs', 'Big\u2800Dogs', 'Tigers', 'Fox\u2212Hound'],
    'every category is there, as it was',
  )
  t.match(await storage.categories.create('\u0421\u0430ts'), { taken: { id: 1 } }, 'a stored name is taken by its look-alikes')
  t.match(await storage.categories.create('Big Dogs'), { taken: { id: 4 } })
  t.match(await storage.categories.create('fox-hound'), { taken: { id: 6 } })
  t.match(await storage.categories.create('TIGER CUBS'), { taken: { id: 3 } }, 'a renamed one by its new name')
  t.equal(await storage.categories.find(7), undefined, 'an id the pets named is still no category')
  t.match(await storage.categories.create('Fish'), { created: { id: 8 } }, 'nor given to one')
}

t.test('SQLite: categories unique by NFKC and case folding migrate to one name per look-alike of any script', async (t) => {
  await skeletonNamesMigrate(t, await sqliteFile(t))
})

t.test('PostgreSQL: categories unique by NFKC and case folding migrate to one name per look-alike of any script', { skip: postgresMissing }, async (t) => {
  await skeletonNamesMigrate(t, await freshPostgres(t))
})

/** The last migration of the store's one revision, which every change moved (the last before skeletons too). */
const oneRevision = beforeSkeletons

/**
 * A database with pets and orders under the store's one revision migrates to a revision per part
 * (0017): the old counter and its triggers are gone, so a write goes on; each part starts at 0
 * and moves with its own rows' changes alone; the key tags are made with is one per database.
 */
async function revisionByPartMigrates(t: Test, url: string) {
  const database = await migratedTo(t, url, oneRevision)
  const { sql: run } = database
  await run.run("insert into categories (id, name, name_fold, created_at) values (900, 'Fish', 'fish', 0)")
  await run.run("insert into pets (name, category_id, status) values ('Rex', 900, 'available'), ('Tom', 900, 'available')")
  await run.run("insert into orders (pet_id, status, placed_at, owner) select id, 'placed', 0, 'key:1' from pets where name = 'Rex'")
  t.ok(Number((await run.row<{ revision: number }>('select sum(revision) as revision from store_revision'))!.revision) > 0, 'the one revision counted them')
  t.strictSame(await migrate(database), allMigrations.slice(allMigrations.indexOf(oneRevision) + 1))
  const { tables } = await schemaOf(url)
  t.notOk(tables.includes('store_revision'), 'the one revision is gone')
  t.equal((await run.rows('select secret from tag_secret')).length, 1, 'one tag key')
  const parts = ['catalogue', 'orders', 'orders:key:1', 'orders:key:2']
  const revisions = async () => {
    const now = await partRevisions(run, database.dialect)(parts)
    return parts.map((part) => Number(now.get(part)))
  }
  t.strictSame(await revisions(), [0, 0, 0, 0], 'each part starts at 0')
  await run.run("update orders set status = 'delivered' where owner = 'key:1'")
  t.strictSame(await revisions(), [0, 1, 1, 0], "an order moved: every order's part and its owner's")
  await run.run("insert into orders (pet_id, status, placed_at, owner) select id, 'placed', 0, 'key:2' from pets where name = 'Tom'")
  t.strictSame(await revisions(), [0, 2, 1, 1], "another owner's order: theirs")
  await run.run("update pets set status = 'sold' where name = 'Rex'")
  t.strictSame(await revisions(), [1, 2, 1, 1], 'a pet changed: the catalogue')
  await run.run("insert into webhook_subscriptions (owner, url, events, secret, created_at) values ('key:1', 'https://example.com/', '[]', 's', 0)")
  t.strictSame(await revisions(), [1, 2, 1, 1], 'a subscription: no part a page is tagged by')
}

t.test('SQLite: a store of one revision migrates to a revision per part, and a tag key', async (t) => {
  await revisionByPartMigrates(t, await sqliteFile(t))
})

t.test('PostgreSQL: a store of one revision migrates to a revision per part, and a tag key', { skip: postgresMissing }, async (t) => {
  await revisionByPartMigrates(t, await freshPostgres(t))
})

/** A database where migration 0002 cannot run: a table of its name is there already. */
async function failingMigrationLeavesNothing(t: Test, url: string, alreadyExists: RegExp) {
  await execute(url, 'create table api_keys (id integer)')
  const failed = await migrateCli(url)
  t.equal(failed.code, 1)
  t.match(failed.stderr, /^petstore migrate: migration 0002_api_keys failed: .+; no migration was applied\n$/, 'one line, no stack')
  t.match(failed.stderr, alreadyExists, 'it names the problem')
  const after = await schemaOf(url)
  t.notOk(after.tables.includes('pets'), 'the pets table of migration 0001, run before in the same transaction, is not there')
  t.strictSame(after.recorded, [], 'no migration is recorded')

  // With the obstacle gone, the same migrations apply.
  await execute(url, 'drop table api_keys')
  const { db, dialect } = await connect(url, { poolSize: 1 })
  t.teardown(() => db.destroy())
  t.strictSame(await migrate({ db, dialect }), allMigrations)
}

t.test('a migration that fails leaves no half-applied schema on a SQLite file', async (t) => {
  await failingMigrationLeavesNothing(t, await sqliteFile(t), /table "?api_keys"? already exists/)
})

t.test('a migration that fails leaves no half-applied schema on PostgreSQL', { skip: postgresMissing }, async (t) => {
  await failingMigrationLeavesNothing(t, await freshPostgres(t), /relation "api_keys" already exists/)
})

t.test('the server does not start on a schema it cannot migrate, and says why in one line', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  await execute(url, 'create table api_keys (id integer)')
  const { code, stderr } = await run(t, 'src/server.ts', [], { DATABASE_URL: url })
  t.equal(code, 1)
  t.match(stderr, /^petstore: migration 0002_api_keys failed: relation "api_keys" already exists; no migration was applied\n$/)
})

t.test(
  "on PostgreSQL a migration's statements have a minute, not a request's DATABASE_TIMEOUT_MS; requests keep theirs",
  { skip: postgresMissing },
  async (t) => {
    const database = await connect(await freshPostgres(t), { poolSize: 1, timeoutMs: 400 })
    t.teardown(() => database.close())
    const { rows } = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(database.db)
    t.equal(rows[0]!.statement_timeout, `${migrationStatementMs / 60_000}min`)
    t.equal((await database.sql.row<{ statement_timeout: string }>('show statement_timeout'))!.statement_timeout, '400ms')
  },
)

t.test('a database migrated by a newer version (a migration this one lacks) is refused, not changed', async (t) => {
  const database = await connect('sqlite::memory:', { poolSize: 1 })
  t.teardown(() => database.db.destroy())
  await migrate(database)
  await sql`insert into kysely_migration (name, timestamp) values ('9999_from_a_newer_version', ${new Date().toISOString()})`.execute(database.db)
  const error = await migrate(database).catch((error: Error) => error)
  t.ok(error instanceof MigrationError, 'a MigrationError: the server reports it in one line')
  t.match(
    (error as Error).message,
    /^cannot migrate: corrupted migrations: previously executed migration 9999_from_a_newer_version is missing; no migration was applied$/,
  )
  t.strictSame(
    (await sql<{ name: string }>`select name from kysely_migration order by name`.execute(database.db)).rows.map((row) => row.name),
    [...allMigrations, '9999_from_a_newer_version'],
    'the record is as it was',
  )
})

t.test('npm run migrate with bad configuration: one line on stderr, exit 1', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ DATABASE_URL: 'mysql://localhost/pets' }, /^petstore migrate: DATABASE_URL: unknown scheme "mysql:"; use sqlite:PATH/],
    [{ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x' }, /^petstore migrate: cannot connect to PostgreSQL 127\.0\.0\.1:1\/x: connect ECONNREFUSED/],
    [{ DATABASE_POOL_SIZE: '0' }, /^petstore migrate: invalid configuration: DATABASE_POOL_SIZE must be >= 1/],
  ]
  const finished = await Promise.all(cases.map(([env]) => runMain(main, [], env)))
  for (const [i, { code, stdout, stderr }] of finished.entries()) {
    const [env, message] = cases[i]!
    t.equal(code, 1, JSON.stringify(env))
    t.match(stderr, message)
    t.equal(stderr.split('\n').length, 2, 'exactly one line')
    t.equal(stdout, '')
  }
})
