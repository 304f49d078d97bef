/**
 * npm run bench [-- options]
 *
 * The service (`node dist/src/server.js`, built first) against hand-written peers (bench/peer-*.mjs:
 * plain Fastify with JSON schemas, a one-key auth hook and prepared statements on the same
 * schema and durability), side by side in one run, on SQLite and on PostgreSQL: getPet,
 * listPets (limit=20, with status), createPet, and the store orders (getOrder, listOrders
 * limit=20 with status, placeOrder with an Idempotency-Key, updateOrder, on pools of pets and
 * orders seeded for them), 50 connections, 10,000 pets, the service once
 * with a key of API_KEYS and once with a stored key (made by its key store). Each figure is the
 * median of N interleaved rounds. Then the cold start of the service on a fresh SQLite file
 * (spawn to first answered request) and its RSS after a sustained load at 200 connections.
 * Optionally (--scale) listPets and getPet at 1,000,000 pets against 10,000, and (--profile) a
 * CPU profile of getPet on SQLite, service and peer, summarised by self time.
 *
 * Options:
 *   --duration S        seconds per measurement (5; --smoke: 1)
 *   --rounds N          interleaved rounds, each figure their median (3; --smoke: 1)
 *   --connections N     concurrent connections (50)
 *   --pets N            pets seeded (10000)
 *   --only STORE        sqlite or postgres (default both)
 *   --scenarios LIST    main scenarios to run, comma-separated (default all): getPet, listPets,
 *                       createPet, getOrder, listOrders, placeOrder, updateOrder
 *   --log-level LEVEL   LOG_LEVEL of service and peers (default: unset, the service's default, info)
 *   --cold-starts N     cold starts measured, median shown (5; --smoke: 1)
 *   --rss-duration S    seconds of load at --rss-connections before RSS is read (60; --smoke: 2)
 *   --rss-connections N (200)
 *   --scale             also the scale rows (seeds --scale-pets, default 1000000, per store)
 *   --profile           also CPU profiles of getPet on SQLite (service with a stored key, peer)
 *   --skip LIST         phases not to run, comma-separated: main, start, rss (e.g. with --scale)
 *   --smoke             a short run for CI: 1 s per scenario, 1 round, no warm-up
 *   --keep              keep the work directory (databases, logs, profiles)
 *
 * PostgreSQL is measured when it answers at BENCH_POSTGRES_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres); databases petstore_bench* are made anew there and
 * dropped at the end. The exit status is 0 whenever the run completed, whatever the figures.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { type EventEmitter, once } from 'node:events'
import { existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { type AddressInfo, createServer } from 'node:net'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import { projectRoot } from '../src/paths.js'
import { openStorage } from '../src/storage/index.js'

// ---------------------------------------------------------------------------------------------
// options

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string' },
    rounds: { type: 'string' },
    connections: { type: 'string', default: '50' },
    pets: { type: 'string', default: '10000' },
    only: { type: 'string' },
    scenarios: { type: 'string' },
    'log-level': { type: 'string' },
    'cold-starts': { type: 'string' },
    'rss-duration': { type: 'string' },
    'rss-connections': { type: 'string', default: '200' },
    scale: { type: 'boolean', default: false },
    'scale-pets': { type: 'string', default: '1000000' },
    profile: { type: 'boolean', default: false },
    skip: { type: 'string', default: '' },
    smoke: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
  },
})

function count(name: string, text: string | undefined, fallback: number): number {
  const value = Number(text ?? fallback)
  if (!(value > 0) || !Number.isFinite(value)) usage(`--${name} must be a positive number, not ${JSON.stringify(text)}`)
  return value
}

function usage(message: string): never {
  console.error(`bench: ${message} (see the head of scripts/bench.ts)`)
  process.exit(2)
}

const smoke = flags.smoke
const options = {
  duration: count('duration', flags.duration, smoke ? 1 : 5),
  rounds: Math.round(count('rounds', flags.rounds, smoke ? 1 : 3)),
  connections: Math.round(count('connections', flags.connections, 50)),
  pets: Math.round(count('pets', flags.pets, 10_000)),
  warmUp: smoke ? 0 : 1,
  coldStarts: Math.round(count('cold-starts', flags['cold-starts'], smoke ? 1 : 5)),
  rssDuration: count('rss-duration', flags['rss-duration'], smoke ? 2 : 60),
  rssConnections: Math.round(count('rss-connections', flags['rss-connections'], 200)),
  scalePets: Math.round(count('scale-pets', flags['scale-pets'], 1_000_000)),
}
if (flags.only !== undefined && !['sqlite', 'postgres'].includes(flags.only)) usage('--only takes sqlite or postgres')
const logLevel = flags['log-level']
/** The main scenarios, in the order of the table; --scenarios names them by their first word. */
const petScenarioNames = ['getPet', 'listPets limit=20, status', 'createPet']
const orderScenarioNames = ['getOrder', 'listOrders limit=20, status', 'placeOrder, Idempotency-Key', 'updateOrder']
const scenarioNames = [...petScenarioNames, ...orderScenarioNames]
const shortName = (name: string) => name.split(/[ ,]/)[0]!
const chosen = flags.scenarios?.split(',').filter((name) => name !== '') ?? scenarioNames.map(shortName)
for (const name of chosen) if (!scenarioNames.some((full) => shortName(full) === name)) usage(`--scenarios takes ${scenarioNames.map(shortName).join(', ')}, not ${name}`)
const wantedScenario = (name: string) => chosen.includes(shortName(name))
/** Whether the stores need orders, and pools of pets and orders for the writes. */
const ordersWanted = orderScenarioNames.some(wantedScenario)
const skipped = new Set(flags.skip.split(',').filter((phase) => phase !== ''))
for (const phase of skipped) if (!['main', 'start', 'rss'].includes(phase)) usage(`--skip takes main, start or rss, not ${phase}`)

