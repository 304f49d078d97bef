/**
 * Version 2's categories: listed, added (a name unique however it is written and in whichever
 * script, by a key with categories:write; a joiner only where its script needs it) and read, each answer checked against the newest document (openapi.yaml); no category is given
 * an id that a pet named before it existed; on both stores, and under concurrency on PostgreSQL.
 */
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import t, { type Test } from 'tap'
import { aCategory, build, call, testKey } from './helpers/app.js'
import { atMost, sleep } from './helpers/concurrency.js'
import { lookAlikes } from './helpers/look-alikes.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'

const curator = 'curator-key-00001'

async function categoriesOn(t: Test, DATABASE_URL: string) {
  const app = await build(t, { DATABASE_URL, API_KEYS: [testKey, `${curator}:pets:read+categories:write`] })
  const add = (name: unknown, key = curator) => call(t, app, { method: 'POST', url: '/v2/categories', payload: { name }, key })

  t.strictSame((await call(t, app, { url: '/v2/categories' })).json, [], 'none yet')
  const made = await atMost(4, 5, (i) => add(['Bird', 'Rodent', 'Fish', 'Reptile', 'Bird'][i]))
  t.strictSame(made.map(({ status }) => status).sort(), [201, 201, 201, 201, 409], 'two adds of one name at once make one category')
  const again = await add('bIRD')
  t.strictSame(
    again.json,
    {
      code: 'category_name_taken',
      message: `A category named "Bird" exists already (category ${made.find(({ json }) => json.name === 'Bird')!.json.id})`,
      status: 409,
    },
    'whatever its case',
  )

  const first = await call(t, app, { url: '/v2/categories?limit=3' })
  t.equal(first.json.length, 3)
  t.equal(first.headers.link, `</v2/categories?limit=3&after=${first.json[2].id}>; rel="next"`)
  const rest = await call(t, app, { url: `/v2/categories?limit=3&after=${first.json[2].id}` })
  t.equal(rest.json.length, 1)
  t.equal(rest.headers.link, undefined)
  t.strictSame(
    [...first.json, ...rest.json].map(({ id }: { id: number }) => id),
    [1, 2, 3, 4],
    'in id order, each once',
  )

  const one = await call(t, app, { url: '/v2/categories/2' })
  t.equal(one.status, 200)
  t.match(one.json, { id: 2, name: String })
  t.strictSame((await call(t, app, { url: '/v2/categories/99' })).json, { code: 'not_found', message: 'Category 99 not found', status: 404 })
  t.equal((await call(t, app, { url: '/v2/categories/x' })).status, 400)
  t.equal((await call(t, app, { url: '/v2/categories?limit=0' })).status, 400)
  t.equal((await call(t, app, { url: '/v2/categories', key: null })).status, 401)
  t.equal((await call(t, app, { url: '/v2/categories', key: curator })).status, 200, 'pets:read lists them')

  for (const [name, why] of [
    ['', 'empty'],
    [' ', 'nothing visible'],
    ['a\u0000b', 'a control character'],
    ['x'.repeat(101), 'too long'],
    [7, 'not a string'],
  ] as const) {
    t.equal((await add(name)).status, 400, why)
  }
  t.equal((await call(t, app, { method: 'POST', url: '/v2/categories', payload: { name: 'Cat', kind: 'x' }, key: curator })).status, 400, 'an unknown property')
  t.equal((await add('Cat', testKey)).status, 403, 'a key without categories:write')
  t.equal((await add('Cat', 'no-such-key-0000')).status, 401)
  t.equal(
    (await call(t, app, { method: 'POST', url: '/v2/categories', payload: 'name=Cat', headers: { 'content-type': 'text/plain' }, key: curator })).status,
    415,
  )
  t.equal((await call(t, app, { method: 'POST', url: '/v2/categories', payload: { name: 'x'.repeat(20_000) }, key: curator })).status, 413)

  // one name per look-alike: what looks the same is the same name, whichever way it is written
  const cafe = await add('Café')
  t.equal(cafe.status, 201)
  for (const [name, why] of [
    ['Cafe\u0301', 'decomposed'],
    ['ＣＡＦÉ', 'full width'],
    ['cAFÉ', 'another case'],
  ] as const) {
    t.strictSame(
      (await add(name)).json,
      { code: 'category_name_taken', message: `A category named "Café" exists already (category ${cafe.json.id})`, status: 409 },
      why,
    )
  }
  for (const [name, why] of [
    ['Caf\u200Bé', 'zero-width space'],
    ['\u202ECafé', 'bidi override'],
    ['Café ', 'trailing space'],
    [' Café', 'leading space'],
    ['\uFEFFCafé', 'byte order mark'],
    ['Ca\u00ADfé', 'soft hyphen'],
    ['Caf\u3164é', 'Hangul filler'],
  ] as const) {
    const refused = await add(name)
    t.equal(refused.status, 400, why)
    t.match(refused.json, { code: 'invalid_request', message: /^body\/name is not valid: A category's name: /, status: 400 })
  }
  t.equal((await add('Straße')).status, 201)
  t.match((await add('STRASSE')).json, { code: 'category_name_taken', message: /"Straße"/ }, 'ß is ss: toLowerCase is not case folding')
  t.equal((await add('Strasse Ost')).status, 201, 'a different name is added')

  // a pet's category name is read for the versions that show it, and only for them
  const pet = (await call(t, app, { method: 'POST', url: '/v2/pets', payload: { name: 'Tweety', categoryId: 2 } })).json
  const stored = { id: pet.id, name: 'Tweety', categoryId: 2, status: 'available' }
  t.strictSame(await app.storage.pets.list({ limit: 2, id: pet.id }), [{ ...stored, categoryName: pet.category.name }], 'with its category name')
  t.strictSame(await app.storage.pets.list({ limit: 2, id: pet.id, named: false }), [stored], 'without it')
  t.strictSame(
    (await call(t, app, { url: `/v1/pets/${pet.id}` })).json,
    { id: pet.id, name: 'Tweety', categoryId: 2, status: 'available' },
    'version 1 reads it without',
  )
}

t.test('SQLite: categories', (t) => categoriesOn(t, 'sqlite::memory:'))
t.test('PostgreSQL: categories', { skip: postgresMissing }, async (t) => categoriesOn(t, await freshPostgres(t)))

/**
 * Names that look alike are one name, whichever is added first: the second is told 409, naming
 * the first; names that need a joiner are taken as sent; a joiner where no script needs it, and
 * a name that shows nothing (blanks or marks alone), are told 400.
 */
async function lookAlikesOn(t: Test, DATABASE_URL: string, alikeFirst: boolean) {
  const app = await build(t, { DATABASE_URL, API_KEYS: [testKey, `${curator}:pets:read+categories:write`] })
  const add = (name: string) => call(t, app, { method: 'POST', url: '/v2/categories', payload: { name }, key: curator })

  for (const [alike, twin, why] of lookAlikes) {
    const [first, second] = alikeFirst ? [alike, twin] : [twin, alike]
    const added = await add(first)
    t.equal(added.status, 201, `${JSON.stringify(first)} is added`)
    t.strictSame(
      (await add(second)).json,
      { code: 'category_name_taken', message: `A category named ${JSON.stringify(first)} exists already (category ${added.json.id})`, status: 409 },
      `${JSON.stringify(second)} is the same name: ${why}`,
    )
  }

  for (const [name, why] of [
    ['گربه\u200Cها', 'Persian "cats": a zero width non-joiner between two letters that would join'],
    ['ශ්\u200Dරී ලංකා', 'Sinhala "Sri Lanka": a zero width joiner after the virama'],
  ] as const) {
    const added = await add(name)
    t.equal(added.status, 201, why)
    t.equal(added.json.name, name, 'stored as sent, the joiner kept')
    t.equal((await call(t, app, { url: `/v2/categories/${added.json.id}` })).json.name, name, 'and read back so')
  }
  t.match((await add('گربهها')).json, { status: 409, code: 'category_name_taken', message: /"گربه‌ها"/ }, 'without its non-joiner, the same name')

  for (const [name, message, why] of [
    [
      'Ca\u200Cts',
      'the zero width non-joiner (U+200C) at character 3 neither follows a virama nor stands between two letters that join (RFC 5892, Appendix A.1)',
      'a non-joiner in Latin',
    ],
    [
      'ا\u200Cب',
      'the zero width non-joiner (U+200C) at character 2 neither follows a virama nor stands between two letters that join (RFC 5892, Appendix A.1)',
      'after a letter that does not join the next',
    ],
    ['🐈\u200D⬛', 'the zero width joiner (U+200D) at character 2 does not follow a virama (RFC 5892, Appendix A.2)', 'a joiner in an emoji sequence'],
  ] as const) {
    t.strictSame((await add(name)).json, { code: 'invalid_request', message: `body/name is not valid: ${message}`, status: 400 }, why)
  }

  for (const [name, why] of [
    ['\u2800\u2800', 'braille blanks alone'],
    ['\u0301', 'a combining mark alone'],
    ['\u{1D159}', 'a null notehead alone'],
    ['\u3164\u3164', 'Hangul fillers alone'],
    ['Dogs\u2800', 'a blank at the end'],
    ['\u0301Dogs', 'a mark first'],
  ] as const) {
    const refused = await add(name)
    t.equal(refused.status, 400, `${why}: nothing shows there`)
    t.match(refused.json, { code: 'invalid_request', message: /^body\/name is not valid: A category's name: /, status: 400 })
  }
  t.equal((await call(t, app, { url: '/v2/categories?limit=100' })).json.length, lookAlikes.length + 2, 'one category per name, nothing of what was refused')
}

t.test('SQLite: look-alikes are one name, whichever comes first; joiners only where a script needs them; a name shows something', async (t) => {
  await lookAlikesOn(t, 'sqlite::memory:', false)
  await lookAlikesOn(t, 'sqlite::memory:', true)
})
t.test(
  'PostgreSQL: look-alikes are one name, whichever comes first; joiners only where a script needs them; a name shows something',
  { skip: postgresMissing },
  async (t) => {
    await lookAlikesOn(t, await freshPostgres(t), false)
    await lookAlikesOn(t, await freshPostgres(t), true)
  },
)

/** The app's v1 createPet of a pet naming `categoryId`, and the id of the pet. */
async function petNaming(t: Test, app: FastifyInstance, categoryId: number): Promise<number> {
  const made = await call(t, app, { method: 'POST', url: '/v1/pets', payload: { name: `Of ${categoryId}`, categoryId } })
  t.equal(made.status, 201, `version 1 takes category id ${categoryId}`)
  return made.json.id
}

/** The category the newest version shows a pet in. */
const categoryOfPet = async (t: Test, app: FastifyInstance, id: number) => (await call(t, app, { url: `/v2/pets?id=${id}` })).json[0].category

async function keptIdsOn(t: Test, DATABASE_URL: string) {
  const app = await build(t, { DATABASE_URL, API_KEYS: [testKey, `${curator}:pets:read+categories:write`] })
  const add = async (name: string) => (await call(t, app, { method: 'POST', url: '/v2/categories', payload: { name }, key: curator })).json

  // version 1 names categories 1, 2, 3, 5 and 19 before any exists
  const pets = new Map<number, number>()
  for (const categoryId of [1, 2, 3, 5, 19]) pets.set(categoryId, await petNaming(t, app, categoryId))
  t.strictSame(await add('Bird'), { id: 4, name: 'Bird' }, 'the first id that no pet names')
  t.strictSame(await add('Rodent'), { id: 6, name: 'Rodent' }, 'and the next one after it')
  t.strictSame(
    (await call(t, app, { url: '/v2/categories' })).json,
    [
      { id: 4, name: 'Bird' },
      { id: 6, name: 'Rodent' },
    ],
    'the ids pets name are not categories',
  )
  t.equal((await call(t, app, { url: '/v2/categories/5' })).status, 404)
  t.strictSame(await categoryOfPet(t, app, pets.get(5)!), { id: 5 }, "a pet of version 1 keeps its category's id, without a name")
  t.match((await call(t, app, { method: 'POST', url: '/v2/pets', payload: { name: 'Rex', categoryId: 5 } })).json, { status: 422, code: 'category_not_found' })

  // the report: categories up to 18, a pet naming 19, then a new category
  for (let i = 7; i <= 18; i++) await aCategory(app, `Kind ${i}`)
  t.strictSame(await add('Fish'), { id: 20, name: 'Fish' }, 'category 19 is not given to a new category')
  t.strictSame(await categoryOfPet(t, app, pets.get(19)!), { id: 19 }, 'and the pet of version 1 is not adopted')

  // a pet that names a category which exists is that category's, whichever version adds it
  t.strictSame(await categoryOfPet(t, app, await petNaming(t, app, 20)), { id: 20, name: 'Fish' })
  t.strictSame(await add('Reptile'), { id: 21, name: 'Reptile' }, 'an id a category has is not kept again')
}

t.test('SQLite: a category id that a pet names is never given to a new category', (t) => keptIdsOn(t, 'sqlite::memory:'))
t.test('PostgreSQL: a category id that a pet names is never given to a new category', { skip: postgresMissing }, async (t) =>
  keptIdsOn(t, await freshPostgres(t)),
)

/** A connection of the test's own to the database at `url`, closed when the test ends. */
async function connection(t: Test, url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.teardown(() => client.end())
  return client
}

/** Resolves once a statement of another connection waits for a lock (the one `holder` holds):
 * within 30 s, which leaves room for a busy machine. */
async function someoneWaits(holder: pg.Client) {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    const { rows } = await holder.query("select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'")
    if (rows[0].n > 0) return
    await sleep(10)
  }
  throw new Error('no statement waits for the lock')
}

/** A new PostgreSQL database served by the app, a curator's add, and a connection of the
 * test's own beside the app's (another writer). */
async function besideAnotherWriter(t: Test) {
  const url = await freshPostgres(t)
  const app = await build(t, { DATABASE_URL: url, API_KEYS: [testKey, `${curator}:pets:read+categories:write`] })
  const add = (name: string) => call(t, app, { method: 'POST', url: '/v2/categories', payload: { name }, key: curator })
  return { app, add, other: await connection(t, url) }
}

t.test('PostgreSQL: a pet and a category racing for one id, each way round', { skip: postgresMissing }, async (t) => {
  const { app, add, other } = await besideAnotherWriter(t)

  // a pet's transaction holds id 1 (what createPet writes, not yet committed) while a category
  // is added: the category waits, then takes 2
  await other.query('begin')
  await other.query('insert into categories (id, created_at) values (1, 0)')
  await other.query("insert into pets (name, category_id, status) values ('Early', 1, 'available')")
  const adding = add('Bird')
  await someoneWaits(other)
  await other.query('commit')
  t.strictSame((await adding).json, { id: 2, name: 'Bird' }, 'the category chose again')

  // a category's transaction holds id 3 while version 1 adds a pet naming it: the pet waits, and
  // is that category's, which existed before it
  await other.query('begin')
  await other.query("insert into categories (id, name, name_fold, created_at) values (3, 'Fish', 'fish', 0)")
  const naming = petNaming(t, app, 3)
  await someoneWaits(other)
  await other.query('commit')
  t.strictSame(await categoryOfPet(t, app, await naming), { id: 3, name: 'Fish' })

  // the same, rolled back: the pet keeps id 4 for itself
  await other.query('begin')
  await other.query("insert into categories (id, name, name_fold, created_at) values (4, 'Gone', 'gone', 0)")
  const keeping = petNaming(t, app, 4)
  await someoneWaits(other)
  await other.query('rollback')
  t.strictSame(await categoryOfPet(t, app, await keeping), { id: 4 })
  t.strictSame((await add('Rodent')).json, { id: 5, name: 'Rodent' })
})

t.test('PostgreSQL: two instances adding categories while version 1 names ids ahead of them', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  const options = { DATABASE_URL: url, DATABASE_POOL_SIZE: 4, API_KEYS: [testKey, `${curator}:pets:read+categories:write`] }
  const apps = [await build(t, options), await build(t, options)]
  const add = (i: number, name: string) => call(t, apps[i % 2]!, { method: 'POST', url: '/v2/categories', payload: { name }, key: curator })

  // ids named before: never a category's
  const namedBefore = [2, 4, 6, 9, 10, 11]
  for (const id of namedBefore) await petNaming(t, apps[id % 2]!, id)
  // at once, on both instances: 12 categories (two of each name, spelt differently), and pets of
  // version 1 naming each id the categories may reach
  const names = ['Bird', 'Fish', 'Rodent', 'Reptile', 'Insect', 'Amphibian']
  const spelt = (name: string, i: number) => (i < names.length ? name : name.toUpperCase())
  const [added] = await Promise.all([
    atMost(12, 12, (i) => add(i, spelt(names[i % names.length]!, i))),
    atMost(12, 24, async (i) => petNaming(t, apps[i % 2]!, 12 + i)),
  ])
  t.strictSame(added.map(({ status }) => status).filter((status) => status === 201).length, names.length, 'each name added once')
  t.ok(
    added.every(({ status }) => status === 201 || status === 409),
    'the rest told 409, no failure',
  )
  const categories = (await call(t, apps[0]!, { url: '/v2/categories' })).json as { id: number; name: string }[]
  const lower = (name: string) => name.toLowerCase()
  t.strictSame(categories.map(({ name }) => lower(name)).sort(), names.map(lower).sort(), 'whichever spelling came first')
  t.strictSame(
    categories.filter(({ id }) => namedBefore.includes(id)),
    [],
    'no category has an id a pet named before it',
  )
  t.equal(new Set(categories.map(({ id }) => id)).size, names.length, 'each its own id')
})

t.test('PostgreSQL: a create that loses its id to other writers again and again is told to retry, not held', { skip: postgresMissing }, async (t) => {
  const { add, other } = await besideAnotherWriter(t)
  // every insert of this name finds its row gone, as when another writer took the id first
  // (the name is then still free); the inserts are counted
  await other.query('create table lost (at bigint)')
  await other.query(`create function lose_id() returns trigger language plpgsql as $$
    begin if new.name = 'Storm' then insert into lost values (0); return null; end if; return new; end $$`)
  await other.query('create trigger lose_id before insert on categories for each row execute function lose_id()')

  const refused = await add('Storm')
  t.equal(refused.status, 503)
  t.equal(refused.json.code, 'unavailable')
  t.ok(Number(refused.headers['retry-after']) > 0, 'with Retry-After')
  t.equal((await other.query('select count(*)::int as n from lost')).rows[0].n, 8, 'after 8 ids chosen, each lost')
  t.strictSame((await add('Calm')).json, { id: 1, name: 'Calm' }, 'other names are added as before')
})
