/**
 * The answers of reads made of the store alone (the pet catalogue, the categories), kept for the
 * revision of their part of the store (the catalogue): on each store, through each version, a
 * read asked again while nothing changed is answered without its rows read again, and a change
 * by anyone (the API, another connection, a write between the revision's read and the rows') is
 * seen by the next read. Every answer is checked against the contract by call().
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import t, { type Test } from 'tap'
import { entityTag } from '../src/http/conditional.js'
import { keptAnswers } from '../src/http/kept-answers.js'
import { connect } from '../src/storage/index.js'
import { aCategory, build, call, curatingTestKey, servedContracts, testKey } from './helpers/app.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { writeAfterNextRevision } from './helpers/revision.js'

const [v1, v2] = servedContracts
const otherKey = 'other-key-8d21e7'

/** A new store of the kind `name`, as a URL another connection can open too. */
async function storeUrl(t: Test, name: string): Promise<string> {
  if (name === 'PostgreSQL') return freshPostgres(t)
  const dir = mkdtempSync(join(tmpdir(), 'petstore-kept-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return `sqlite:${join(dir, 'pets.db')}`
}

/** The app on a store at `url`, and how many times its pet and category rows were read. */
async function counted(t: Test, url: string) {
  const app = await build(t, { DATABASE_URL: url, API_KEYS: [curatingTestKey, otherKey] })
  const reads = { pets: 0, categories: 0 }
  const { pets, categories } = app.storage
  const [list, listCategories, find] = [pets.list.bind(pets), categories.list.bind(categories), categories.find.bind(categories)]
  // (the real reads, counted: the repository is the one the handlers were given)
  pets.list = (query) => (reads.pets++, list(query))
  categories.list = (query) => (reads.categories++, listCategories(query))
  categories.find = (id) => (reads.categories++, find(id))
  t.teardown(() => {
    Object.assign(pets, { list })
    Object.assign(categories, { list: listCategories, find })
  })
  return { app, reads }
}

const read = (t: Test, app: FastifyInstance, url: string, key = testKey) => call(t, app, { url, key })

function keptOn(name: string) {
  t.test(
    `${name}: one object read again while the store is as it was is answered as before, its row not read again; another key's is its own; a page and a refusal are read anew`,
    async (t) => {
      const { app, reads } = await counted(t, await storeUrl(t, name))
      const categoryId = await aCategory(app)
      const petId = (await call(t, app, { method: 'POST', url: v2!.urlOf('createPet'), payload: { name: 'Rex', categoryId } })).json.id
      const rowsRead = () => reads.pets + reads.categories
      for (const [major, url] of [
        [1, v1!.urlOf('getPet', { petId })],
        [2, v2!.urlOf('getCategory', { categoryId })],
      ] as const) {
        const before = rowsRead()
        const first = await read(t, app, url)
        t.equal(first.status, 200, url)
        t.equal(first.headers.etag, entityTag(major, first.body), `${url}: tagged by its bytes as that version sends them`)
        const again = await read(t, app, url)
        t.equal(again.body, first.body, `${url}: the same answer`)
        t.equal(again.headers['content-type'], first.headers['content-type'], `${url}: of the same type`)
        t.equal(again.headers.etag, first.headers.etag, `${url}: with the same tag`)
        t.equal(again.headers.link, first.headers.link, `${url}: and the same links`)
        t.equal(rowsRead(), before + 1, `${url}: its row read once`)
        const other = await read(t, app, url, otherKey)
        t.equal(other.body, first.body, `${url}: another key is shown the same`)
        t.equal(rowsRead(), before + 2, `${url}: from a read of its own (its view is not the first key's)`)
      }
      for (const url of [
        v1!.urlOf('listPets'),
        `${v2!.urlOf('listPets')}?id=${petId}`,
        v2!.urlOf('listCategories'),
        v2!.urlOf('getCategory', { categoryId: 999 }),
      ]) {
        const before = rowsRead()
        const first = await read(t, app, url)
        t.equal((await read(t, app, url)).body, first.body, `${url}: the same answer`)
        t.equal(rowsRead(), before + 2, `${url}: read anew (a page is revalidated by its tag; a refusal is not kept)`)
      }
    },
  )

  t.test(`${name}: a change by anyone is seen by the next read: through the API, and by another connection`, async (t) => {
    const url = await storeUrl(t, name)
    const { app } = await counted(t, url)
    const categoryId = await aCategory(app)
    const petId = (await call(t, app, { method: 'POST', url: v2!.urlOf('createPet'), payload: { name: 'Rex', categoryId } })).json.id
    const getPet = v1!.urlOf('getPet', { petId })
    const getCategory = v2!.urlOf('getCategory', { categoryId })
    t.equal((await read(t, app, getPet)).json.status, 'available')
    await call(t, app, { method: 'POST', url: v2!.urlOf('placeOrder'), payload: { petId } })
    t.equal((await read(t, app, getPet)).json.status, 'pending', 'a pet ordered through the API: the next read shows it')
    const { sql } = await connect(url, { poolSize: 1 }).then((database) => (t.teardown(() => database.close()), database))
    await sql.run("update pets set name = 'Renamed' where id = $1", [petId])
    t.equal((await read(t, app, getPet)).json.name, 'Renamed', 'a pet renamed by another connection: the next read shows it')
    t.equal((await read(t, app, getCategory)).json.name, 'Bird')
    await sql.run("update categories set name = 'Parrot', name_fold = 'parrot' where id = $1", [categoryId])
    t.equal((await read(t, app, getCategory)).json.name, 'Parrot', 'a category renamed by another connection: the next read shows it')
  })

  t.test(
    `${name}: a change committed between the revision's read and the row's makes the answer newer than its revision: the next read, at the next revision, reads the row again`,
    async (t) => {
      const url = await storeUrl(t, name)
      const { app, reads } = await counted(t, url)
      const categoryId = await aCategory(app)
      const petId = (await call(t, app, { method: 'POST', url: v2!.urlOf('createPet'), payload: { name: 'Rex', categoryId } })).json.id
      const { sql } = await connect(url, { poolSize: 1 }).then((database) => (t.teardown(() => database.close()), database))
      writeAfterNextRevision(t, app.storage, () => sql.run("update pets set name = 'Between' where id = $1", [petId]))
      const getPet = v1!.urlOf('getPet', { petId })
      t.equal((await read(t, app, getPet)).json.name, 'Between', 'the answer shows the change made between the reads')
      const before = reads.pets
      t.equal((await read(t, app, getPet)).json.name, 'Between', 'as does the next')
      t.equal(reads.pets, before + 1, 'which read the row again: the revision had moved')
    },
  )
}

for (const name of ['SQLite', 'PostgreSQL']) {
  if (name === 'PostgreSQL' && postgresMissing) t.test(name, { skip: postgresMissing }, async () => {})
  else keptOn(name)
}

t.test(
  'what is kept: each answer for the revision of its part, within its size; a request without a revision read is neither looked up nor kept',
  async (t) => {
    const kept = keptAnswers<string>(8)
    const roles = new Set(['pets:read'])
    const request = (url: string, storeRevision: string, principal = 'key:1') => ({ url, storeRevision, principal, roles }) as unknown as FastifyRequest
    kept.keep(request('/v1/pets/1', '7'), 'one')
    kept.keep(request('/v1/pets/2', '7'), 'two')
    kept.keep(request('/v1/pets/1', '7', 'key:2'), 'one, for another key')
    t.equal(kept.find(request('/v1/pets/1', '7')), 'one')
    t.equal(kept.find(request('/v1/pets/2', '7')), 'two')
    t.equal(kept.find(request('/v1/pets/1', '7', 'key:2')), 'one, for another key', 'each key its own')
    t.equal(kept.find(request('/v1/pets/3', '7')), undefined, 'nothing for a URL not kept')
    t.equal(kept.find(request('/v1/pets/1', '8')), undefined, 'nor at another revision')
    kept.keep(request('/v1/pets/3', '8'), 'three')
    t.equal(kept.find(request('/v1/pets/2', '7')), 'two', "one answer kept at another revision (of another part, another key's orders) forgets no other")
    t.equal(kept.find(request('/v1/pets/2', '8')), undefined, 'each is given at its own revision alone')
    kept.keep(request('/v1/pets/2', '8'), 'two, changed')
    t.equal(kept.find(request('/v1/pets/2', '8')), 'two, changed', 'and replaced by the answer of the next')
    t.equal(kept.find(request('/v1/pets/2', '7')), undefined)
    kept.keep(request(`/v1/pets/4?${'x'.repeat(600)}`, '8'), 'long')
    t.equal(kept.find(request(`/v1/pets/4?${'x'.repeat(600)}`, '8')), 'long', 'a long URL counts its length: within the size')
    kept.keep(request('/v1/pets/5', '8'), 'five')
    t.equal(kept.find(request('/v1/pets/3', '8')), undefined, 'past the size, what was kept is forgotten')
    t.equal(kept.find(request('/v1/pets/5', '8')), 'five', 'and the new one kept')
    kept.keep(request(`/v1/pets/6?${'x'.repeat(2048)}`, '8'), 'too long')
    t.equal(kept.find(request(`/v1/pets/6?${'x'.repeat(2048)}`, '8')), undefined, 'an answer larger than the whole size is not kept')
    t.equal(kept.find(request('/v1/pets/5', '8')), 'five', 'nor does it make the others forgotten')
    kept.keep(request('/v1/pets/7', ''), 'unread')
    t.equal(kept.find(request('/v1/pets/7', '')), undefined, 'without a revision, nothing')
  },
)