const workDir = mkdtempSync(join(os.tmpdir(), 'petstore-bench-'))
/** The key of API_KEYS for the service, and the one key of the peers. */
const envKey = `bench-env-${randomBytes(12).toString('hex')}`

/** Progress goes to stderr; the report to stdout. */
const progress = (line: string) => process.stderr.write(`${line}\n`)

// ---------------------------------------------------------------------------------------------
// processes

/** Every child still running: killed if the bench ends early. */
const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL')
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`bench: ${signal}, stopping`)
    process.exit(130)
  })
}

/** A port nobody listens on now. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  return port
}

/** One HTTP request with node:http (no connection reuse); resolves with status, headers, body. */
function get(url: string, init: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {}) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const req = httpRequest(url, { method: init.method ?? 'GET', headers: init.headers, agent: false, timeout: init.timeoutMs ?? 5_000 }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }))
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(init.body)
  })
}

const authorization = (key: string) => ({ authorization: `Bearer ${key}` })

/** Resolves once `url` answers at all (any status), within `limitMs`. */
async function answering(url: string, key: string, child: ChildProcess, limitMs = 30_000, pollMs = 10) {
  const deadline = performance.now() + limitMs
  for (;;) {
    const answered = await get(url, { headers: authorization(key), timeoutMs: 1_000 }).then(
      () => true,
      () => false,
    )
    if (answered) return
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited (${child.exitCode ?? child.signalCode}) before answering`)
    if (performance.now() > deadline) throw new Error(`did not answer within ${limitMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, pollMs))
  }
}

interface Target {
  name: string
  kind: 'project' | 'peer'
  /** the key its requests carry */
  key: string
  url: string
  child: ChildProcess
  log: string
}

/** Starts `node ...args` on a free port with `env`; resolves once it answers. Its stdout (the
 * access log) and stderr go to a file, as a log collector would take them. */
async function start(name: string, kind: Target['kind'], args: string[], env: Record<string, string>, key: string): Promise<Target> {
  const port = await freePort()
  const log = join(workDir, `${name.replace(/[^\w.-]+/g, '_')}.${port}.log`)
  const fd = openSync(log, 'w')
  const childEnv: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST: '127.0.0.1', ...env }
  if (logLevel === undefined) delete childEnv.LOG_LEVEL
  else childEnv.LOG_LEVEL = logLevel
  const child = spawn(process.execPath, args, { cwd: projectRoot, env: childEnv, stdio: ['ignore', fd, fd] })
  children.add(child)
  child.on('exit', () => children.delete(child))
  const url = `http://127.0.0.1:${port}`
  try {
    await answering(`${url}/v1/pets?limit=1`, key, child)
  } catch (error) {
    await stop({ child })
    throw new Error(`${name} did not start: ${(error as Error).message}\n${readFileSync(log, 'utf8').slice(-2_000)}`)
  }
  return { name, kind, key, url, child, log }
}

/** SIGTERM, then SIGKILL if it has not exited within 15 s. */
async function stop({ child }: { child: ChildProcess }) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(timer)
}

const project = (name: string, databaseUrl: string, key: 'env' | 'stored', storedKey: string, nodeArgs: string[] = []) =>
  start(
    name,
    'project',
    [...nodeArgs, 'dist/src/server.js'],
    // a stored key is the production mode: no API_KEYS at all. The rate limit is set out of
    // reach: the bench measures serving, not refusing (counting is still done on every request).
    { DATABASE_URL: databaseUrl, API_KEYS: key === 'env' ? envKey : '', RATE_LIMIT_PER_KEY: '1000000000' },
    key === 'env' ? envKey : storedKey,
  )

const peer = (name: string, databaseUrl: string, nodeArgs: string[] = []) =>
  start(
    name,
    'peer',
    [...nodeArgs, databaseUrl.startsWith('sqlite:') ? 'bench/peer-sqlite.mjs' : 'bench/peer-postgres.mjs'],
    { DATABASE_URL: databaseUrl, API_KEYS: envKey },
    envKey,
  )

// ---------------------------------------------------------------------------------------------
// load

interface Scenario {
  name: string
  method: 'GET' | 'POST' | 'PATCH'
  path: string
  body?: string
  /** getPet: a random id from 1 to this, per request */
  randomIdUpTo?: number
  /** otherwise, how each request is made from the one above (autocannon's setupRequest) */
  setupRequest?: autocannon.Request['setupRequest']
}

