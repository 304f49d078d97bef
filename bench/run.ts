/**
 * npm run bench [-- options]
 *
 * The service (`node dist/src/server.js`, built first) against hand-written peers (bench/peer-*.mjs:
 * plain Fastify with JSON schemas, a one-key auth hook and prepared statements on the same
 * schema and durability), side by side in one run, on SQLite and on PostgreSQL: getPet,
 * listPets (limit=20, with status), createPet, and the store orders (getOrder, listOrders
 * limit=20 with status, placeOrder with an Idempotency-Key, updateOrder, on pools of pets and
 * orders seeded for them), 50 connections, 10,000 pets, the service once with a key of
 * API_KEYS and once with a stored key (made by its key store). Every scenario is measured with
 * the access log on both sides (the default level, or --log-level) and with no log on either
 * side (LOG_LEVEL=silent), and the table shows both ratios. Each figure is the median of N
 * interleaved rounds, each round on new server processes (warmed up first). The reads are sent
 * by wrk (bench/wrk.ts; Debian's package wrk), which spends less than half autocannon's CPU per
 * request and so keeps requests waiting for the server: their pace is the server's (without wrk,
 * autocannon sends them, and the report says so); the writes by autocannon. Where listPets'
 * page revalidated (304) is measured, the same requests answered by plain Fastify with one route
 * that checks and reads nothing (bench/plain-304.mjs) too. Then the checks of
 * roles and of order ownership, each timed alone in this process (the same read or call without
 * the check and with it), as a share of a request's CPU. Then (bench/tracing.ts) what tracing costs:
 * the service (stored key, logs off) with tracing off (no OTEL_* variable), at
 * parentbased_traceidratio 0.1 and at always_on (and, on Node 22, at 0.1 with
 * --experimental-async-context-frame), each exporting over OTLP/HTTP to a sink in this process
 * (bench/otlp-sink.ts): getPet, listPets and createPet, req/s, p99 and CPU per request against
 * tracing off, and the spans received per request. Then createPet on the service without a subscription and with one (its
 * receiver in this process), on each store, with SQLite's creates per commit. Then the cold start
 * of the service on a fresh SQLite file (spawn to first
 * answered request) and its RSS after a sustained load at 200 connections. Optionally (--scale)
 * listPets and getPet at 1,000,000 pets against 10,000, and (--profile) a CPU profile of getPet
 * on each store, service and peer, summarised by self time.
 *
 * Options:
 *   --duration S        seconds per measurement (3; --smoke: 0.5)
 *   --warm-up S         the slice of warm-up, in seconds, of each scenario of each new server
 *                       process before its measurements (1; --smoke: 0, none): a read is loaded
 *                       slice after slice until its CPU per request stops falling (a slice
 *                       within 5% of the one before; 2 to 8 slices), a write for one slice. A
 *                       process's first seconds are V8 compiling its hot code, on the server's
 *                       core, and cost several times a request's CPU (docs/benchmarks.md, "Warm-up")
 *   --rounds N          interleaved rounds, each figure their median (5; --smoke: 1)
 *   --connections N     concurrent connections (50)
 *   --pets N            pets seeded (10000)
 *   --only STORE        sqlite or postgres (default both)
 *   --scenarios LIST    main scenarios to run, comma-separated (default all): getPet, listPets,
 *                       createPet, getOrder, listOrders, placeOrder, updateOrder
 *   --log-level LEVEL   LOG_LEVEL of service and peers when logs are on (default: unset, the
 *                       service's default, info); logs off is always LOG_LEVEL=silent
 *   --log-to WHERE      pipe (default): each server's stdout, its access log, is a pipe that
 *                       a cat of its own drains into a file, as a deployment's log collector reads
 *                       it, on another core; file: the server writes the file itself, its writes
 *                       on its own core (docs/benchmarks.md, "The tail as a deployment sees it")
 *   --cold-starts N     cold starts measured, median shown (5; --smoke: 1)
 *   --rss-duration S    seconds of load at --rss-connections before RSS is read (60; --smoke: 1)
 *   --rss-connections N (200)
 *   --scale             also the scale rows (seeds --scale-pets, default 1000000, per store)
 *   --profile           also CPU profiles of getPet on each store (service with each key, peer; logs off)
 *   --profile-scenario NAME  the scenario profiled instead: listPets, listPets@v2, listPets-304
 *                       (the page revalidated, 304) or createPet
 *   --profile-logs on   profile with the access log written (off by default)
 *   --skip LIST         phases not to run, comma-separated: main, tracing, checks, webhooks, start, rss (e.g. with --scale)
 *   --smoke             a short run for CI: half a second per measurement, 1 round, no warm-up (unless --warm-up)
 *   --keep              keep the work directory (databases, logs, profiles)
 *   --shared-cores      do not pin the load generator to core 0, PostgreSQL (when on this
 *                       machine) beside it on 2 cores or to core 1 on more, and the servers to
 *                       the rest (Linux, taskset: on by default, so that they do not take turns)
 *   --help              this text
 *
 * PostgreSQL is measured when it answers at BENCH_POSTGRES_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres); databases petstore_bench* are made anew there and
 * dropped at the end. The exit status is 0 whenever the run completed, whatever the figures.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { projectRoot } from '../src/core/paths.js'
import { compare, compareRounds, type Driver, medianOf, progress } from './load.js'
import { type BenchOptions, readOptions } from './options.js'
import { type CheckRow, checksTable, ownershipCosts, roleCheckCost } from './checks.js'
import { pinCores, pinDatabase } from './cores.js'
import { profiles } from './profile.js'
import { fmt, mainTable, readsBelowPeer, revalidationsAboveHalf, revalidationTable, type Row, type ScaleRow, scaleTable } from './report.js'
import { scale } from './scale.js'
import { tracingCosts, type TracingRow, tracingTable } from './tracing.js'
import { orderScenarios, petScenarios, sameAnswers } from './scenarios.js'
import { keyKinds, type Logs, logSettings, type Servers, servers, stop, type Target } from './servers.js'
import { coldStarts, residentMemory } from './start-memory.js'
import { postgresVersion, type Store, sqliteVersion, stores } from './stores.js'
import { type WebhookRow, webhooks, webhookTable } from './webhooks.js'
import { wrkVersion } from './wrk.js'

/** Ids a pool must hold: the most that one measurement can use at an optimistic rate of writes,
 * for every measurement and warm-up of every target, and each connection's first request
 * (which autocannon builds ahead). */
