/**
 * The pet repository's contract, one set of cases run on every store: SQLite in memory, a
 * SQLite file, PostgreSQL. What the handlers rely on must hold on each of them alike.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import t, { type Test } from 'tap'
import { openDatabase } from '../src/storage/index.js'
import { openStorage, type Storage } from '../src/repositories.js'
import type { NewPet, Pet } from '../src/pets/repository.js'
import { aCategory, api, build, call } from './helpers/app.js'
import { freshPostgres, postgresMissing, query } from './helpers/postgres.js'

/** A new, empty store of one kind, named by its DATABASE_URL. */
type FreshStore = (t: Test) => Promise<string>

/** A new folder, removed when the test ends. */
function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-storage-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const sqliteFile: FreshStore = async (t) => `sqlite:${join(tempDir(t), 'pets.db')}`

/** The store at `url`, opened as the server opens it, closed when the test ends. */
async function open(t: Test, url: string): Promise<Storage> {
  // more than one connection, so that concurrent calls really run side by side on PostgreSQL
  const storage = await openStorage(url, { poolSize: 4 })
  t.teardown(() => storage.close())
  return storage
}

const largestCategoryId = Number.MAX_SAFE_INTEGER // 2^53 - 1

/** Names that a careless store would alter: astral characters, combining marks (not to be
 * normalised), right-to-left text, quotes that break naive SQL. */
const unicodeNames = [
  'Zoë',
  '🐕‍🦺 Rex',
  'e\u0301clair', // e + combining acute: must not come back as é
  '\u00e9clair', // é precomposed: a different name from the one above
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  'ミケ',
  'مرحبا',
  'O\'Brien"; drop table pets; --',
  '\\x00 not a NUL',
  'x'.repeat(100),
]

