/**
 * A pet's status and its orders never disagree, whatever clients do and however their requests
 * interleave: random runs of createPet, placeOrder (with and without Idempotency-Key),
 * deliver and cancel, in groups sent at the same time, on each store. After each run, for
 * every pet:
 *   - at most one of its orders is not cancelled (no double sale);
 *   - one placed order <=> the pet is pending; one delivered order <=> the pet is sold;
 *   - orders, all cancelled => the pet is available;
 *   - no order => the pet has the status it was created with.
 */
import type { FastifyInstance } from 'fastify'
import fc from 'fast-check'
import t, { type Test } from 'tap'
import { aCategory, api, build, call } from './helpers/app.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'

const numRuns = Number(process.env.FC_RUNS ?? 100)
const timeLimitMs = 20_000

type Action =
  | { kind: 'createPet'; status: 'available' | 'pending' | 'sold' }
  /** `pet`: an index into the pets created so far (wrapped), or a pet that does not exist */
  | { kind: 'placeOrder'; pet: number | 'missing'; key?: string }
  | { kind: 'deliver' | 'cancel'; order: number | 'missing' }

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('createPet' as const), status: fc.constantFrom('available', 'available', 'pending', 'sold') }) },
  {
    weight: 5,
    arbitrary: fc.record(
      {
        kind: fc.constant('placeOrder' as const),
        pet: fc.oneof({ weight: 9, arbitrary: fc.nat(30) }, { weight: 1, arbitrary: fc.constant('missing' as const) }),
        // a few keys, so that retries and reuses with another pet happen
        key: fc.constantFrom('k1', 'k2', 'k3'),
      },
      { requiredKeys: ['kind', 'pet'] },
    ),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constantFrom('deliver' as const, 'cancel' as const),
      order: fc.oneof({ weight: 9, arbitrary: fc.nat(30) }, { weight: 1, arbitrary: fc.constant('missing' as const) }),
    }),
  },
)
/** Pets to start with, then groups of actions: the actions of a group are sent at once, the
 * groups one after the other. */
const run = fc.record({
  pets: fc.array(fc.constantFrom('available' as const, 'available' as const, 'pending' as const, 'sold' as const), { minLength: 1, maxLength: 5 }),
  groups: fc.array(fc.array(action, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 8 }),
})
type Run = typeof run extends fc.Arbitrary<infer Value> ? Value : never

interface Pet {
  id: number
  status: string
}
interface Order {
  id: number
  petId: number
  status: string
}

/** Every item of a list operation, page by page. */
async function all<T>(t: Test, app: FastifyInstance, path: string): Promise<T[]> {
  const items: T[] = []
  let url: string | undefined = `${path}?limit=100`
  for (let page = 0; url !== undefined && page < 1_000; page++) {
    const response = await call(t, app, { url })
    items.push(...response.json)
    url = /^<([^>]+)>; rel="next"$/.exec(String(response.headers.link ?? ''))?.[1]
  }
  return items
}

/** What is wrong between the pets and the orders, in words; empty when they agree. */
function disagreements(pets: Pet[], orders: Order[], createdAs: Map<number, string>): string[] {
  const problems: string[] = []
  const byPet = new Map<number, Order[]>()
  for (const order of orders) byPet.set(order.petId, [...(byPet.get(order.petId) ?? []), order])
  for (const order of orders) if (!pets.some((pet) => pet.id === order.petId)) problems.push(`order ${order.id} is for no pet`)
  for (const pet of pets) {
    const mine = byPet.get(pet.id) ?? []
    const placed = mine.filter((order) => order.status === 'placed').length
    const delivered = mine.filter((order) => order.status === 'delivered').length
    const what = `pet ${pet.id} (${pet.status}, orders ${JSON.stringify(mine.map((order) => order.status))})`
    if (placed + delivered > 1) problems.push(`${what}: more than one order not cancelled`)
    else if (placed === 1 && pet.status !== 'pending') problems.push(`${what}: a placed order, but not pending`)
    else if (delivered === 1 && pet.status !== 'sold') problems.push(`${what}: a delivered order, but not sold`)
    else if (mine.length > 0 && placed + delivered === 0 && pet.status !== 'available') problems.push(`${what}: all cancelled, but not available`)
    else if (mine.length === 0 && pet.status !== createdAs.get(pet.id)) problems.push(`${what}: no order, but not as created (${createdAs.get(pet.id)})`)
  }
  return problems
}