interface Measurement {
  /** 2xx answers per second */
  rps: number
  /** milliseconds, of 2xx answers */
  p50: number
  p99: number
  /** connection errors, timeouts and non-2xx answers */
  errors: number
  /** 2xx answers in all */
  answered: number
}

const newPetBody = JSON.stringify({ name: 'Bench', categoryId: 7, status: 'pending' })

function requestOf(scenario: Scenario): autocannon.Request {
  const request: autocannon.Request = { method: scenario.method, path: scenario.path }
  if (scenario.body !== undefined) request.body = scenario.body
  if (scenario.setupRequest !== undefined) request.setupRequest = scenario.setupRequest
  const upTo = scenario.randomIdUpTo
  if (upTo !== undefined) {
    request.setupRequest = (req) => ({ ...req, path: `/v1/pets/${1 + Math.floor(Math.random() * upTo)}` })
  }
  return request
}

/** Drives `scenarios` (in turn, per connection) against `target` for `duration` seconds. */
function load(target: Target, scenarios: Scenario[], duration: number, connections: number): Promise<Measurement> {
  return new Promise((resolve, reject) => {
    const latencies: number[] = []
    const instance = autocannon(
      {
        url: target.url,
        connections,
        duration,
        headers: { ...authorization(target.key), 'content-type': 'application/json' },
        requests: scenarios.map(requestOf),
      },
      (error, result) => {
        if (error) return reject(error)
        latencies.sort((a, b) => a - b)
        const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN
        resolve({
          rps: result['2xx'] / result.duration,
          p50: at(0.5),
          p99: at(0.99),
          errors: result.errors + result.non2xx,
          answered: result['2xx'],
        })
      },
    )
    // autocannon's own histogram has whole milliseconds: the latencies are kept here exactly
    ;(instance as unknown as EventEmitter).on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status < 300) latencies.push(ms)
    })
  })
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/**
 * Each scenario against each target, `rounds` times, interleaved (round by round, scenario by
 * scenario, the targets in an order that turns each round); every target has a warm-up first.
 * Returns the medians, by scenario name and target name.
 */
async function compare(label: string, targets: Target[], scenarios: Scenario[]): Promise<Map<string, Map<string, Measurement>>> {
  const runs = new Map<string, Map<string, Measurement[]>>(scenarios.map((s) => [s.name, new Map(targets.map((t) => [t.name, []]))]))
  if (options.warmUp > 0) {
    for (const scenario of scenarios) for (const target of targets) await load(target, [scenario], options.warmUp, options.connections)
  }
  for (let round = 0; round < options.rounds; round++) {
    for (const scenario of scenarios) {
      const order = targets.map((_, i) => targets[(i + round) % targets.length]!)
      for (const target of order) {
        const measured = await load(target, [scenario], options.duration, options.connections)
        runs.get(scenario.name)!.get(target.name)!.push(measured)
        progress(
          `  ${label} round ${round + 1}/${options.rounds} ${scenario.name} ${target.name}: ${Math.round(measured.rps)} req/s, p99 ${measured.p99.toFixed(2)} ms${measured.errors ? `, ${measured.errors} errors` : ''}`,
        )
      }
    }
  }
  const medians = new Map<string, Map<string, Measurement>>()
  for (const [scenario, byTarget] of runs) {
    const row = new Map<string, Measurement>()
    for (const [target, list] of byTarget) {
      row.set(target, {
        rps: median(list.map((m) => m.rps)),
        p50: median(list.map((m) => m.p50)),
        p99: median(list.map((m) => m.p99)),
        errors: list.reduce((sum, m) => sum + m.errors, 0),
        answered: list.reduce((sum, m) => sum + m.answered, 0),
      })
    }
    medians.set(scenario, row)
  }
  return medians
}

// ---------------------------------------------------------------------------------------------
// stores

interface Store {
  name: 'SQLite' | 'PostgreSQL'
  url: string
  /** a key issued by the service's key store, for the stored-key runs */
  storedKey: string
  /** the orders seeded, when the order scenarios run */
  orders?: OrderPools
}

/** Ids handed out one per request, each once, whichever target asks (they share the store). */
interface Pool {
  ids: number[]
  next: number
}

interface OrderPools {
  /** orders of the seeded pets (placed for the pending ones, delivered for the sold ones): ids 1 to this */
  readOrders: number
  /** available pets, for placeOrder */
  place: Pool
  /** placed orders (of pending pets), for updateOrder */
  update: Pool
}

/** The next id of a pool; past its end, its last one again (then the answers are 409s, counted as errors). */
const take = (pool: Pool) => pool.ids[Math.min(pool.next++, pool.ids.length - 1)]!

/** Ids a pool must hold: the most that one measurement can use at an optimistic rate of writes,
 * for every measurement and warm-up of the three targets, and each connection's first request
 * (which autocannon builds ahead). */
const poolSize = () => Math.ceil(6_000 * options.duration + options.connections) * 3 * (options.rounds + options.warmUp)

/** A new SQLite file, or a new PostgreSQL database, with the service's schema (its migrations,
 * run by opening its storage), a stored key issued by its key store, and `pets` pets. */