const poolSize = (options: BenchOptions, targets: number) =>
  Math.ceil(15_000 * (options.duration + options.warmUp) + options.connections) * targets * options.rounds

/** The main scenarios asked for (--scenarios), on a store. */
const mainScenarios = (options: BenchOptions, store: Store) =>
  [...petScenarios(options.pets), ...(store.orders ? orderScenarios(store.orders) : [])].filter((scenario) => options.wantedScenario(scenario.name))

const targetName = (kind: 'project' | 'peer', logs: Logs, key?: (typeof keyKinds)[number]) => `${kind}${key ? `, ${key} key` : ''}, logs ${logs}`

/** The service with an env key and with a stored key, and the peer, each with logs and
 * without, on one store. */
async function sideBySide(options: BenchOptions, driver: Driver, running: Servers, store: Store): Promise<Row[]> {
  progress(`${store.name}: service (env key, stored key) and peer, each with logs and without`)
  const targets: Target[] = []
  try {
    for (const logs of logSettings) {
      for (const key of keyKinds) targets.push(await running.project(targetName('project', logs, key), store.url, key, store.storedKey, logs))
      targets.push(await running.peer(targetName('peer', logs), store.url, logs))
    }
    const differences = await sameAnswers(targets[0]!, targets[2]!, store)
    if (differences.length > 0) progress(`  WARNING: the peer answers differently:\n    ${differences.join('\n    ')}`)
    const rounds = await compareRounds(store.name, targets, () => mainScenarios(options, store), { ...options, driver }, { freshEachRound: true })
    for (const [name, pool] of Object.entries({ placeOrder: store.orders?.place, updateOrder: store.orders?.update })) {
      if (pool && pool.next > pool.ids.length) progress(`  WARNING: the ${name} pool ran out (${pool.next} of ${pool.ids.length}): the rest were answered 409`)
    }
    return [...rounds].flatMap(([scenario, byTarget]) =>
      keyKinds.map((key) => {
        const project = (logs: Logs) => byTarget.get(targetName('project', logs, key))!
        const pair = (logs: Logs) => ({ project: medianOf(project(logs)), peer: medianOf(byTarget.get(targetName('peer', logs))!) })
        return {
          scenario,
          store: store.name,
          key: `${key} key`,
          measured: { on: pair('on'), off: pair('off') },
          projectRounds: { on: project('on'), off: project('off') },
        }
      }),
    )
  } finally {
    for (const target of targets) await stop(target)
  }
}

