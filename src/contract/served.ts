/**
 * The documents one server serves side by side, one per major version: each under the base
 * path of its major (`/v1`, `/v2`), and all promising the same of the server itself (the limits,
 * health paths and notice periods of `x-service`), which one process keeps for all of them, and
 * the same of keys: a key holds roles of the newest document's catalogue, and an event is sent
 * to the roles the newest names.
 */
import type { Contract } from './model.js'
import { ContractError, type Problem } from './problems.js'
import { bearerScheme } from './roles.js'

/** `contracts`, oldest first, or a ContractError naming what they cannot share. */
export function servedTogether(contracts: readonly Contract[]): readonly Contract[] {
  const sorted = [...contracts].sort((a, b) => a.version[0] - b.version[0])
  const problems: Problem[] = []
  const newest = sorted.at(-1)!
  for (const [i, contract] of sorted.entries()) {
    const where = `${contract.file} (major version ${contract.version[0]})`
    if (i > 0 && sorted[i - 1]!.version[0] === contract.version[0]) {
      problems.push({
        rule: 'version',
        path: ['info', 'version'],
        where,
        message: `${sorted[i - 1]!.file} is of the same major version: each served document has a major of its own`,
      })
    }
    const mine = contract.service
    const theirs = newest.service
    for (const part of ['limits', 'noticeDays'] as const) {
      // (plain records of numbers; the limits include the Error and WebhookDelivery schemas' maxLengths)
      const differing = Object.entries(theirs[part]).filter(([name, value]) => (mine[part] as Record<string, number>)[name] !== value)
      if (differing.length > 0) {
        problems.push({
          rule: 'service',
          path: ['x-service'],
          where,
          message: `x-service states other ${part} than ${newest.file} (${differing.map(([name]) => name).join(', ')}): the documents served together must state the same`,
        })
      }
    }
    const lacking = newest.roles.unknown([...contract.roles.roles.keys()])
    if (lacking.length > 0) {
      problems.push({
        rule: 'roles',
        path: ['components', 'securitySchemes', bearerScheme, 'x-roles'],
        where,
        message: `x-roles has ${lacking.join(', ')}, which ${newest.file} lacks: a key holds the roles of the newest document`,
      })
    }
    const keyRoles = ({ roles: { defaults, firstKey, staff } }: Contract) => JSON.stringify([defaults, firstKey, staff])
    if (keyRoles(contract) !== keyRoles(newest)) {
      problems.push({
        rule: 'roles',
        path: ['components', 'securitySchemes', bearerScheme, 'x-roles'],
        where,
        message: `x-roles gives other default, first key's or staff roles than ${newest.file}: a key holds the same roles in every version`,
      })
    }
    for (const type of contract.events.keys()) {
      if (newest.events.has(type) && JSON.stringify(contract.rolesOfEvent(type)) !== JSON.stringify(newest.rolesOfEvent(type))) {
        problems.push({
          rule: 'roles',
          path: ['webhooks', type, 'post', 'x-roles'],
          where,
          message: `event ${type} asks other roles than in ${newest.file}: a subscription is sent an event by the roles the newest names`,
        })
      }
    }
    if (mine.paths.live !== theirs.paths.live || mine.paths.ready !== theirs.paths.ready) {
      problems.push({
        rule: 'service',
        path: ['x-service', 'health'],
        where,
        message: `x-service.health names other paths than ${newest.file}: one server answers its probes at one place`,
      })
    }
  }
  if (problems.length > 0) throw new ContractError(newest.file, problems)
  return sorted
}
