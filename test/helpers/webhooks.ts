/**
 * What the webhook tests share: the stores they run on, pets made at once, a subscription to
 * pet.created, a delivery list, a metric of the app, and a wait for a condition.
 */
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import type { AppOptions } from '../../src/app.js'
import { call, newest, testKey } from './app.js'
import { sleep } from './concurrency.js'
import { freshPostgres } from './postgres.js'

/** A subscription of `url` to pet.created, made through version 1: the tests that use it make
 * their pets through version 1 and compare them with the events (webhook-delivery.test.ts). */
export const subscribed = async (t: Test, server: FastifyInstance, url: string) =>
  (await call(t, server, { method: 'POST', url: '/v1/webhooks', payload: { url, events: ['pet.created'] } })).json as { id: number; secret: string }

/** A subscription's deliveries, whichever version made it (one store; the list is the same in every version). */
export const deliveriesOf = async (t: Test, server: FastifyInstance, id: number) =>
  (await call(t, server, { url: newest.urlOf('listWebhookDeliveries', { webhookId: id }) })).json

/** The value of a metric series in the app's exposition. */
export async function metric(server: FastifyInstance, series: string): Promise<number> {
  const line = (await server.metrics.exposition()).split('\n').find((text) => text.startsWith(`${series} `))
  return Number(line?.split(' ')[1])
}

/** What `check` answers once it answers something, within `ms`; else the test fails saying `what`. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const found = await check()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`)
    await sleep(20)
  }
}

/** The stores a webhook test runs on: the options that open each. */
export type Store = (t: Test) => Promise<Partial<AppOptions>>
export const stores: [string, Store][] = [
  ['SQLite', async () => ({})],
  ['PostgreSQL', async (t) => ({ DATABASE_URL: await freshPostgres(t), DATABASE_POOL_SIZE: 4 })],
]

/** `count` pets made at once through version 1 (each an event). */
export const createPets = (server: FastifyInstance, count: number) =>
  Promise.all(
    Array.from({ length: count }, (_, i) =>
      server.inject({ method: 'POST', url: '/v1/pets', headers: { authorization: `Bearer ${testKey}` }, payload: { name: `Pet ${i}`, categoryId: 1 } }),
    ),
  )
