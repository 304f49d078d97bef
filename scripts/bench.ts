/**
 * npm run bench [-- --duration 8 --connections 16]
 *
 * Throughput and latency of the service, each as a ratio to a baseline measured in the same run
 * by the same client: a bare Fastify server that answers the same bytes from memory, without
 * validation, authentication or database (the floor of HTTP + JSON on this machine). Both run
 * as child processes; autocannon drives them from this one. Also: the cold start of `npm start`
 * to its first answered request. PostgreSQL is measured when it answers at BENCH_POSTGRES_URL
 * (default postgres://postgres@127.0.0.1:5432/postgres; a database petstore_bench is made anew).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, openSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import { projectRoot } from '../src/paths.js'
import { openStorage } from '../src/storage/index.js'

const key = 'bench-key-0123456789'
const workDir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
const seeded = 10_000

/**
 * The baseline, as plain JavaScript (no TypeScript loader in the way): Fastify answering every
 * GET with LIST_BODY or PET_BODY and every POST with PET_BODY, from memory.
 */
const baselineSource = `
import Fastify from 'fastify'
const app = Fastify({ logger: false })
const json = 'application/json; charset=utf-8'
app.get('/v1/pets', (_request, reply) => reply.type(json).send(process.env.LIST_BODY))
app.get('/v1/pets/:petId', (_request, reply) => reply.type(json).send(process.env.PET_BODY))
app.post('/v1/pets', (_request, reply) => reply.code(201).type(json).send(process.env.PET_BODY))
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
`

