import { compare, type LoadPlan, progress } from './load.js'
import type { ScaleRow } from './report.js'
import { scaleScenarios } from './scenarios.js'
import { type Servers, stop, type Target } from './servers.js'
import type { Store, stores } from './stores.js'

/** listPets and getPet on the service (stored key) at `pets` pets and at `scalePets`, on one store. */
export async function scale(
  servers: Servers,
  made: ReturnType<typeof stores>,
  storeName: Store['name'],
  plan: LoadPlan & { pets: number; scalePets: number },
): Promise<ScaleRow[]> {
  progress(`${storeName}: scale, ${plan.pets} vs ${plan.scalePets} pets`)
  const prefix = storeName === 'SQLite' ? 'scale' : 'petstore_bench_scale'
  const small = await made.make(storeName, `${prefix}_small`, plan.pets)
  const big = await made.make(storeName, `${prefix}_big`, plan.scalePets)
  const targets: Target[] = []
  try {
    targets.push(await servers.project('small', small.url, 'stored', small.storedKey))
    targets.push(await servers.project('big', big.url, 'stored', big.storedKey))
    // each target gets the scenarios of its own size: the paths differ, the names do not
    const medians = await compare(`scale ${storeName}`, targets, (target) => scaleScenarios(target.name === 'small' ? plan.pets : plan.scalePets), plan)
    return [...medians].map(([scenario, byTarget]) => ({ scenario, store: storeName, small: byTarget.get('small')!, big: byTarget.get('big')! }))
  } finally {
    for (const target of targets) await stop(target)
  }
}
