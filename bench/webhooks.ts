import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import autocannon from 'autocannon'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import { type LoadPlan, load, type Measurement, median, medianOf, progress } from './load.js'
import { fmt, ratio } from './report.js'
import { petScenarios } from './scenarios.js'
import { authorization, get, type Logs, type Servers, stop, type Target } from './servers.js'
import type { Store, stores } from './stores.js'

/** Subscriptions to pet.created in every webhook measurement, each to its own path of one receiver. */
const subscriptions = 3

/** The webhook figures of one store. */
export interface WebhookRow {
  store: string
  /** createPet at full speed, by logs: without a subscription; with three whose receiver holds
   * every request (no delivery is made: what the outbox rows cost); with three whose receiver
   * (in the bench process) answers 204 at once (the deliveries made on the same machine) */
  creates: Record<Logs, { none: Measurement; held: Measurement; delivered: Measurement; deliveredCpuUs: number }>
  /** deliveries a second of one instance draining a backlog seeded in its store */
  drain: { deliveries: number; seconds: number; perSecond: number; cpuUs: number }
  /** creates at a fixed rate, by logs: the lag of every delivery, from the event to its arrival */
  lag: Record<Logs, Lag>
}

interface Lag {
  rate: number
  seconds: number
  /** creates answered 201 within the load (those under way as it ended are made too) */
  created: number
  /** events that arrived (their webhook-ids), and deliveries (three an event) */
  events: number
  delivered: number
  duplicates: number
  p50: number
  p99: number
  max: number
  /** from the end of the load to the last arrival, ms */
  tail: number
}

/** A receiver in this process: each path is a subscription; it answers 204 (or, holding, never),
 * and notes when each event arrived and how late. */
async function receiver(holding = false) {
  const arrivals: { path: string; id: string; at: number; lag: number }[] = []
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      if (holding) return
      const at = Date.now()
      const { occurredAt } = JSON.parse(Buffer.concat(chunks).toString()) as { occurredAt: string }
      arrivals.push({ path: request.url!, id: String(request.headers['webhook-id']), at, lag: at - Date.parse(occurredAt) })
      response.writeHead(204).end()
    })
  })
  server.keepAliveTimeout = 10_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    urls: Array.from({ length: subscriptions }, (_, i) => `${base}/hooks/${i + 1}`),
    arrivals,
    /** resolves once `count` have arrived, or after `limitMs` */
    async settled(count: number, limitMs: number) {
      const deadline = Date.now() + limitMs
      while (arrivals.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    },
    close: () => {
      server.closeAllConnections()
      server.close()
    },
  }
}

async function subscribe(target: Target, urls: string[]) {
  for (const url of urls) {
    const answer = await get(`${target.url}/v1/webhooks`, {
      method: 'POST',
      headers: { ...authorization(target.key), 'content-type': 'application/json' },
      body: JSON.stringify({ url, events: ['pet.created'] }),
    })
    if (answer.status !== 201) throw new Error(`createWebhook answered ${answer.status}: ${answer.body}`)
  }
}

