/**
 * The documents one server serves side by side, one per major version: each under the base
 * path of its major (`/v1`, `/v2`), and all promising the same of the server itself (the limits,
 * health paths and notice periods of `x-service`), which one process keeps for all of them.
 */
import type { Contract } from './model.js'
import { ContractError, type Problem } from './problems.js'

/** `contracts`, oldest first, or a ContractError naming what they cannot share. */
export function servedTogether(contracts: readonly Contract[]): readonly Contract[] {
  const sorted = [...contracts].sort((a, b) => a.version[0] - b.version[0])
  const problems: Problem[] = []
  const newest = sorted.at(-1)!
  for (const [i, contract] of sorted.entries()) {
    const where = `${contract.file} (major version ${contract.version[0]})`
    if (i > 0 && sorted[i - 1]!.version[0] === contract.version[0]) {
      problems.push({ rule: 'version', path: ['info', 'version'], where, message: `${sorted[i - 1]!.file} is of the same major version: each served document has a major of its own` })
    }
    const mine = contract.service
    const theirs = newest.service
    for (const part of ['limits', 'noticeDays'] as const) {
      // (plain records of numbers, written by readService in one order)
      if (JSON.stringify(mine[part]) !== JSON.stringify(theirs[part])) {
        problems.push({ rule: 'service', path: ['x-service'], where, message: `x-service states other ${part} than ${newest.file}: the documents served together must state the same` })
      }
    }
    if (mine.paths.live !== theirs.paths.live || mine.paths.ready !== theirs.paths.ready) {
      problems.push({ rule: 'service', path: ['x-service', 'health'], where, message: `x-service.health names other paths than ${newest.file}: one server answers its probes at one place` })
    }
  }
  if (problems.length > 0) throw new ContractError(newest.file, problems)
  return sorted
}
