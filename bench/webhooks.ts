import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { compare, type LoadPlan, type Measurement, progress } from './load.js'
import { fmt, ratio } from './report.js'
import { petScenarios } from './scenarios.js'
import { authorization, freePort, get, type Servers, stop, type Target } from './servers.js'
import type { Store, stores } from './stores.js'

/** createPet on one store: the service without a subscription, and with one that takes pet.created. */
export interface WebhookRow {
  store: string
  none: Measurement
  one: Measurement
  /** creates per commit during the measurements (SQLite's group commits), without and with */
  perCommit?: { none: number; one: number }
  /** events the receiver got from the service with the subscription */
  delivered: number
}

/** A receiver in this process that answers every delivery 204, and counts them. */
async function receiver() {
  let count = 0
  const server = createServer((request, response) => {
    request.resume().on('end', () => {
      count++
      response.writeHead(204).end()
    })
  }).listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, count: () => count, close: () => server.close() }
}

/** A counter of the service's metrics (0 when it has none). */
async function counter(metricsUrl: string, name: string): Promise<number> {
  const text = (await get(metricsUrl)).body
  return Number(text.split('\n').find((line) => line.startsWith(`${name} `))?.split(' ')[1] ?? 0)
}

/**
 * createPet on the service (stored key, logs on) at two stores of `plan.pets` pets, one without
 * any subscription and one with a subscription to pet.created whose receiver (in this process,
 * over http on 127.0.0.1, which the service is told to allow) answers 204: what recording the
 * events costs, and on SQLite whether creates still share commits.
 */
export async function webhooks(servers: Servers, made: ReturnType<typeof stores>, storeName: Store['name'], plan: LoadPlan & { pets: number }): Promise<WebhookRow> {
  progress(`${storeName}: createPet without and with a subscription`)
  const prefix = storeName === 'SQLite' ? 'webhooks' : 'petstore_bench_webhooks'
  const stores = { none: await made.make(storeName, `${prefix}_none`, plan.pets), one: await made.make(storeName, `${prefix}_one`, plan.pets) }
  const hooks = await receiver()
  const targets: Target[] = []
  const metrics: Record<string, string> = {}
  try {
    for (const [name, store] of Object.entries(stores)) {
      const env = { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', METRICS_PORT: String(await freePort()) }
      const target = await servers.project(name, store.url, 'stored', store.storedKey, 'on', [], env)
      targets.push(target)
      metrics[name] = `http://127.0.0.1:${env.METRICS_PORT}/metrics`
    }
    const subscribed = await get(`${targets[1]!.url}/v1/webhooks`, {
      method: 'POST',
      headers: { ...authorization(targets[1]!.key), 'content-type': 'application/json' },
      body: JSON.stringify({ url: hooks.url, events: ['pet.created'] }),
    })
    if (subscribed.status !== 201) throw new Error(`createWebhook answered ${subscribed.status}: ${subscribed.body}`)
    const createPet = () => petScenarios(plan.pets).filter((scenario) => scenario.name === 'createPet')
    const commits = async (name: string) => [await counter(metrics[name]!, 'petstore_db_committed_writes_total'), await counter(metrics[name]!, 'petstore_db_commits_total')]
    const before = { none: await commits('none'), one: await commits('one') }
    const medians = (await compare(`webhooks ${storeName}`, targets, createPet, plan)).get('createPet')!
    const perCommit = async (name: 'none' | 'one') => {
      const [writes, batches] = await commits(name)
      return (writes! - before[name][0]!) / (batches! - before[name][1]!)
    }
    return {
      store: storeName,
      none: medians.get('none')!,
      one: medians.get('one')!,
      ...(storeName === 'SQLite' && { perCommit: { none: await perCommit('none'), one: await perCommit('one') } }),
      delivered: hooks.count(),
    }
  } finally {
    for (const target of targets) await stop(target)
    hooks.close()
  }
}

export function webhookTable(rows: WebhookRow[], plan: { connections: number; pets: number }): string {
  const lines = [
    '### Webhooks: createPet without a subscription and with one',
    '',
    `The service (stored key, logs on), ${plan.connections} connections, ${plan.pets.toLocaleString('en-US')} pets; with: one subscription ` +
      'to pet.created, its receiver (in the bench process) answering 204. Creates per commit: SQLite creates grouped into one commit (fsync).',
    '',
    '| store | req/s without | req/s with | ratio | p99 ms without | p99 ms with | creates per commit without / with | events delivered | errors (without/with) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const { store, none, one, perCommit, delivered } of rows) {
    const commits = perCommit ? `${fmt(perCommit.none, 1)} / ${fmt(perCommit.one, 1)}` : 'n/a'
    lines.push(
      `| ${store} | ${fmt(none.rps)} | ${fmt(one.rps)} | ${ratio(one.rps, none.rps)} | ${fmt(none.p99, 2)} | ${fmt(one.p99, 2)} | ${commits} | ${fmt(delivered)} | ${none.errors}/${one.errors} |`,
    )
  }
  return lines.join('\n')
}
