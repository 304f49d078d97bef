import type { Operation } from '../contract/model.js'
import type { Metrics } from './metrics.js'

/** Where who calls what is written down (usage.ts), by operation of a version. */
export interface UsageNotes {
  note(principal: string, call: { version: number; operation: string }): void
}

/**
 * What counts the authenticated calls of an operation that has a lifecycle to watch (deprecated,
 * experimental, beta): in the metrics, and per key for `npm run keys -- usage`. Undefined for a
 * stable operation in good standing: its calls cost nothing more.
 */
export function lifecycleCalls(metrics: Pick<Metrics, 'lifecycleRequests'>, usage: UsageNotes, version: number) {
  return ({ id, lifecycle }: Operation): ((principal: string) => void) | undefined => {
    if (lifecycle.label === undefined) return undefined
    const counted = metrics.lifecycleRequests(id, lifecycle.label, version)
    const call = { version, operation: id }
    return (principal) => {
      counted()
      usage.note(principal, call)
    }
  }
}