async function prepareStore(name: Store['name'], database: string, pets: number, withOrders: boolean): Promise<Store> {
  let url: string
  if (name === 'SQLite') {
    url = `sqlite:${join(workDir, `${database}.db`)}`
  } else {
    const admin = await postgresAdmin()
    await admin.query(`drop database if exists ${database} with (force)`)
    await admin.query(`create database ${database}`)
    await admin.end()
    const at = new URL(postgresUrl)
    at.pathname = `/${database}`
    url = at.toString()
  }
  const storage = await openStorage(url, { poolSize: 1 })
  const { key: storedKey } = await storage.keys.issue('bench')
  await storage.close()
  await seed(url, pets)
  return { name, url, storedKey, ...(withOrders && { orders: await seedOrders(url, poolSize()) }) }
}

/**
 * Orders for the seeded pets (placed for each pending one, delivered for each sold one), then
 * `size` pending pets with a placed order each (updateOrder's pool) and `size` available pets
 * (placeOrder's pool), straight into the service's tables.
 */
async function seedOrders(url: string, size: number): Promise<OrderPools> {
  const began = performance.now()
  const now = Date.now()
  const readOrders = `insert into orders (pet_id, status, placed_at)
    select id, case status when 'pending' then 'placed' else 'delivered' end, ${now} from pets where status <> 'available' order by id`
  const poolOrders = (from: number) => `insert into orders (pet_id, status, placed_at) select id, 'placed', ${now} from pets where id >= ${from} order by id`
  let pools: { readOrders: number; update: number[]; place: number[] }
  if (url.startsWith('sqlite:')) {
    const db = new SQLite(url.slice('sqlite:'.length))
    const pets = (count: number, status: string) =>
      db
        .prepare(
          `with recursive n(i) as (select 0 union all select i + 1 from n where i + 1 < ?)
           insert into pets (name, category_id, status) select 'Pool ' || i, 1, '${status}' from n`,
        )
        .run(count)
    const ids = (sql: string, ...params: number[]) => db.prepare(sql).pluck().all(...params) as number[]
    pools = db.transaction(() => {
      const read = db.prepare(readOrders).run().changes
      const from = (db.prepare('select max(id) from pets').pluck().get() as number) + 1
      pets(size, 'pending')
      db.prepare(poolOrders(from)).run()
      pets(size, 'available')
      return {
        readOrders: read,
        update: ids('select id from orders where pet_id >= ? order by id', from),
        place: ids("select id from pets where id >= ? and status = 'available' order by id", from),
      }
    })()
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.close()
  } else {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    const pets = (count: number, status: string) =>
      client.query(`insert into pets (name, category_id, status) select 'Pool ' || i, 1, $2 from generate_series(0, $1::int - 1) i`, [count, status])
    const ids = async (sql: string, from: number) => (await client.query<{ id: number }>(sql, [from])).rows.map((row) => Number(row.id))
    await client.query('begin')
    const read = (await client.query(readOrders)).rowCount ?? 0
    const from = Number((await client.query<{ max: string }>('select max(id) from pets')).rows[0]!.max) + 1
    await pets(size, 'pending')
    await client.query(poolOrders(from))
    await pets(size, 'available')
    pools = {
      readOrders: read,
      update: await ids('select id from orders where pet_id >= $1 order by id', from),
      place: await ids("select id from pets where id >= $1 and status = 'available' order by id", from),
    }
    await client.query('commit')
    await client.query('vacuum analyze pets')
    await client.query('vacuum analyze orders')
    await client.end()
  }
  progress(`  seeded ${pools.readOrders} orders, and pools of ${size} for placeOrder and updateOrder, in ${Math.round(performance.now() - began)} ms`)
  return { readOrders: pools.readOrders, update: { ids: pools.update, next: 0 }, place: { ids: pools.place, next: 0 } }
}

/** `pets` pets in bulk, straight into the service's table, a third of each status. */
async function seed(url: string, pets: number) {
  const began = performance.now()
  if (url.startsWith('sqlite:')) {
    const db = new SQLite(url.slice('sqlite:'.length))
    db.pragma('journal_mode = WAL')
    db.transaction(() => {
      db.prepare(
        `with recursive n(i) as (select 0 union all select i + 1 from n where i + 1 < ?)
         insert into pets (name, category_id, status)
         select 'Pet ' || i, 1 + i % 50, case i % 3 when 0 then 'available' when 1 then 'pending' else 'sold' end from n`,
      ).run(pets)
    })()
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.close()
  } else {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(
      `insert into pets (name, category_id, status)
       select 'Pet ' || i, 1 + i % 50, (array['available','pending','sold'])[1 + i % 3] from generate_series(0, $1::int - 1) i`,
      [pets],
    )
    await client.query('vacuum analyze pets')
    await client.end()
  }
  progress(`  seeded ${pets} pets in ${Math.round(performance.now() - began)} ms`)
}

const postgresUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const postgresDatabases = new Set<string>()

async function postgresAdmin(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 3_000 })
  await client.connect()
  return client
}

