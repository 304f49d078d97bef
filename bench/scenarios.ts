import type { Scenario } from './load.js'
import { authorization, get, type Target } from './servers.js'
import { type OrderPools, type Store, take } from './stores.js'

export const newPetBody = JSON.stringify({ name: 'Bench', categoryId: 7, status: 'pending' })

export const petScenarios = (pets: number): Scenario[] => [
  { name: 'getPet', method: 'GET', path: '/v1/pets/1', randomIdUpTo: pets },
  { name: 'listPets limit=20, status', method: 'GET', path: '/v1/pets?limit=20&status=sold' },
  // version 2: each pet with its category (most of them created, some named by version 1 only)
  { name: 'listPets@v2 limit=20, status', method: 'GET', path: '/v2/pets?limit=20&status=sold' },
  // the same page revalidated: If-None-Match the tag its 200 gave
  { name: 'listPets 304 limit=20, status', method: 'GET', path: '/v1/pets?limit=20&status=sold', revalidate: true },
  { name: 'createPet', method: 'POST', path: '/v1/pets', body: newPetBody },
]

/** The store orders: reads of the seeded orders; writes on pools, each pet and order once. */
export const orderScenarios = ({ readOrders, place, update }: OrderPools): Scenario[] => [
  { name: 'getOrder', method: 'GET', path: '/v1/store/orders/1', randomIdUpTo: readOrders },
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

/** listPets and getPet at a store of `pets` pets, for the scale rows (deep after: at 90% of the ids). */
export const scaleScenarios = (pets: number): Scenario[] => [
  { name: 'listPets limit=20', method: 'GET', path: '/v1/pets?limit=20' },
  { name: 'listPets limit=20, status', method: 'GET', path: '/v1/pets?limit=20&status=sold' },
  { name: 'listPets limit=20, deep after', method: 'GET', path: `/v1/pets?limit=20&after=${Math.floor(pets * 0.9)}` },
  { name: 'listPets limit=20, status, deep after', method: 'GET', path: `/v1/pets?limit=20&status=sold&after=${Math.floor(pets * 0.9)}` },
  { name: 'getPet', method: 'GET', path: '/v1/pets/1', randomIdUpTo: pets },
]

interface Probe {
  method?: string
  body?: string
  path: string
  headers?: Record<string, string>
}

/** Responses of the service and the peer, side by side: the same bodies and headers (but the id
 * and Location of a new pet). Returns the differences, in words. */
export async function sameAnswers(project: Target, peer: Target, store: Store): Promise<string[]> {
  const differences: string[] = []
  const headerNames = ['content-type', 'cache-control', 'etag', 'x-content-type-options', 'deprecation', 'sunset', 'link', 'api-stability']
  // each target is asked its own probe: a write takes a pet or an order of its own
  const probes: [string, () => Probe][] = [
    ['getPet', () => ({ path: '/v1/pets/42' })],
    ['listPets', () => ({ path: '/v1/pets?limit=20&status=sold' })],
    ['listPets@v2', () => ({ path: '/v2/pets?limit=20&status=sold' })],
    ['createPet', () => ({ method: 'POST', path: '/v1/pets', body: newPetBody })],
  ]
  const orders = store.orders
  if (orders !== undefined) {
    probes.push(
      ['getOrder', () => ({ path: '/v1/store/orders/2' })],
      ['getOrder, none', () => ({ path: '/v1/store/orders/999999999' })],
      ['listOrders', () => ({ path: '/v1/store/orders?limit=20&status=delivered' })],
      [
        'placeOrder',
        () => ({
          method: 'POST',
          path: '/v1/store/orders',
          body: JSON.stringify({ petId: take(orders.place) }),
          headers: { 'idempotency-key': `probe-${orders.place.next}` },
        }),
      ],
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
    const [ours, theirs] = [await ask(project), await ask(peer)]
    // (what differs by nature between two new pets or orders: ids, and the time of placing)
    const normal = (body: string) => body.replace(/"(id|petId)":\d+/g, '"$1":0').replace(/"placedAt":"[^"]+"/, '"placedAt":""')
    if (ours.status !== theirs.status) differences.push(`${name}: status ${ours.status} vs ${theirs.status}`)
    if (normal(ours.body) !== normal(theirs.body)) differences.push(`${name}: body ${ours.body.slice(0, 80)} vs ${theirs.body.slice(0, 80)}`)
    // (a tag is each server's own: a page's is of the service's store revision, not of its bytes)
    const shown = (headers: Record<string, unknown>, header: string) => (header === 'etag' && headers.etag !== undefined ? 'a tag' : String(headers[header]))
    for (const header of headerNames) {
      if (shown(ours.headers, header) !== shown(theirs.headers, header)) {
        differences.push(`${name}: ${header} ${String(ours.headers[header])} vs ${String(theirs.headers[header])}`)
      }
    }
    const location = (headers: Record<string, unknown>) => String(headers.location).replace(/\d+$/, 'ID')
    if (location(ours.headers) !== location(theirs.headers))
      differences.push(`${name}: location ${String(ours.headers.location)} vs ${String(theirs.headers.location)}`)
  }
  return differences
}
