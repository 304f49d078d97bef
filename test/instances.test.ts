/**
 * Several instances, one catalogue: server processes on one PostgreSQL database see each
 * other's pets, hand out unique ids when they create at the same time, and each keeps to its
 * DATABASE_POOL_SIZE (and DATABASE_READ_CONNECTIONS).
 */
import pg from 'pg'
import t, { type Test } from 'tap'
import type { Pet } from '../src/pets/repository.js'
import { api, curatingTestKey, testKey } from './helpers/app.js'
import { contractViolations } from './helpers/contract.js'
import { atMost } from './helpers/concurrency.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { type ServerProcess, startServer } from './helpers/processes.js'

/** A request over HTTP to a server process; the response is checked against its version's document. */
async function request(t: Test, server: ServerProcess, method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${testKey}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  })
  const text = await response.text()
  const headers = Object.fromEntries(response.headers)
  const violations = contractViolations({ method, url: path, status: response.status, headers, body: text })
  if (violations.length > 0) t.strictSame(violations, [], `${method} ${path} keeps the contract`)
  return { status: response.status, headers, json: JSON.parse(text) }
}

/** Every pet, page by page through listPets. */
async function listAll(t: Test, server: ServerProcess, maxPages: number): Promise<Pet[]> {
  const pets: Pet[] = []
  let path: string | undefined = `${api}/pets?limit=100`
  for (let page = 0; path !== undefined && page < maxPages; page++) {
    const response = await request(t, server, 'GET', path)
    pets.push(...response.json)
    path = /^<([^>]+)>; rel="next"$/.exec(response.headers.link ?? '')?.[1]
  }
  return pets
}

/** The most pool connections each instance (by application_name) held to the database at any
 * of the moments sampled while `load` ran; the connection that listens for key revocations is
 * not the pool's. */
async function peakConnections(url: string, load: Promise<unknown>): Promise<Map<string, number>> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const peak = new Map<string, number>()
  let loading = true
  const done = load.finally(() => (loading = false))
  try {
    for (let samples = 0; loading && samples < 5_000; samples++) {
      const { rows } = await client.query<{ name: string; n: number }>(
        `select application_name as name, count(*)::int as n from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid() and query not ilike 'listen %'
         group by application_name`,
      )
      for (const { name, n } of rows) peak.set(name, Math.max(peak.get(name) ?? 0, n))
    }
    await done
  } finally {
    await client.end()
  }
  return peak
}

t.test('two instances on one PostgreSQL database share one catalogue', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  // application_name (a libpq parameter pg reads from the URL) tells their connections apart.
  const named = (name: string) => `${url}?application_name=${name}`
  // Started together: both apply the migrations at startup, under the migration lock.
  const [a, b] = await Promise.all([
    startServer(t, { DATABASE_URL: named('petstore-a'), DATABASE_POOL_SIZE: '2', DATABASE_READ_CONNECTIONS: '1', API_KEYS: curatingTestKey }),
    startServer(t, { DATABASE_URL: named('petstore-b'), API_KEYS: curatingTestKey }),
  ])
  // the categories of the pets below, each added through one instance
  for (const [i, name] of ['Bird', 'Rodent', 'Fish', 'Cat'].entries())
    t.equal((await request(t, i % 2 ? b : a, 'POST', `${api}/categories`, { name })).json.id, i + 1)
  const one = async (server: ServerProcess, id: number) => (await request(t, server, 'GET', `${api}/pets?id=${id}`)).json[0]

  t.test('a pet created through one is read through the other', async (t) => {
    const created = await request(t, a, 'POST', `${api}/pets`, { name: 'Rex', categoryId: 3, status: 'pending' })
    t.equal(created.status, 201)
    t.strictSame(await one(b, created.json.id), created.json)
    const listed = await request(t, b, 'GET', `${api}/pets?status=pending`)
    t.strictSame(listed.json, [created.json])

    const back = await request(t, b, 'POST', `${api}/pets`, { name: 'Mia', categoryId: 4 })
    t.ok(back.json.id > created.json.id, 'the other instance continues the same sequence of ids')
    t.strictSame(await one(a, back.json.id), back.json, 'and the first one reads it')
  })

  t.test('200 creates split across both at once: unique ids, every pet listed by either; each pool within its size', async (t) => {
    const before = await listAll(t, a, 10)
    const count = 200
    // 32 at a time, half to each: far more than a pool of 2 could serve at once
    const load = atMost(32, count, (i) =>
      request(t, i % 2 === 0 ? a : b, 'POST', `${api}/pets`, { name: `Pet ${i}`, categoryId: 1 + (i % 4), status: 'available' }),
    )
    const peak = await peakConnections(url, load)
    const responses = await load

    t.strictSame(
      responses.filter((response) => response.status !== 201),
      [],
      'every create is a 201',
    )
    const created: Pet[] = responses.map((response) => response.json)
    t.equal(new Set(created.map((pet) => pet.id)).size, count, 'no id is given twice')
    const expected = [...before, ...created].sort((x, y) => x.id - y.id)
    t.strictSame(await listAll(t, a, 10), expected, 'instance A lists every pet, in id order, as created')
    t.strictSame(await listAll(t, b, 10), expected, 'instance B lists the same')

    t.comment(`peak connections: ${JSON.stringify(Object.fromEntries(peak))}`)
    t.equal(peak.get('petstore-a'), 3, 'A, with DATABASE_POOL_SIZE=2 and DATABASE_READ_CONNECTIONS=1, used 2 + 1 connections and never more')
    t.ok((peak.get('petstore-b') ?? 0) > 3, 'B, with the defaults (10 and 2), used more under the same load')
  })
})
