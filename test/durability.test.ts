/**
 * A 201 is a promise: the pet is stored. Killed without warning (SIGKILL, no shutdown code runs)
 * while creates stream in, the server loses none of the pets it acknowledged, on either store.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t, { type Test } from 'tap'
import type { Pet } from '../src/pets/repository.js'
import { api, curatingTestKey, testKey } from './helpers/app.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { type ServerProcess, startServer } from './helpers/processes.js'

t.jobs = 2

const clients = 8
/** The server is killed once it has acknowledged this many creates, or after killAfterMs: a
 * bound only a hung server reaches (on two cores shared with other test files, 50 creates took
 * more than 3 s). */
const killAfterCreates = 300
const killAfterMs = 60_000
/** Bounds of the stream, should the kill not end it. */
const maxRequests = 5_000
const maxStreamMs = 90_000
const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' }

interface Stream {
  acknowledged: Pet[]
  /** requests that got no answer: in flight when the server died, or sent after */
  unanswered: number
}

/**
 * `clients` clients create pets, one request at a time each, and the server is killed while
 * they do. A client stops at its first request without an answer.
 */
async function createWhileKilling(server: ServerProcess): Promise<Stream> {
  const category = await fetch(`${server.url}${api}/categories`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'Streamed' }),
    signal: AbortSignal.timeout(10_000),
  })
  const { id: categoryId } = (await category.json()) as { id: number }
  const acknowledged: Pet[] = []
  let unanswered = 0
  let sent = 0
  const start = Date.now()
  const deadline = start + maxStreamMs
  const stream = Array.from({ length: clients }, async (_, client) => {
    while (sent < maxRequests && Date.now() < deadline) {
      const n = sent++
      const pet = { name: `Pet ${client}-${n} ✓`, categoryId, status: n % 2 ? 'sold' : 'pending' }
      try {
        const response = await fetch(`${server.url}${api}/pets`, {
          method: 'POST',
          headers,
          body: JSON.stringify(pet),
          signal: AbortSignal.timeout(10_000),
        })
        if (response.status !== 201) throw new Error(`status ${response.status}: ${await response.text()}`)
        acknowledged.push((await response.json()) as Pet)
      } catch {
        unanswered++
        return
      }
    }
  })
  while (acknowledged.length < killAfterCreates && Date.now() - start < killAfterMs) {
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  server.child.kill('SIGKILL')
  await Promise.all([...stream, server.exited])
  return { acknowledged, unanswered }
}

/** Every pet the server holds, page by page. */
async function listAll(server: ServerProcess, maxPages: number): Promise<Pet[]> {
  const pets: Pet[] = []
  let path: string | undefined = `${api}/pets?limit=100`
  for (let page = 0; path !== undefined && page < maxPages; page++) {
    const response = await fetch(`${server.url}${path}`, { headers, signal: AbortSignal.timeout(10_000) })
    pets.push(...((await response.json()) as Pet[]))
    path = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1]
  }
  return pets
}

async function noAcknowledgedPetLost(t: Test, store: string, env: Record<string, string>, afterKill: () => void = () => {}) {
  const first = await startServer(t, { ...env, API_KEYS: curatingTestKey })
  const { acknowledged, unanswered } = await createWhileKilling(first)
  t.equal(first.child.signalCode, 'SIGKILL', 'the server was killed, not shut down')
  t.ok(acknowledged.length >= 50, `the server acknowledged creates before it died (${acknowledged.length})`)
  t.ok(unanswered >= 1 && unanswered <= clients, 'it died with requests in flight')
  afterKill()

  const second = await startServer(t, { ...env, API_KEYS: testKey })
  const stored = await listAll(second, Math.ceil((acknowledged.length + clients) / 100) + 1)
  const byId = new Map(stored.map((pet) => [pet.id, pet]))
  const lost = acknowledged.filter((pet) => byId.get(pet.id) === undefined)
  const changed = acknowledged.filter((pet) => byId.has(pet.id) && JSON.stringify(byId.get(pet.id)) !== JSON.stringify(pet))
  t.comment(
    `${store}: ${acknowledged.length} acknowledged creates checked after SIGKILL: ${lost.length} lost, ${changed.length} changed; ` +
      `${unanswered} unanswered, of which ${stored.length - acknowledged.length + lost.length} were stored`,
  )
  t.strictSame(lost, [], 'every acknowledged pet is there')
  t.strictSame(changed, [], 'with the fields it was acknowledged with')
  // A request the server died on may have committed or not; nothing else can appear.
  t.ok(stored.length <= acknowledged.length + unanswered, 'no pet appears that no one asked for')
}

t.test('SIGKILL mid-stream loses no acknowledged pet on a SQLite file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-durability-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'pets.db')
  await noAcknowledgedPetLost(t, 'SQLite', { DATABASE_URL: `sqlite:${file}` }, () => {
    // Nothing closed the database: the last commits may be in the write-ahead log alone, which
    // the next opening reads.
    t.ok(existsSync(`${file}-wal`), 'the write-ahead log is there, as the killed process left it')
    const sqlite = new SQLite(file, { readonly: true })
    t.equal(sqlite.pragma('journal_mode', { simple: true }), 'wal', 'the file is in WAL mode')
    sqlite.close()
  })
})

t.test('SIGKILL mid-stream loses no acknowledged pet on PostgreSQL', { skip: postgresMissing }, async (t) => {
  await noAcknowledgedPetLost(t, 'PostgreSQL', { DATABASE_URL: await freshPostgres(t) })
})
