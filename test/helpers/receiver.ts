/**
 * A webhook receiver for the tests: a real HTTP server on 127.0.0.1 that records every delivery
 * and answers as the test says. Every delivery is checked as it arrives against the `webhooks`
 * of the contract the sender serves (headers, media type, body): one that breaks it fails the
 * test that received it. verified() checks a delivery as a receiver would: its Standard Webhooks
 * signature, with the `standardwebhooks` package.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import { Webhook } from 'standardwebhooks'
import { deliveryViolations, type ServedContract } from './contract.js'
import { sleep } from './concurrency.js'

export interface Delivery {
  headers: IncomingHttpHeaders
  body: string
  /** when it arrived (Date.now()) */
  at: number
}

/** How the receiver answers the `n`th request (from 0): a status, or `hang` (no answer at all). */
export type Answer = (n: number, delivery: Delivery, response: ServerResponse) => number | 'hang' | 'handled'

export interface Receiver {
  url: string
  deliveries: Delivery[]
  /** TCP connections accepted so far */
  connections: number
  /** stops listening (connections are refused) until `reopen` */
  stop(): Promise<void>
  reopen(): Promise<void>
  /** resolves once `count` deliveries have arrived, or fails after `ms` */
  waitFor(count: number, ms?: number): Promise<Delivery[]>
}

export interface ReceiverOptions {
  path?: string
  /** the contract of the subscriptions' version (any served one unless told: deliveryViolations),
   * or null when what arrives is no delivery (tests of the transport post bare bodies) */
  contract?: ServedContract | readonly ServedContract[] | null
}

export async function startReceiver(
  t: Test,
  answer: Answer = () => 204,
  { path = '/hooks/petstore?token=abc', contract }: ReceiverOptions = {},
): Promise<Receiver> {
  const deliveries: Delivery[] = []
  let port = 0
  const state = { connections: 0 }
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const delivery = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
      deliveries.push(delivery)
      // asserted only when broken: a delivery may still arrive as the test ends
      const problems = contract === null ? [] : deliveryViolations(delivery, contract)
      if (problems.length > 0) t.strictSame(problems, [], `the delivery ${delivery.body.slice(0, 60)}… keeps the contract`)
      const status = answer(deliveries.length - 1, delivery, response)
      if (status === 'hang' || status === 'handled') return
      response.writeHead(status).end()
    })
  })
  server.on('connection', () => state.connections++)
  const listen = () =>
    new Promise<void>((resolve) =>
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as AddressInfo).port
        resolve()
      }),
    )
  await listen()
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  t.teardown(close)
  return {
    url: `http://127.0.0.1:${port}${path}`,
    deliveries,
    get connections() {
      return state.connections
    },
    stop: close,
    reopen: listen,
    async waitFor(count, ms = 20_000) {
      const deadline = Date.now() + ms
      while (deliveries.length < count) {
        if (Date.now() > deadline) throw new Error(`${deliveries.length} deliveries within ${ms} ms, not ${count}`)
        await sleep(10)
      }
      return deliveries.slice(0, count)
    },
  }
}

/** The event in a delivery, once its signature checks out with `secret` (standardwebhooks) and
 * its webhook-id is the event's id; the test fails otherwise. (The receiver checked the rest
 * against the contract when it arrived.) */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an event's body, checked against the contract on arrival
export function verified(t: Test, delivery: Delivery, secret: string): any {
  const event = new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as { id: string }
  t.equal(delivery.headers['webhook-id'], event.id, 'webhook-id is the event id')
  return event
}