/** Whether PostgreSQL answers, and its version; or why not. */
async function postgresVersion(): Promise<{ version?: string; problem?: string }> {
  try {
    const client = await postgresAdmin()
    const { rows } = await client.query<{ server_version: string }>('show server_version')
    await client.end()
    return { version: rows[0]?.server_version }
  } catch (error) {
    return { problem: (error as Error).message }
  }
}

async function makeStore(name: Store['name'], database: string, pets: number, withOrders = false): Promise<Store> {
  if (name === 'PostgreSQL') postgresDatabases.add(database)
  return prepareStore(name, database, pets, withOrders)
}

async function dropPostgresDatabases() {
  if (postgresDatabases.size === 0) return
  const admin = await postgresAdmin()
  for (const database of postgresDatabases) await admin.query(`drop database if exists ${database} with (force)`)
  await admin.end()
}

// ---------------------------------------------------------------------------------------------
// phases

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a')
const ratio = (a: number, b: number) => (b > 0 && Number.isFinite(a) ? `${(a / b).toFixed(2)}x` : 'n/a')

/** Responses of the service and the peer, side by side: the same bodies and headers (but the id
 * and Location of a new pet). Returns the differences, in words. */
async function sameAnswers(project: Target, peerTarget: Target, store: Store): Promise<string[]> {
  const differences: string[] = []
  const headerNames = ['content-type', 'cache-control', 'x-content-type-options', 'deprecation', 'sunset', 'link', 'api-stability']
  interface Probe {
    method?: string
    body?: string
    path: string
    headers?: Record<string, string>
  }
  // each target is asked its own probe: a write takes a pet or an order of its own
  const probes: [string, () => Probe][] = [
    ['getPet', () => ({ path: '/v1/pets/42' })],
    ['listPets', () => ({ path: '/v1/pets?limit=20&status=sold' })],
    ['createPet', () => ({ method: 'POST', path: '/v1/pets', body: newPetBody })],
  ]
  const orders = store.orders
  if (orders !== undefined) {
    probes.push(
      ['getOrder', () => ({ path: '/v1/store/orders/2' })],
      ['getOrder, none', () => ({ path: '/v1/store/orders/999999999' })],
      ['listOrders', () => ({ path: '/v1/store/orders?limit=20&status=delivered' })],
      ['placeOrder', () => ({ method: 'POST', path: '/v1/store/orders', body: JSON.stringify({ petId: take(orders.place) }), headers: { 'idempotency-key': `probe-${orders.place.next}` } })],
      ['placeOrder, pending pet', () => ({ method: 'POST', path: '/v1/store/orders', body: JSON.stringify({ petId: 2 }) })],
      ['updateOrder', () => ({ method: 'PATCH', path: `/v1/store/orders/${take(orders.update)}`, body: JSON.stringify({ status: 'delivered' }) })],
    )
  }
  for (const [name, next] of probes) {
    const ask = (target: Target) => {
      const probe = next()
      return get(target.url + probe.path, {
        ...(probe.method && { method: probe.method }),
        ...(probe.body && { body: probe.body }),
        headers: { ...authorization(target.key), 'content-type': 'application/json', ...probe.headers },
      })
    }
    const [ours, theirs] = [await ask(project), await ask(peerTarget)]
    // (what differs by nature between two new pets or orders: ids, and the time of placing)
    const normal = (body: string) => body.replace(/"(id|petId)":\d+/g, '"$1":0').replace(/"placedAt":"[^"]+"/, '"placedAt":""')
    if (ours.status !== theirs.status) differences.push(`${name}: status ${ours.status} vs ${theirs.status}`)
    if (normal(ours.body) !== normal(theirs.body)) differences.push(`${name}: body ${ours.body.slice(0, 80)} vs ${theirs.body.slice(0, 80)}`)
    for (const header of headerNames) {
      if (String(ours.headers[header]) !== String(theirs.headers[header])) {
        differences.push(`${name}: ${header} ${String(ours.headers[header])} vs ${String(theirs.headers[header])}`)
      }
    }
    const location = (headers: Record<string, unknown>) => String(headers.location).replace(/\d+$/, 'ID')
    if (location(ours.headers) !== location(theirs.headers)) differences.push(`${name}: location ${String(ours.headers.location)} vs ${String(theirs.headers.location)}`)
  }
  return differences
}

interface Row {
  scenario: string
  store: string
  key: string
  project: Measurement
  peer: Measurement
}

const petScenarios = (pets: number): Scenario[] => [
  { name: 'getPet', method: 'GET', path: '/v1/pets/1', randomIdUpTo: pets },
  { name: 'listPets limit=20, status', method: 'GET', path: '/v1/pets?limit=20&status=sold' },
  { name: 'createPet', method: 'POST', path: '/v1/pets', body: newPetBody },
]