/** A port nobody listens on now. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  return port
}

/** Resolves once `url` answers at all, within 60 s. */
async function answering(url: string, child?: ChildProcess) {
  const deadline = Date.now() + 60_000
  while (!(await fetch(url).then(() => true, () => false))) {
    if (child?.exitCode != null || Date.now() > deadline) throw new Error(`${url} does not answer`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Starts `node ...args` on a free port; resolves with its URL once it answers. */
async function start(name: string, args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort()
  const child = spawn(process.execPath, args, {
    cwd: projectRoot,
    env: { ...process.env, PORT: String(port), ...env },
    // the logs go to a file, as a log collector would take them
    stdio: ['ignore', openSync(join(workDir, `${name}.${port}.log`), 'w'), 'inherit'],
  })
  const url = `http://127.0.0.1:${port}`
  await answering(url, child)
  return { child, url }
}

async function stop(child: ChildProcess) {
  if (child.exitCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

interface Scenario {
  name: string
  method: 'GET' | 'POST'
  path: string
  body?: string
}

const scenarios: Scenario[] = [
  { name: 'listPets limit=20', method: 'GET', path: '/v1/pets?limit=20' },
  { name: 'listPets status=sold limit=20', method: 'GET', path: '/v1/pets?status=sold&limit=20&after=5000' },
  { name: 'getPet', method: 'GET', path: '/v1/pets/4242' },
  { name: 'createPet', method: 'POST', path: '/v1/pets', body: JSON.stringify({ name: 'Bench', categoryId: 7, status: 'pending' }) },
]

interface Measurement {
  rps: number
  p50: number
  p99: number
  errors: number
}

async function measure(url: string, scenario: Scenario, options: { duration: number; connections: number }): Promise<Measurement> {
  const result = await autocannon({
    url: url + scenario.path,
    method: scenario.method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(scenario.body && { body: scenario.body }),
    connections: options.connections,
    duration: options.duration,
  })
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
  }
}

/** Fills a new store with `seeded` pets, a third of each status, in bulk. */
async function seed(databaseUrl: string) {
  const storage = await openStorage(databaseUrl, { poolSize: 1 }) // creates the schema
  await storage.close()
  const statuses = ['available', 'pending', 'sold']
  const rows = Array.from({ length: seeded }, (_, i) => [`Pet ${i}`, 1 + (i % 50), statuses[i % 3]] as const)
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new SQLite(databaseUrl.slice('sqlite:'.length))
    const insert = db.prepare('insert into pets (name, category_id, status) values (?, ?, ?)')
    db.transaction(() => rows.forEach((row) => insert.run(...row)))()
    db.close()
  } else {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    await client.query(
      `insert into pets (name, category_id, status)
       select 'Pet ' || i, 1 + (i % 50), (array['available','pending','sold'])[1 + i % 3] from generate_series(0, $1 - 1) i`,
      [seeded],
    )
    await client.query('analyze pets')
    await client.end()
  }
}

async function freshPostgresDatabase(): Promise<string | undefined> {
  const admin = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
  const client = new pg.Client({ connectionString: admin, connectionTimeoutMillis: 3_000 })
  try {
    await client.connect()
    await client.query('drop database if exists petstore_bench with (force)')
    await client.query('create database petstore_bench')
  } catch (error) {
    console.log(`PostgreSQL not measured: ${(error as Error).message}`)
    return undefined
  } finally {
    await client.end().catch(() => {})
  }
  const url = new URL(admin)
  url.pathname = '/petstore_bench'
  return url.toString()
}

/** Milliseconds from spawning `npm start` to its first answered request, best of `runs`. */
async function coldStart(runs: number): Promise<{ npmStart: number[]; node: number[] }> {
  const timeOne = async (command: string, args: string[], port: number) => {
    const began = performance.now()
    const child = spawn(command, args, {
      cwd: projectRoot,
      env: { ...process.env, PORT: String(port), API_KEYS: key, LOG_LEVEL: 'warn', DATABASE_URL: 'sqlite::memory:' },
      stdio: 'ignore',
      detached: true, // npm start runs node in a child of its own: stop the whole group
    })
    for (;;) {
      const answered = await fetch(`http://127.0.0.1:${port}/v1/openapi.json`).then(
        (response) => response.ok,
        () => false,
      )
      if (answered) break
      if (performance.now() - began > 60_000) throw new Error(`${command} did not answer in 60 s`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    const elapsed = performance.now() - began
    process.kill(-child.pid!, 'SIGTERM')
    await once(child, 'exit')
    return Math.round(elapsed)
  }
  const npmStart: number[] = []
  const node: number[] = []
  for (let run = 0; run < runs; run++) {
    npmStart.push(await timeOne('npm', ['start', '--silent'], 3917))
    node.push(await timeOne(process.execPath, ['dist/src/server.js'], 3918))
  }
  return { npmStart, node }
}

async function main() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '8' },
      connections: { type: 'string', default: '16' },
      'skip-postgres': { type: 'boolean', default: false },
      'skip-cold-start': { type: 'boolean', default: false },
    },
  })
  // the service as `npm start` runs it: compiled
  execFileSync('npm', ['run', '-s', 'build'], { cwd: projectRoot, stdio: 'inherit' })
  const options = { duration: Number(values.duration), connections: Number(values.connections) }

  const stores: [string, string | undefined][] = [
    ['SQLite', `sqlite:${join(workDir, 'bench.db')}`],
    ['PostgreSQL', values['skip-postgres'] ? undefined : await freshPostgresDatabase()],
  ]
  const rows: string[] = []
  for (const [store, databaseUrl] of stores) {
    if (databaseUrl === undefined) continue
    await seed(databaseUrl)
    // the service as deployed by default: access log included
    const ours = await start('service', ['dist/src/server.js'], { API_KEYS: key, DATABASE_URL: databaseUrl })
    // the baseline answers with the very bytes the service sends
    const headers = { authorization: `Bearer ${key}` }
    const LIST_BODY = await (await fetch(`${ours.url}/v1/pets?limit=20`, { headers })).text()
    const PET_BODY = await (await fetch(`${ours.url}/v1/pets/4242`, { headers })).text()
    const baseline = await start('baseline', ['--input-type=module', '-e', baselineSource], { LIST_BODY, PET_BODY })
    for (const scenario of scenarios) {
      await measure(baseline.url, scenario, { ...options, duration: 1 }) // warm up both
      await measure(ours.url, scenario, { ...options, duration: 1 })
      const floor = await measure(baseline.url, scenario, options)
      const service = await measure(ours.url, scenario, options)
      rows.push(
        `| ${store} | ${scenario.name} | ${Math.round(service.rps)} | ${Math.round(floor.rps)} | ${(service.rps / floor.rps).toFixed(2)} | ${service.p50} / ${service.p99} | ${floor.p50} / ${floor.p99} | ${service.errors} |`,
      )
      console.log(rows.at(-1))
    }
    await stop(ours.child)
    await stop(baseline.child)
  }

  console.log(`\n${options.connections} connections, ${options.duration} s per measurement, ${seeded} pets in the store\n`)
  console.log('| store | scenario | service req/s | baseline req/s | ratio | service p50/p99 ms | baseline p50/p99 ms | errors |')
  console.log('|---|---|---|---|---|---|---|---|')
  for (const row of rows) console.log(row)

  if (!values['skip-cold-start']) {
    const { npmStart, node } = await coldStart(3)
    console.log(`\ncold start to first answered request (ms, 3 runs): npm start ${npmStart.join(', ')}; node dist/src/server.js ${node.join(', ')}`)
  }
}

await main()