async function holds(t: Test, options: { DATABASE_URL?: string; DATABASE_POOL_SIZE?: number } = {}) {
  const app = await build(t, options)
  const categoryId = await aCategory(app)
  const createdAs = new Map<number, string>()
  const seen = new Map<string, number>()
  const count = (key: string) => seen.set(key, (seen.get(key) ?? 0) + 1)

  let runs = 0
  const oneRun = async ({ pets: initial, groups }: Run) => {
    // pets and orders of this run, referred to by index; keys of this run's own
    const pets: number[] = []
    const orders: number[] = []
    const run = ++runs
    const send = async (step: Action) => {
      if (step.kind === 'createPet') {
        const response = await call(t, app, { method: 'POST', url: `${api}/pets`, payload: { name: 'Rex', categoryId, status: step.status } })
        createdAs.set(response.json.id, step.status)
        pets.push(response.json.id)
        return count(`createPet ${response.status}`)
      }
      if (step.kind === 'placeOrder') {
        const petId = step.pet === 'missing' || pets.length === 0 ? 9_000_000 : pets[step.pet % pets.length]!
        const response = await call(t, app, {
          method: 'POST',
          url: `${api}/store/orders`,
          payload: { petId },
          ...(step.key && { headers: { 'idempotency-key': `run-${run}-${step.key}` } }),
        })
        if (response.status === 201 && !orders.includes(response.json.id)) orders.push(response.json.id)
        return count(`placeOrder ${response.status}`)
      }
      const orderId = step.order === 'missing' || orders.length === 0 ? 9_000_000 : orders[step.order % orders.length]!
      const status = step.kind === 'deliver' ? 'delivered' : 'cancelled'
      const response = await call(t, app, { method: 'PATCH', url: `${api}/store/orders/${orderId}`, payload: { status } })
      count(`${step.kind} ${response.status}`)
    }
    for (const status of initial) await send({ kind: 'createPet', status })
    for (const group of groups) await Promise.all(group.map(send))

    // (this run's pets only: the runs before have been checked, and a failure shrinks to its own run)
    const mine = (await all<Pet>(t, app, `${api}/pets`)).filter((pet) => pets.includes(pet.id))
    const theirOrders = (await all<Order>(t, app, `${api}/store/orders`)).filter((order) => pets.includes(order.petId))
    const problems = disagreements(mine, theirOrders, createdAs)
    if (problems.length > 0) throw new Error(problems.join('\n'))
  }
  // the run under way: the time limit ends the check without waiting for it, and it must end
  // (its requests answered and checked) before the test and its app do
  let underWay: Promise<unknown> = Promise.resolve()
  const property = fc.asyncProperty(run, (actions) => {
    const running = oneRun(actions)
    underWay = running.catch(() => undefined)
    return running
  })
  const started = Date.now()
  const details = await fc.check(property, {
    numRuns,
    ...(process.env.FC_SEED && { seed: Number(process.env.FC_SEED) }),
    plugins: [fc.interruptAfterTimeLimit(timeLimitMs)],
  })
  await underWay
  t.comment(
    `${details.numRuns} runs in ${Date.now() - started} ms (seed ${details.seed}): ${[...seen]
      .sort()
      .map(([key, n]) => `${key}×${n}`)
      .join(', ')}`,
  )
  if (details.failed) return t.fail(fc.defaultReportMessage(details) ?? 'the property failed')
  t.ok(details.numRuns >= Math.min(numRuns, 10), `the pets and their orders agreed after each of ${details.numRuns} runs`)
  for (const outcome of ['placeOrder 201', 'placeOrder 409', 'placeOrder 422', 'deliver 200', 'cancel 200', 'deliver 409', 'cancel 409']) {
    t.ok(seen.has(outcome), `the runs met ${outcome}`)
  }
}

t.test('SQLite: pets and their orders never disagree', (t) => holds(t))

t.test('PostgreSQL: pets and their orders never disagree', { skip: postgresMissing }, async (t) =>
  holds(t, { DATABASE_URL: await freshPostgres(t), DATABASE_POOL_SIZE: 4 }),
)