/** The store orders: reads of the seeded orders; writes on pools, each pet and order once. */
const orderScenarios = ({ readOrders, place, update }: OrderPools): Scenario[] => [
  {
    name: 'getOrder',
    method: 'GET',
    path: '/v1/store/orders/1',
    setupRequest: (request) => ({ ...request, path: `/v1/store/orders/${1 + Math.floor(Math.random() * readOrders)}` }),
  },
  { name: 'listOrders limit=20, status', method: 'GET', path: '/v1/store/orders?limit=20&status=delivered' },
  {
    name: 'placeOrder, Idempotency-Key',
    method: 'POST',
    path: '/v1/store/orders',
    // as a careful client: a key of its own for every order
    setupRequest: (request) => {
      const petId = take(place)
      return { ...request, body: JSON.stringify({ petId }), headers: { ...request.headers, 'idempotency-key': `bench-${petId}` } }
    },
  },
  {
    name: 'updateOrder',
    method: 'PATCH',
    path: '/v1/store/orders/1',
    setupRequest: (request) => {
      const id = take(update)
      return { ...request, path: `/v1/store/orders/${id}`, body: JSON.stringify({ status: id % 2 === 0 ? 'delivered' : 'cancelled' }) }
    },
  },
]

/** The main scenarios asked for (--scenarios), on a store. */
const mainScenarios = (store: Store): Scenario[] =>
  [...petScenarios(options.pets), ...(store.orders ? orderScenarios(store.orders) : [])].filter((scenario) => wantedScenario(scenario.name))

/** The service with an env key and with a stored key, and the peer, on one store. */
async function sideBySide(store: Store): Promise<Row[]> {
  progress(`${store.name}: service (env key), service (stored key), peer`)
  const targets: Target[] = []
  try {
    targets.push(await project('project, env key', store.url, 'env', store.storedKey))
    targets.push(await project('project, stored key', store.url, 'stored', store.storedKey))
    targets.push(await peer('peer', store.url))
    const differences = await sameAnswers(targets[0]!, targets[2]!, store)
    if (differences.length > 0) progress(`  WARNING: the peer answers differently:\n    ${differences.join('\n    ')}`)
    const medians = await compare(store.name, targets, mainScenarios(store))
    for (const [name, pool] of Object.entries({ placeOrder: store.orders?.place, updateOrder: store.orders?.update })) {
      if (pool && pool.next > pool.ids.length) progress(`  WARNING: the ${name} pool ran out (${pool.next} of ${pool.ids.length}): the rest were answered 409`)
    }
    return [...medians].flatMap(([scenario, byTarget]) =>
      (['env', 'stored'] as const).map((key) => ({
        scenario,
        store: store.name,
        key: `${key} key`,
        project: byTarget.get(`project, ${key} key`)!,
        peer: byTarget.get('peer')!,
      })),
    )
  } finally {
    for (const target of targets) await stop(target)
  }
}

function printMainTable(rows: Row[]) {
  console.log(
    `\n### Service vs hand-written peer\n\n${options.connections} connections, ${options.pets.toLocaleString('en-US')} pets, ` +
      `${options.duration} s per measurement, median of ${options.rounds} interleaved round${options.rounds > 1 ? 's' : ''}; ` +
      `ratio = project / peer (req/s: higher is better; p99: lower is better)\n`,
  )
  console.log('| scenario | store | key | project req/s | peer req/s | ratio | project p99 ms | peer p99 ms | p99 ratio | errors (project/peer) |')
  console.log('|---|---|---|---:|---:|---:|---:|---:|---:|---:|')
  const order = scenarioNames
  const sorted = [...rows].sort((a, b) => order.indexOf(a.scenario) - order.indexOf(b.scenario))
  for (const { scenario, store, key, project: ours, peer: theirs } of sorted) {
    console.log(
      `| ${scenario} | ${store} | ${key} | ${fmt(ours.rps)} | ${fmt(theirs.rps)} | ${ratio(ours.rps, theirs.rps)} | ` +
        `${fmt(ours.p99, 2)} | ${fmt(theirs.p99, 2)} | ${ratio(ours.p99, theirs.p99)} | ${ours.errors}/${theirs.errors} |`,
    )
  }
}

/** Milliseconds from spawning `node <entry>` to its first answered request, on `file`. */
async function coldStartOnce(args: string[], databaseUrl: string, key: string): Promise<number> {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, API_KEYS: key }
  if (logLevel === undefined) delete env.LOG_LEVEL
  else env.LOG_LEVEL = logLevel
  const began = performance.now()
  const child = spawn(process.execPath, args, { cwd: projectRoot, env, stdio: 'ignore' })
  children.add(child)
  try {
    await answering(`http://127.0.0.1:${port}/v1/pets?limit=1`, key, child, 30_000, 2)
    return performance.now() - began
  } finally {
    await stop({ child })
    children.delete(child)
  }
}

async function coldStarts(): Promise<string[]> {
  progress(`cold start, ${options.coldStarts} runs each`)
  // the peer needs the schema made: one migrated file, which it only reads
  const migrated = join(workDir, 'cold-peer.db')
  const storage = await openStorage(`sqlite:${migrated}`, { poolSize: 1 })
  await storage.close()
  const ours: number[] = []
  const theirs: number[] = []
  for (let run = 0; run < options.coldStarts; run++) {
    // a fresh file each time: the service makes its schema at start
    ours.push(await coldStartOnce(['dist/src/server.js'], `sqlite:${join(workDir, `cold-${run}.db`)}`, envKey))
    theirs.push(await coldStartOnce(['bench/peer-sqlite.mjs'], `sqlite:${migrated}`, envKey))
  }
  const show = (list: number[]) => `median ${Math.round(median(list))} ms (${list.map(Math.round).join(', ')})`
  return [
    `- cold start, \`node dist/src/server.js\` on a fresh SQLite file, spawn to first answered request: ${show(ours)}`,
    `- for reference, the SQLite peer (schema already made): ${show(theirs)}`,
  ]
}