function repositoryContract(t: Test, fresh: FreshStore, { persistent }: { persistent: boolean }) {
  t.test('create returns the pet with a new id; find returns the same pet, or nothing', async (t) => {
    const { pets } = await open(t, await fresh(t))
    const created = await pets.create({ name: 'Rex', categoryId: 1, status: 'pending' })
    t.match(created, { name: 'Rex', categoryId: 1, status: 'pending' })
    t.type(created.id, 'number')
    t.ok(Number.isSafeInteger(created.id) && created.id >= 1, 'the id is a positive safe integer')
    t.strictSame((await pets.list({ limit: 1, id: created.id }))[0], created)
    t.equal((await pets.list({ limit: 1, id: created.id + 1 }))[0], undefined)
    t.equal((await pets.list({ limit: 1, id: Number.MAX_SAFE_INTEGER }))[0], undefined)
  })

  t.test('ids are unique and increasing, also when created concurrently', async (t) => {
    const { pets } = await open(t, await fresh(t))
    const sequential: number[] = []
    for (let i = 0; i < 20; i++) sequential.push((await pets.create({ name: `Seq ${i}`, categoryId: 1, status: 'available' })).id)
    t.ok(
      sequential.every((id, i) => i === 0 || id > sequential[i - 1]!),
      'each id is greater than the one before',
    )
    const concurrent = await Promise.all(Array.from({ length: 40 }, (_, i) => pets.create({ name: `Par ${i}`, categoryId: 2, status: 'sold' })))
    const ids = concurrent.map((pet) => pet.id)
    t.equal(new Set([...sequential, ...ids]).size, 60, 'no id is given twice')
    t.ok(Math.min(...ids) > sequential.at(-1)!, 'later pets have greater ids')
    const listed = await pets.list({ limit: 100 })
    t.strictSame(
      listed.map((pet) => pet.id),
      [...sequential, ...ids].sort((a, b) => a - b),
      'every pet is listed once',
    )
  })

  t.test('list: id order, limit, status filter and the after cursor, alone and together', async (t) => {
    const { pets } = await open(t, await fresh(t))
    const statuses = ['available', 'pending', 'sold'] as const
    const all: Pet[] = []
    for (let i = 0; i < 12; i++) all.push(await pets.create({ name: `Pet ${i}`, categoryId: 1 + i, status: statuses[i % 3]! }))

    t.strictSame(await pets.list({ limit: 100 }), all, 'all, in id order, with every field')
    t.strictSame(await pets.list({ limit: 5 }), all.slice(0, 5), 'the first five')
    t.strictSame(await pets.list({ limit: 5, after: all[4]!.id }), all.slice(5, 10), 'the next five')
    t.strictSame(await pets.list({ limit: 5, after: all[9]!.id }), all.slice(10), 'the rest')
    t.strictSame(await pets.list({ limit: 5, after: all[11]!.id }), [], 'nothing after the last')
    t.strictSame(await pets.list({ limit: 100, after: 0 }), all, 'after 0: everything')

    const sold = all.filter((pet) => pet.status === 'sold')
    t.strictSame(await pets.list({ limit: 100, status: 'sold' }), sold, 'only sold pets')
    t.strictSame(await pets.list({ limit: 2, status: 'sold' }), sold.slice(0, 2))
    t.strictSame(await pets.list({ limit: 2, status: 'sold', after: sold[1]!.id }), sold.slice(2), 'status and after together')
    t.strictSame(await pets.list({ limit: 100, status: 'sold', after: all[0]!.id }), sold, 'after an id that is not sold')
    t.strictSame(await pets.list({ limit: 1, status: 'pending', after: all.at(-1)!.id }), [])
  })

  t.test('an empty store lists nothing', async (t) => {
    const { pets } = await open(t, await fresh(t))
    t.strictSame(await pets.list({ limit: 20 }), [])
    t.strictSame(await pets.list({ limit: 20, status: 'available' }), [])
  })

  t.test('categoryId up to 2^53-1 comes back exactly, as a number', async (t) => {
    const { pets } = await open(t, await fresh(t))
    for (const categoryId of [1, 2 ** 31, 2 ** 32 + 1, largestCategoryId - 1, largestCategoryId]) {
      const created = await pets.create({ name: 'Big', categoryId, status: 'available' })
      const found = (await pets.list({ limit: 1, id: created.id }))[0]
      t.equal(found?.categoryId, categoryId, String(categoryId))
      t.type(found?.categoryId, 'number')
      const [listed] = await pets.list({ limit: 1, after: created.id - 1 })
      t.equal(listed?.categoryId, categoryId)
    }
  })

  t.test('names with unicode, quotes and backslashes come back exactly', async (t) => {
    const { pets } = await open(t, await fresh(t))
    const created: Pet[] = []
    for (const name of unicodeNames) created.push(await pets.create({ name, categoryId: 7, status: 'available' }))
    for (const [i, pet] of created.entries()) {
      t.equal(pet.name, unicodeNames[i])
      t.equal((await pets.list({ limit: 1, id: pet.id }))[0]?.name, unicodeNames[i], `found: ${unicodeNames[i]}`)
    }
    const listed = await pets.list({ limit: 100 })
    t.strictSame(
      listed.map((pet) => pet.name),
      unicodeNames,
    )
  })

  if (persistent) {
    t.test('pets are still there when the store is opened again', async (t) => {
      const url = await fresh(t)
      const pet: NewPet = { name: 'Kept', categoryId: largestCategoryId, status: 'sold' }
      const first = await openStorage(url, { poolSize: 1 })
      const created = await first.pets.create(pet)
      await first.close()
      const { pets } = await open(t, url)
      t.strictSame((await pets.list({ limit: 1, id: created.id }))[0], created)
      const next = await pets.create(pet)
      t.ok(next.id > created.id, 'a new pet after reopening gets a greater id')
    })
  }
}

t.test('the pet repository on SQLite in memory', async (t) => {
  repositoryContract(t, async () => 'sqlite::memory:', { persistent: false })
})

t.test('the pet repository on a SQLite file', async (t) => {
  repositoryContract(t, sqliteFile, { persistent: true })
})

t.test('the pet repository on PostgreSQL', { skip: postgresMissing }, async (t) => {
  repositoryContract(t, freshPostgres, { persistent: true })
})

t.test('a SQLite file is opened in WAL mode with synchronous=FULL', async (t) => {
  const file = join(tempDir(t), 'pets.db')
  const { db } = await openDatabase({ dialect: 'sqlite', file }, { poolSize: 1 })
  t.teardown(() => db.destroy())
  const { rows: journal } = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(db)
  t.strictSame(journal, [{ journal_mode: 'wal' }])
  const { rows: synchronous } = await sql<{ synchronous: number }>`pragma synchronous`.execute(db)
  t.strictSame(synchronous, [{ synchronous: 2 }], '2 is FULL: every commit is fsynced')
})

/** The app's pool and read connections to its database (the backends serving them), ours and
 * the one listening for key revocations excepted. */
async function backends(url: string): Promise<number> {
  const { rows } = await query(
    url,
    "select count(*)::int as n from pg_stat_activity where datname = $1 and pid <> pg_backend_pid() and query not ilike 'listen %'",
    [new URL(url).pathname.slice(1)],
  )
  return rows[0].n
}

