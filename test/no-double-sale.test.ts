/**
 * No double sale: many clients order one pet at the same moment, over real HTTP, against real
 * server processes: on SQLite one server, on PostgreSQL two servers on one database. Exactly one
 * is answered 201; every other one 409 pet_unavailable; the pet is pending with one placed order.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { api, curatingTestKey, testKey } from './helpers/app.js'
import { contractViolations } from './helpers/contract.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { type ServerProcess, startServer } from './helpers/processes.js'

/** Clients per pet, and pets (rounds) per store. */
const clients = 50
const rounds = 3

interface Answer {
  status: number
  json: { id?: number; code?: string; message?: string }
  /** ms from the moment all requests were sent off to this answer */
  ms: number
}

async function request(t: Test, server: ServerProcess, method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${testKey}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  })
  const text = await response.text()
  const violations = contractViolations({ method, url: path, status: response.status, headers: Object.fromEntries(response.headers), body: text })
  if (violations.length > 0) t.strictSame(violations, [], `${method} ${path} keeps the contract`)
  return { status: response.status, json: JSON.parse(text) }
}

const percentile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

/** `rounds` pets, each ordered by `clients` clients at once, spread over `servers` in turn. */
async function oneSalePerPet(t: Test, servers: ServerProcess[]) {
  const category = await request(t, servers[0]!, 'POST', `${api}/categories`, { name: 'Contested' })
  for (let round = 1; round <= rounds; round++) {
    const pet = await request(t, servers[0]!, 'POST', `${api}/pets`, { name: `Contested ${round}`, categoryId: category.json.id })
    const started = performance.now()
    const answers: Answer[] = await Promise.all(
      Array.from({ length: clients }, async (_, i) => {
        const answer = await request(t, servers[i % servers.length]!, 'POST', `${api}/store/orders`, { petId: pet.json.id })
        return { ...answer, ms: performance.now() - started }
      }),
    )
    const placed = answers.filter((answer) => answer.status === 201)
    const refused = answers.filter((answer) => answer.status === 409)
    t.equal(placed.length, 1, `round ${round}: exactly one 201`)
    t.equal(refused.length, clients - 1, `round ${round}: ${clients - 1} 409`)
    t.ok(
      refused.every((answer) => answer.json.code === 'pet_unavailable' && answer.json.message === `Pet ${pet.json.id} is pending, not available`),
      'each 409 is pet_unavailable, naming the status',
    )
    const times = answers.map((answer) => answer.ms).sort((a, b) => a - b)
    t.comment(
      `round ${round}, ${servers.length} server(s): ${placed.length} × 201, ${refused.length} × 409, other ${clients - placed.length - refused.length}; ` +
        `answers after ${times[0]!.toFixed(0)}–${times.at(-1)!.toFixed(0)} ms (median ${percentile(times, 0.5).toFixed(0)} ms, ` +
        `the 201 after ${placed[0]?.ms.toFixed(0)} ms)`,
    )
    // what each server now says
    for (const server of servers) {
      t.equal((await request(t, server, 'GET', `${api}/pets?id=${pet.json.id}`)).json[0].status, 'pending', 'the pet is pending')
    }
    const orders = (await request(t, servers.at(-1)!, 'GET', `${api}/store/orders?status=placed&limit=100`)).json as unknown as { id: number; petId: number }[]
    t.strictSame(
      orders.filter((order) => order.petId === pet.json.id).map((order) => order.id),
      [placed[0]!.json.id],
      'with one placed order: the one answered 201',
    )
  }
}

t.test('SQLite, one server: 50 clients order one pet at once; one 201, 49 409', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-sale-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'pets.db')}`, API_KEYS: curatingTestKey })
  await oneSalePerPet(t, [server])
})

t.test('PostgreSQL, two servers on one database: 50 clients order one pet at once; one 201, 49 409', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  const env = { DATABASE_URL: url, API_KEYS: curatingTestKey }
  const servers = await Promise.all([startServer(t, env), startServer(t, env)])
  await oneSalePerPet(t, servers)
})