/** VmRSS and VmHWM of a process, in MB. */
function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 }
}

async function residentMemory(store: Store): Promise<string[]> {
  const mix = petScenarios(options.pets)
  const lines: string[] = []
  for (const which of ['project', 'peer'] as const) {
    const target = which === 'project' ? await project('rss project, stored key', store.url, 'stored', store.storedKey) : await peer('rss peer', store.url)
    try {
      const before = memory(target.child.pid!)
      progress(`RSS: ${target.name}, ${options.rssConnections} connections for ${options.rssDuration} s`)
      const measured = await load(target, mix, options.rssDuration, options.rssConnections)
      const after = memory(target.child.pid!)
      lines.push(
        `- RSS of the ${which === 'project' ? 'service (stored key)' : 'peer, for reference'} after ${options.rssDuration} s at ${options.rssConnections} connections ` +
          `(getPet, listPets, createPet in turn, ${store.name}): ${fmt(after.rss, 1)} MB (peak ${fmt(after.hwm, 1)} MB; ${fmt(before.rss, 1)} MB at rest before; ` +
          `${fmt(measured.rps)} req/s, p99 ${fmt(measured.p99, 1)} ms, ${measured.errors} errors)`,
      )
    } finally {
      await stop(target)
    }
  }
  return lines
}

async function scale(storeName: Store['name']): Promise<string[]> {
  progress(`${storeName}: scale, ${options.pets} vs ${options.scalePets} pets`)
  const prefix = storeName === 'SQLite' ? 'scale' : 'petstore_bench_scale'
  const small = await makeStore(storeName, `${prefix}_small`, options.pets)
  const big = await makeStore(storeName, `${prefix}_big`, options.scalePets)
  const scenarios = (pets: number): Scenario[] => [
    { name: 'listPets limit=20', method: 'GET', path: '/v1/pets?limit=20' },
    { name: 'listPets limit=20, status', method: 'GET', path: '/v1/pets?limit=20&status=sold' },
    { name: 'listPets limit=20, deep after', method: 'GET', path: `/v1/pets?limit=20&after=${Math.floor(pets * 0.9)}` },
    { name: 'listPets limit=20, status, deep after', method: 'GET', path: `/v1/pets?limit=20&status=sold&after=${Math.floor(pets * 0.9)}` },
    { name: 'getPet', method: 'GET', path: '/v1/pets/1', randomIdUpTo: pets },
  ]
  const targets: Target[] = []
  try {
    targets.push(await project('small', small.url, 'stored', small.storedKey))
    targets.push(await project('big', big.url, 'stored', big.storedKey))
    // each target gets the scenarios of its own size: the paths differ, the names do not
    const runs = new Map<string, Map<string, Measurement[]>>()
    const all = scenarios(0).map((s) => s.name)
    for (const name of all) runs.set(name, new Map(targets.map((t) => [t.name, []])))
    const ofTarget = (target: Target) => scenarios(target.name === 'small' ? options.pets : options.scalePets)
    if (options.warmUp > 0) {
      for (const target of targets) for (const scenario of ofTarget(target)) await load(target, [scenario], options.warmUp, options.connections)
    }
    for (let round = 0; round < options.rounds; round++) {
      for (const [s, name] of all.entries()) {
        const order = round % 2 === 0 ? targets : [...targets].reverse()
        for (const target of order) {
          const measured = await load(target, [ofTarget(target)[s]!], options.duration, options.connections)
          runs.get(name)!.get(target.name)!.push(measured)
          progress(`  scale ${storeName} round ${round + 1}/${options.rounds} ${name} ${target.name}: ${Math.round(measured.rps)} req/s, p99 ${measured.p99.toFixed(2)} ms`)
        }
      }
    }
    const lines: string[] = []
    for (const [name, byTarget] of runs) {
      const m = (t: string) => {
        const list = byTarget.get(t)!
        return { rps: median(list.map((x) => x.rps)), p99: median(list.map((x) => x.p99)), errors: list.reduce((a, x) => a + x.errors, 0) }
      }
      const [a, b] = [m('small'), m('big')]
      lines.push(
        `| ${name} | ${storeName} | ${fmt(a.rps)} | ${fmt(b.rps)} | ${ratio(b.rps, a.rps)} | ${fmt(a.p99, 2)} | ${fmt(b.p99, 2)} | ${ratio(b.p99, a.p99)} | ${a.errors}/${b.errors} |`,
      )
    }
    return lines
  } finally {
    for (const target of targets) await stop(target)
  }
}

/** CPU profiles of getPet on SQLite: service (stored key) and peer, each under load for the
 * duration of a measurement (at least 5 s), summarised by bench/profile-summary.mjs. */
