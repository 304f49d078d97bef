import type { FastifyRequest } from 'fastify'
import { allOrders, authorize, type OrderScope } from '../src/auth/access.js'
import { loadContract, specPaths } from '../src/contract/load.js'
import { openStorage } from '../src/repositories.js'
import { median } from './load.js'
import { fmt } from './report.js'
import type { Store } from './stores.js'

/** One check, timed alone: a call of `scenario` without it and with it, in µs. */
export interface CheckRow {
  store: string
  /** the operation whose requests make the call (its row in the main table) */
  scenario: string
  what: string
  without: number
  with: number
}

/**
 * µs per call of `without` and of `with`: `rounds` batches of `size` calls each, the two in turn
 * (either one first, alternately), each the median of its batches; first a tenth of the rounds
 * for the JIT and the caches. A batch of one call times a read (whose time moves with the store
 * more than with anything a check adds: a median of single calls stands where a mean would not);
 * a call of nanoseconds needs a batch of many.
 */
async function alternating(rounds: number, size: number, without: () => unknown, withCheck: () => unknown): Promise<{ without: number; with: number }> {
  const batch = async (call: () => unknown) => {
    const start = process.hrtime.bigint()
    for (let i = 0; i < size; i++) {
      const answer = call()
      if (answer instanceof Promise) await answer
    }
    return Number(process.hrtime.bigint() - start) / 1_000 / size
  }
  const calls = { without, with: withCheck }
  const times = { without: [] as number[], with: [] as number[] }
  const warmUp = Math.ceil(rounds / 10)
  for (let i = 0; i < warmUp + rounds; i++) {
    const order = i % 2 === 0 ? (['without', 'with'] as const) : (['with', 'without'] as const)
    for (const side of order) {
      const time = await batch(calls[side])
      if (i >= warmUp) times[side].push(time)
    }
  }
  return { without: median(times.without), with: median(times.with) }
}

/** Batches of the role check: each of a million calls (a thousand in a smoke run). */
const roleCheckBatches = 15

/** The role check of getPet on an authenticated request (what `security` adds to each one),
 * against authentication alone: roleCheckBatches batches of a million calls. */
export async function roleCheckCost(smoke = false): Promise<CheckRow> {
  // (getPet is the oldest version's: version 1's, derived by its overlay)
  const contract = loadContract(specPaths[0])
  const operation = contract.operations.get('getPet')!
  const request = { roles: new Set(contract.roles.defaults) } as unknown as FastifyRequest
  let authenticated = 0
  const authenticate = () => {
    authenticated++
  }
  const checked = authorize(authenticate, operation)
  const measured = await alternating(
    roleCheckBatches,
    smoke ? 1_000 : 1_000_000,
    () => authenticate(),
    () => checked(request, undefined as never),
  )
  if (authenticated === 0) throw new Error('the role check was not called')
  return { store: 'any', scenario: 'getPet', what: 'role check (getPet)', ...measured }
}

/**
 * Order ownership on `store`: the reads of getOrder and listOrders (limit=20, status) as the
 * repository makes them for store staff (every order: the statements without an owner, as before
 * ownership) and for the key that owns the orders (the statements with it).
 */
export async function ownershipCosts(store: Store, smoke = false): Promise<CheckRow[]> {
  const storage = await openStorage(store.url, { poolSize: 1 })
  try {
    const { orders } = storage
    const readOrders = store.orders?.readOrders ?? 1
    let next = 0
    // (successive ids, both sides taking them in turn)
    const find = (scope: OrderScope) => () => orders.find(1 + (next++ % readOrders), scope)
    const list = (scope: OrderScope) => () => orders.list({ scope, limit: 20, status: 'delivered' })
    // (a smoke run: enough calls to run every line)
    const calls = smoke ? 20 : store.name === 'SQLite' ? 100_000 : 20_000
    const owner = store.storedPrincipal
    return [
      { store: store.name, scenario: 'getOrder', what: 'getOrder read, owner condition', ...(await alternating(calls, 1, find(allOrders), find(owner))) },
      { store: store.name, scenario: 'listOrders', what: 'listOrders read, owner condition', ...(await alternating(calls, 1, list(allOrders), list(owner))) },
    ]
  } finally {
    await storage.close()
  }
}

/** The checks' costs, in µs per call, as a share of the call, and, for the checks that run in the
 * service's process (all but PostgreSQL's reads, which run in PostgreSQL), as a share of what a
 * request costs the service (CPU µs per request of the operation, from the main table, where it
 * was measured). */
export function checksTable(rows: CheckRow[], requestCpuUs: (row: CheckRow) => number | undefined): string {
  const lines = rows.map((row) => {
    const added = row.with - row.without
    const cpu = row.store === 'PostgreSQL' ? undefined : requestCpuUs(row)
    const ofRequest =
      row.store === 'PostgreSQL' ? 'n/a (in PostgreSQL)' : cpu === undefined ? 'n/a' : `${((100 * added) / cpu).toFixed(2)}% of ${fmt(cpu, 1)} µs`
    return `| ${row.what} | ${row.store} | ${row.without.toFixed(3)} | ${row.with.toFixed(3)} | ${added >= 0 ? '+' : ''}${added.toFixed(3)} | ${((100 * added) / row.without).toFixed(1)}% | ${ofRequest} |`
  })
  return [
    'Each check timed alone in the bench process: the same call without it and with it; the role',
    `check as the median of ${roleCheckBatches} interleaved batches of a million calls, the reads as the median of`,
    "single calls, the two alternating. Share of a request: of the service's CPU per request (logs",
    'off, stored key) in the table above.',
    '',
    '| check | store | µs/call without | µs/call with | added µs | share of the call | share of a request |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...lines,
  ].join('\n')
}
