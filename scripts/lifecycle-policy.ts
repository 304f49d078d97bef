import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { projectRoot } from '../src/core/paths.js'

/** contract/lifecycle-policy.yaml: the notice periods, reviewed like code. */
export const policyFile = join(projectRoot, 'contract', 'lifecycle-policy.yaml')

/** An operation's stability: `x-stability`, or stable without one. Ordered least stable first. */
export const levels = ['experimental', 'beta', 'stable'] as const
export type Level = (typeof levels)[number]

export interface LifecyclePolicy {
  /** the least days from `x-deprecated-at` to `x-sunset`, by level */
  noticeDays: Record<Exclude<Level, 'experimental'>, number>
}

export function readPolicy(file = policyFile): LifecyclePolicy {
  const policy = parse(readFileSync(file, 'utf8')) as LifecyclePolicy
  for (const level of ['beta', 'stable'] as const) {
    if (!Number.isInteger(policy?.noticeDays?.[level]) || policy.noticeDays[level] < 0) throw new Error(`${file}: noticeDays.${level} must be a whole number of days`)
  }
  return policy
}

/** The level an operation object declares (x-stability), stable when it declares none. */
export function levelOf(operation: { 'x-stability'?: unknown }): Level {
  const stability = operation['x-stability']
  return stability === 'experimental' || stability === 'beta' ? stability : 'stable'
}

export const rank = (level: Level) => levels.indexOf(level)

/** An RFC 3339 full-date as midnight UTC, or undefined when it is not one. */
export function dayOf(value: unknown): Date | undefined {
  const date = new Date(`${String(value)}T00:00:00Z`)
  return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value ? undefined : date
}

export const dayMs = 86_400_000