/** The revalidation answered by plain Fastify (bench/plain-304.mjs), logs on and off, measured
 * as the service is (rounds on new processes, warmed up): where the 304 scenario ran. */
async function plainRevalidation(options: BenchOptions, driver: Driver, running: Servers, rows: Row[]) {
  const revalidation = petScenarios(options.pets).find((scenario) => scenario.revalidate === true)!
  if (!rows.some((row) => row.scenario === revalidation.name)) return undefined
  progress('the revalidation answered by plain Fastify')
  const targets: Target[] = []
  try {
    for (const logs of logSettings) targets.push(await running.plain304(`plain Fastify, logs ${logs}`, logs))
    const medians = (await compare('plain Fastify', targets, () => [revalidation], { ...options, driver }, { freshEachRound: true })).get(revalidation.name)!
    return { on: medians.get('plain Fastify, logs on')!, off: medians.get('plain Fastify, logs off')! }
  } finally {
    for (const target of targets) await stop(target)
  }
}

async function main(options: BenchOptions, workDir: string, made: ReturnType<typeof stores>) {
  const envKey = `bench-env-${randomBytes(12).toString('hex')}`
  const running = servers({ workDir, envKey, logLevel: options.logLevel, logTo: options.logTo })
  const cpus = os.cpus()
  const wanted = (store: 'sqlite' | 'postgres') => options.only === undefined || options.only === store
  const postgres = wanted('postgres') ? await postgresVersion() : { problem: 'not asked for (--only sqlite)' }
  const cores = options.sharedCores
    ? 'load generator, servers and PostgreSQL on the same cores (--shared-cores)'
    : `${pinCores()}${postgres.version === undefined ? '' : `; ${pinDatabase(postgres.postmaster)}`}`

  console.log('## Pet store bench\n')
  console.log(
    `- machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${fmt(os.totalmem() / 2 ** 30, 1)} GiB RAM, ${os.type()} ${os.release()}`,
  )
  console.log(`- Node ${process.version}; SQLite ${sqliteVersion()}; PostgreSQL ${postgres.version ?? `not measured (${postgres.problem})`}`)
  // (autocannon, in this process, spends more CPU per request than the server spends on a cheap
  // read: it, not the server, would set the reads' pace; wrk spends less than half of it)
  const wrk = wrkVersion()
  const driver: Driver = wrk === undefined ? 'autocannon' : 'wrk'
  const drivers =
    wrk === undefined
      ? 'every request sent by autocannon, in this process (wrk is not installed: Debian, apt-get install wrk; the reads are then paced by autocannon, not by the server)'
      : `the reads (GET) sent by ${wrk} (one thread), the writes by autocannon in this process`
  console.log(
    `- logs on: LOG_LEVEL ${options.logLevel ?? 'unset (the service default, info: one access-log line per request)'} for service and peers, ` +
      `their stdout ${options.logTo === 'pipe' ? 'a pipe that a process of its own (cat) drains into a file, as a log collector reads it (--log-to pipe)' : 'written to a file by the server itself (--log-to file)'}; logs off: LOG_LEVEL=silent for both; ` +
      `load: ${drivers}, on the same machine; ${cores}${options.smoke ? '; SMOKE RUN: figures are not meaningful' : ''}`,
  )

  progress('building (npm run -s build)')
  execFileSync('npm', ['run', '-s', 'build'], { cwd: projectRoot, stdio: ['ignore', 'inherit', 'inherit'] })

  const storeList: Store[] = []
  const mainRuns = !options.skipped.has('main')
  // (three servers, each with logs and without, share the pools of a store; reads need only the
  // two that sameAnswers' probes take, one for the service and one for the peer)
  const pools =
    options.ordersWanted && (mainRuns || !options.skipped.has('checks'))
      ? options.orderWritesWanted
        ? poolSize(options, 3 * logSettings.length)
        : 2
      : undefined
  if (wanted('sqlite')) storeList.push(await made.make('SQLite', 'bench', options.pets, pools))
  if (postgres.version !== undefined) storeList.push(await made.make('PostgreSQL', `petstore_bench_${process.pid}`, options.pets, pools))
  const rows: Row[] = []
  if (mainRuns) {
    for (const store of storeList) rows.push(...(await sideBySide(options, driver, running, store)))
    console.log(`\n${mainTable(rows, options)}`)
    const reads = readsBelowPeer(rows)
    if (reads !== '') console.log(`\n${reads}`)
    const revalidation = revalidationTable(rows, await plainRevalidation(options, driver, running, rows))
    if (revalidation !== undefined) console.log(`\n${revalidation}\n\n${revalidationsAboveHalf(rows)}`)
  }

  if (!options.skipped.has('tracing')) {
    const traced: TracingRow[] = []
    for (const store of storeList) traced.push(...(await tracingCosts(running, store, { ...options, driver }, (name) => options.wantedScenario(name))))
    if (traced.length > 0) console.log(`\n${tracingTable(traced, options)}`)
  }

  if (!options.skipped.has('checks')) {
    progress('checks: the role check and order ownership, timed alone')
    const checks = [await roleCheckCost(options.smoke)]
    for (const store of storeList) if (store.orders !== undefined) checks.push(...(await ownershipCosts(store, options.smoke)))
    // what a request of the operation each check is on costs the service (stored key, logs off)
    const requestCpuUs = (check: CheckRow) =>
      rows.find(
        (row) =>
          row.scenario.split(/[ ,]/)[0] === check.scenario &&
          row.key === 'stored key' &&
          row.store === (check.store === 'any' ? storeList[0]?.name : check.store),
      )?.measured.off.project.cpuUs
    const ownership = storeList.some((store) => store.orders !== undefined)
      ? ''
      : '\n\n(order ownership is timed when an order scenario runs: --scenarios getOrder or listOrders)'
    console.log(`\n### What the checks cost\n\n${checksTable(checks, requestCpuUs)}${ownership}`)
  }

  if (!options.skipped.has('webhooks')) {
    const rows: WebhookRow[] = []
    for (const store of storeList) rows.push(await webhooks(running, made, store.name, options))
    console.log(`\n${webhookTable(rows, options)}`)
  }

  const notes: string[] = []
  if (!options.skipped.has('start')) notes.push(...(await coldStarts({ runs: options.coldStarts, workDir, envKey, logLevel: options.logLevel })))
  const sqlite = storeList.find((store) => store.name === 'SQLite') ?? storeList[0]
  if (sqlite !== undefined && !options.skipped.has('rss')) {
    notes.push(...(await residentMemory(running, sqlite, { pets: options.pets, duration: options.rssDuration, connections: options.rssConnections })))
  }
  if (notes.length > 0) console.log(`\n### Start and memory\n\n${notes.join('\n')}`)

  if (options.scale) {
    const rows: ScaleRow[] = []
    for (const store of storeList) rows.push(...(await scale(running, made, store.name, options)))
    console.log(`\n${scaleTable(rows, options)}`)
  }

  if (options.profile) {
    for (const store of storeList) {
      console.log(
        `\n### CPU profile, ${options.profileScenario} on ${store.name}, logs ${options.profileLogs} (self time)\n\n${await profiles(running, store, workDir, options)}`,
      )
    }
  }

  const args = process.argv.slice(2)
  console.log(`\nRun: npm run bench${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`)
}

const options = readOptions(process.argv.slice(2))
const workDir = mkdtempSync(join(os.tmpdir(), 'petstore-bench-'))
const made = stores(workDir)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`bench: ${signal}, stopping`)
    process.exit(130)
  })
}
try {
  await main(options, workDir, made)
} finally {
  await made.dropAll().catch((error: Error) => progress(`bench: could not drop the PostgreSQL databases: ${error.message}`))
  if (options.keep || options.profile) progress(`work directory kept: ${workDir}`)
  else if (existsSync(workDir)) rmSync(workDir, { recursive: true, force: true })
}