/** Receivers on 127.0.0.1 over http, which the service is told to allow. */
const local = { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true' }

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN

/** CPU seconds (user + system) of a server so far, from /proc, as load.ts reads them. */
function cpuSeconds(target: Target): number {
  const stat = readFileSync(`/proc/${target.child.pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/**
 * createPet at full speed on three services of one store, by logs: without a subscription, with
 * three subscriptions whose receiver holds every request (its 48 attempts wait out a 60 s
 * timeout: no delivery is made, what remains is the outbox), and with three whose receiver
 * answers at once. After each measurement of the last, its deliveries are let finish (and that
 * CPU counted to its creates) before the next, so that they do not load another's.
 */
async function creates(servers: Servers, made: ReturnType<typeof stores>, storeName: Store['name'], plan: LoadPlan & { pets: number }, prefix: string) {
  const fast = await receiver()
  const held = await receiver(true)
  const targets: Target[] = []
  const result = {} as WebhookRow['creates']
  try {
    for (const logs of ['on', 'off'] as const) {
      const variants = { none: undefined, held, delivered: fast }
      const started: Record<string, Target> = {}
      for (const [name, hooks] of Object.entries(variants)) {
        const store = await made.make(storeName, `${prefix}_${name}_${logs}`, plan.pets)
        const target = await servers.project(`${name}, logs ${logs}`, store.url, 'stored', store.storedKey, logs, [], { ...local, WEBHOOK_TIMEOUT_MS: '60000' })
        targets.push(target)
        if (hooks !== undefined) await subscribe(target, hooks.urls)
        started[name] = target
      }
      const createPet = petScenarios(plan.pets).filter((scenario) => scenario.name === 'createPet')
      const runs: Record<string, Measurement[]> = { none: [], held: [], delivered: [] }
      const deliveredCpu: number[] = []
      for (let round = 0; round < plan.rounds + (plan.warmUp > 0 ? 1 : 0); round++) {
        for (const name of Object.keys(runs)) {
          const target = started[name]!
          const before = fast.arrivals.length
          const cpuBefore = cpuSeconds(target)
          const measured = await load(target, createPet, round === 0 && plan.warmUp > 0 ? plan.warmUp : plan.duration, plan.connections)
          if (name === 'delivered') {
            await fast.settled(before + measured.answered * subscriptions, 120_000)
            deliveredCpu.push(((cpuSeconds(target) - cpuBefore) * 1e6) / measured.answered)
          }
          // (the first round warms up when the plan has a warm-up)
          if (round > 0 || plan.warmUp === 0) runs[name]!.push(measured)
        }
      }
      result[logs] = {
        none: medianOf(runs.none!),
        held: medianOf(runs.held!),
        delivered: medianOf(runs.delivered!),
        deliveredCpuUs: median(plan.warmUp > 0 ? deliveredCpu.slice(1) : deliveredCpu),
      }
      for (const target of Object.values(started)) await stop(target)
    }
    return result
  } finally {
    for (const target of targets) await stop(target)
    fast.close()
    held.close()
  }
}

/** `events` pet.created events, each with a delivery due now for every subscription, straight
 * into the store's tables as the outbox writes them. */
async function seedBacklog(url: string, events: number) {
  const now = Date.now()
  const fields = `'{"data":{"id":' || i || ',"name":"Pet ' || i || '","categoryId":1,"status":"available"}}'`
  const deliveries = `insert into webhook_deliveries (subscription_id, event_id, status, attempts, next_attempt_at, give_up_at, created_at)
    select s.id, e.id, 'pending', 0, ${now}, ${now + 86_400_000}, ${now} from webhook_events e cross join webhook_subscriptions s order by e.id, s.id`
  if (url.startsWith('sqlite:')) {
    const db = new SQLite(url.slice('sqlite:'.length))
    db.transaction(() => {
      db.prepare(
        `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
         insert into webhook_events (type, occurred_at, fields) select 'pet.created', ${now}, ${fields} from n`,
      ).run(events)
      db.prepare(deliveries).run()
    })()
    db.close()
    return
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query(`insert into webhook_events (type, occurred_at, fields) select 'pet.created', ${now}, ${fields} from generate_series(1, $1::int) i`, [
    events,
  ])
  await client.query(deliveries)
  await client.query('vacuum analyze webhook_deliveries')
  await client.end()
}

/**
 * One instance draining a backlog: three subscriptions made through the API, then `events`
 * events with a delivery each for every subscription seeded in the store, then the service
 * started: deliveries a second from the first arrival to the last.
 */
async function drain(
  servers: Servers,
  made: ReturnType<typeof stores>,
  storeName: Store['name'],
  events: number,
  prefix: string,
): Promise<WebhookRow['drain']> {
  const hooks = await receiver()
  const store = await made.make(storeName, `${prefix}_drain`, 0)
  try {
    const first = await servers.project('drain, subscribing', store.url, 'stored', store.storedKey, 'on', [], local)
    await subscribe(first, hooks.urls)
    await stop(first)
    await seedBacklog(store.url, events)
    const target = await servers.project('drain', store.url, 'stored', store.storedKey, 'on', [], local)
    const cpuBefore = cpuSeconds(target)
    const count = events * subscriptions
    await hooks.settled(count, 300_000)
    const cpu = cpuSeconds(target) - cpuBefore
    await stop(target)
    const seconds = (hooks.arrivals.at(-1)!.at - hooks.arrivals[0]!.at) / 1000
    return { deliveries: hooks.arrivals.length, seconds, perSecond: (hooks.arrivals.length - 1) / seconds, cpuUs: (cpu * 1e6) / hooks.arrivals.length }
  } finally {
    hooks.close()
  }
}

/** createPet at `rate` a second for `seconds`, three subscriptions: every delivery's lag. */
async function lag(
  servers: Servers,
  made: ReturnType<typeof stores>,
  storeName: Store['name'],
  logs: Logs,
  rate: number,
  seconds: number,
  prefix: string,
): Promise<Lag> {
  const hooks = await receiver()
  const store = await made.make(storeName, `${prefix}_lag_${logs}`, 0)
  try {
    const target = await servers.project(`lag, logs ${logs}`, store.url, 'stored', store.storedKey, logs, [], local)
    await subscribe(target, hooks.urls)
    const result = await autocannon({
      url: `${target.url}/v1/pets`,
      method: 'POST',
      headers: { ...authorization(target.key), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
      connections: 10,
      overallRate: rate,
      duration: seconds,
    })
    const ended = Date.now()
    const created = result['2xx']
    await hooks.settled(created * subscriptions, 120_000)
    await stop(target)
    const lags = hooks.arrivals.map((arrival) => arrival.lag).sort((a, b) => a - b)
    return {
      rate,
      seconds,
      created,
      events: new Set(hooks.arrivals.map((arrival) => arrival.id)).size,
      delivered: hooks.arrivals.length,
      duplicates: hooks.arrivals.length - new Set(hooks.arrivals.map((arrival) => `${arrival.path} ${arrival.id}`)).size,
      p50: quantile(lags, 0.5),
      p99: quantile(lags, 0.99),
      max: lags.at(-1) ?? Number.NaN,
      tail: Math.max(0, (hooks.arrivals.at(-1)?.at ?? ended) - ended),
    }
  } finally {
    hooks.close()
  }
}

/**
 * The webhook figures of one store (see WebhookRow): createPet without and with subscriptions,
 * a backlog drained, and the lag at a fixed rate of creates, each against the built service with
 * a stored key and its receivers in the bench process, over http on 127.0.0.1.
 */
export async function webhooks(
  servers: Servers,
  made: ReturnType<typeof stores>,
  storeName: Store['name'],
  plan: LoadPlan & { pets: number; smoke?: boolean },
): Promise<WebhookRow> {
  const prefix = storeName === 'SQLite' ? 'webhooks' : 'petstore_bench_webhooks'
  progress(`${storeName}: createPet without a subscription, with ${subscriptions} held, with ${subscriptions} delivered`)
  const createFigures = await creates(servers, made, storeName, plan, prefix)
  const events = plan.smoke ? 300 : 10_000
  progress(`${storeName}: one instance draining ${(events * subscriptions).toLocaleString('en-US')} deliveries`)
  const drained = await drain(servers, made, storeName, events, prefix)
  const [rate, seconds] = plan.smoke ? [100, 2] : [500, 20]
  const lags = {} as Record<Logs, Lag>
  for (const logs of ['on', 'off'] as const) {
    progress(`${storeName}: createPet at ${rate}/s for ${seconds} s, ${subscriptions} subscriptions, logs ${logs}: the lag of each delivery`)
    lags[logs] = await lag(servers, made, storeName, logs, rate, seconds, prefix)
  }
  return { store: storeName, creates: createFigures, drain: drained, lag: lags }
}

export function webhookTable(rows: WebhookRow[], plan: { connections: number; pets: number }): string {
  const lines = [
    '### Webhooks: createPet without subscriptions, with three held, with three delivered',
    '',
    `The service (stored key), ${plan.connections} connections, ${plan.pets.toLocaleString('en-US')} pets. Held: three subscriptions to pet.created whose ` +
      'receiver never answers (no delivery completes: the cost of the outbox rows). Delivered: three whose receiver, in the bench process, answers 204 ' +
      '(each measurement followed by its deliveries, whose CPU is counted to its creates in the last column).',
    '',
    '| store | logs | req/s none | req/s held | req/s delivered | held / none | delivered / none | CPU µs/create none | held | delivered (creates) | delivered (with deliveries) | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const { store, creates } of rows) {
    for (const logs of ['on', 'off'] as const) {
      const { none, held, delivered, deliveredCpuUs } = creates[logs]
      lines.push(
        `| ${store} | ${logs} | ${fmt(none.rps)} | ${fmt(held.rps)} | ${fmt(delivered.rps)} | ${ratio(held.rps, none.rps)} | ${ratio(delivered.rps, none.rps)} | ` +
          `${fmt(none.cpuUs, 1)} | ${fmt(held.cpuUs, 1)} | ${fmt(delivered.cpuUs, 1)} | ${fmt(deliveredCpuUs, 1)} | ${none.errors}/${held.errors}/${delivered.errors} |`,
      )
    }
  }
  lines.push('', '### Webhooks: one instance draining a backlog', '')
  lines.push('| store | deliveries | seconds | deliveries/s | service CPU µs/delivery |', '|---|---:|---:|---:|---:|')
  for (const { store, drain } of rows)
    lines.push(`| ${store} | ${fmt(drain.deliveries)} | ${fmt(drain.seconds, 1)} | ${fmt(drain.perSecond)} | ${fmt(drain.cpuUs, 1)} |`)
  lines.push('', `### Webhooks: createPet at a fixed rate, ${subscriptions} subscriptions: the lag from each event to its arrival`, '')
  lines.push(
    '| store | logs | creates/s × s | 201s | events | deliveries | duplicates | lag p50 ms | p99 ms | max ms | last arrival after the load ends, ms |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  )
  for (const { store, lag } of rows) {
    for (const logs of ['on', 'off'] as const) {
      const l = lag[logs]
      lines.push(
        `| ${store} | ${logs} | ${l.rate} × ${l.seconds} | ${fmt(l.created)} | ${fmt(l.events)} | ${fmt(l.delivered)} | ${l.duplicates} | ${fmt(l.p50)} | ${fmt(l.p99)} | ${fmt(l.max)} | ${fmt(l.tail)} |`,
      )
    }
  }
  return lines.join('\n')
}