/** What a failover or an administrator does: ends every connection to the database. The
 * backends' pids. */
async function terminateBackends(url: string): Promise<number[]> {
  const { rows } = await query(url, 'select pid, pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [
    new URL(url).pathname.slice(1),
  ])
  return rows.map(({ pid }: { pid: number }) => pid)
}

/** Whether every backend of `pids` has ended (the app may have opened new ones since). */
async function allEnded(url: string, pids: readonly number[]): Promise<boolean> {
  const { rows } = await query(url, 'select count(*)::int as n from pg_stat_activity where pid = any($1)', [pids])
  return rows[0].n === 0
}

async function waitFor(condition: () => Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const rex = { name: 'Rex', categoryId: 1 }

t.test('PostgreSQL ends the idle connections of a running app: no request fails', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  const app = await build(t, { DATABASE_URL: url, DATABASE_POOL_SIZE: 2, DATABASE_READ_CONNECTIONS: 1 })
  await aCategory(app)
  // two at once, so that the pool holds two connections
  await Promise.all([1, 2].map(() => call(t, app, { method: 'POST', url: `${api}/pets`, payload: rex })))
  t.equal(await backends(url), 3, 'two idle connections in the pool, and the read connection (opened by the check at start)')
  const terminated = await terminateBackends(url)
  t.equal(terminated.length, 4, 'the three, and the one listening for key revocations')
  // (the app's background jobs may open new connections meanwhile: those are not waited for)
  await waitFor(() => allEnded(url, terminated), 'the backends to end')
  // Had an error event found no listener, this process (the tests' own) would have ended here.
  for (let i = 0; i < 5; i++) {
    const created = await call(t, app, { method: 'POST', url: `${api}/pets`, payload: rex })
    t.equal(created.status, 201, 'a create after the connections were ended')
    const fetched = await call(t, app, { url: `${api}/pets?id=${created.json.id}` })
    t.strictSame(fetched.json, [created.json])
  }
  const listed = await call(t, app, { url: `${api}/pets` })
  t.equal(listed.json.length, 7, 'the pets from before and after are all there')
})

t.test('PostgreSQL ends the connections of an app under load: only the requests on them fail, with 503', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  const poolSize = 4
  // (no read connection: createPet reads its category first, and the read connection would carry
  // the reads of many requests at once; on the pool, a connection serves one request at a time)
  const app = await build(t, { DATABASE_URL: url, DATABASE_POOL_SIZE: poolSize, DATABASE_READ_CONNECTIONS: 0 })
  await aCategory(app)
  const statuses = new Map<number, number>()
  const created: number[] = []
  let stop = false
  // 8 clients for a pool of 4: every connection is in use, or about to be, at any moment
  const clients = Array.from({ length: 8 }, async () => {
    for (let i = 0; i < 1_000 && !stop; i++) {
      const response = await call(t, app, { method: 'POST', url: `${api}/pets`, payload: rex })
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
      if (response.status === 201) created.push(response.json.id)
    }
  })
  // Three times over: where the error event lands (a query, a lent-out or an idle connection)
  // depends on the moment.
  let terminated = 0
  for (let round = 1; round <= 3; round++) {
    await waitFor(async () => created.length >= 60 * round, 'creates between terminations')
    const ended = (await terminateBackends(url)).length
    // the pool's, the read connection, and the one listening for key revocations
    t.ok(ended >= 1 && ended <= poolSize + 2, `round ${round}: at most DATABASE_POOL_SIZE + DATABASE_READ_CONNECTIONS connections, and the listener`)
    terminated += ended
  }
  await waitFor(async () => created.length >= 240, 'creates after the last termination')
  stop = true
  await Promise.all(clients)

  const failed = statuses.get(503) ?? 0
  t.comment(`${terminated} connections ended under load: ${failed} requests failed, ${created.length} succeeded`)
  // A request fails only if its connection was the one ended: at most one per connection.
  t.ok(failed <= terminated, `failed requests (${failed}) <= ended connections (${terminated})`)
  t.strictSame(
    [...statuses.keys()].filter((status) => status !== 201 && status !== 503),
    [],
    'only 201s and 503s (unavailable)',
  )
  for (let i = 0; i < 10; i++) {
    t.equal((await call(t, app, { method: 'POST', url: `${api}/pets`, payload: rex })).status, 201, 'a create afterwards succeeds')
  }
  const found = await Promise.all(created.map(async (id) => (await app.storage.pets.list({ limit: 1, id }))[0]))
  t.ok(
    found.every((pet) => pet !== undefined),
    'every acknowledged pet is stored',
  )
})