async function profiles(store: Store): Promise<string> {
  const dir = join(workDir, 'profiles')
  const sections: string[] = []
  const getPet = petScenarios(options.pets)[0]!
  for (const which of ['project', 'peer'] as const) {
    const out = join(dir, which)
    mkdirSync(out, { recursive: true })
    const nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${out}`]
    const target = which === 'project' ? await project('profile project', store.url, 'stored', store.storedKey, nodeArgs) : await peer('profile peer', store.url, nodeArgs)
    progress(`profile: ${target.name}, getPet`)
    let measured: Measurement
    // the samples taken under load only, without the start-up (the profile's clock is this one)
    const micros = () => String(process.hrtime.bigint() / 1000n)
    let from: string
    let to: string
    try {
      from = micros()
      measured = await load(target, [getPet], Math.max(options.duration, 5), options.connections)
      to = micros()
    } finally {
      await stop(target)
    }
    const file = readdirSync(out).find((name) => name.endsWith('.cpuprofile'))
    if (file === undefined) {
      sections.push(`(no profile written for the ${which})`)
      continue
    }
    const summary = execFileSync(process.execPath, ['bench/profile-summary.mjs', join(out, file), '--top', '20', '--from', from, '--to', to, '--requests', String(measured.answered)], { cwd: projectRoot, encoding: 'utf8' })
    sections.push(`#### ${which === 'project' ? 'service, stored key' : 'peer'}: ${fmt(measured.rps)} req/s while profiled (${join(out, file)})\n\n${summary}`)
  }
  return sections.join('\n')
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const cpus = os.cpus()
  const sqliteVersion = (() => {
    const db = new SQLite(':memory:')
    const version = db.prepare('select sqlite_version() as v').pluck().get() as string
    db.close()
    return version
  })()
  const wanted = (store: 'sqlite' | 'postgres') => flags.only === undefined || flags.only === store
  const postgres = wanted('postgres') ? await postgresVersion() : { problem: 'not asked for (--only sqlite)' }

  console.log('## Pet store bench\n')
  console.log(`- machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${fmt(os.totalmem() / 2 ** 30, 1)} GiB RAM, ${os.type()} ${os.release()}`)
  console.log(`- Node ${process.version}; SQLite ${sqliteVersion}; PostgreSQL ${postgres.version ?? `not measured (${postgres.problem})`}`)
  console.log(
    `- LOG_LEVEL ${logLevel ?? 'unset (the service default, info: one access-log line per request)'} for service and peers; their logs go to files; ` +
      `the load generator (autocannon) runs in this process, on the same machine${smoke ? '; SMOKE RUN: figures are not meaningful' : ''}`,
  )

  progress('building (npm run -s build)')
  execFileSync('npm', ['run', '-s', 'build'], { cwd: projectRoot, stdio: ['ignore', 'inherit', 'inherit'] })

  const rows: Row[] = []
  const stores: Store[] = []
  const mainOrders = ordersWanted && !skipped.has('main')
  if (wanted('sqlite')) stores.push(await makeStore('SQLite', 'bench', options.pets, mainOrders))
  if (postgres.version !== undefined) stores.push(await makeStore('PostgreSQL', 'petstore_bench', options.pets, mainOrders))
  if (!skipped.has('main')) {
    for (const store of stores) rows.push(...(await sideBySide(store)))
    printMainTable(rows)
  }

  const notes: string[] = []
  if (!skipped.has('start')) notes.push(...(await coldStarts()))
  const sqlite = stores.find((store) => store.name === 'SQLite') ?? stores[0]
  if (sqlite !== undefined && !skipped.has('rss')) notes.push(...(await residentMemory(sqlite)))
  if (notes.length > 0) console.log(`\n### Start and memory\n\n${notes.join('\n')}`)

  if (flags.scale) {
    const lines: string[] = []
    for (const store of stores) lines.push(...(await scale(store.name)))
    console.log(
      `\n### Scale: the service (stored key) at ${options.scalePets.toLocaleString('en-US')} pets vs ${options.pets.toLocaleString('en-US')}\n\n` +
        `deep after = after at 90% of the ids; ratio = big / small\n`,
    )
    console.log('| scenario | store | small req/s | big req/s | ratio | small p99 ms | big p99 ms | p99 ratio | errors (small/big) |')
    console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|')
    for (const line of lines) console.log(line)
  }

  if (flags.profile) {
    const store = stores.find((s) => s.name === 'SQLite')
    if (store === undefined) console.log('\n(profiles are taken on SQLite: not with --only postgres)')
    else console.log(`\n### CPU profile, getPet on SQLite (self time)\n\n${await profiles(store)}`)
  }

  const args = process.argv.slice(2)
  console.log(`\nRun: npm run bench${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`)
}

try {
  await main()
} finally {
  await dropPostgresDatabases().catch((error: Error) => progress(`bench: could not drop the PostgreSQL databases: ${error.message}`))
  if (flags.keep || flags.profile) progress(`work directory kept: ${workDir}`)
  else if (existsSync(workDir)) rmSync(workDir, { recursive: true, force: true })
}
