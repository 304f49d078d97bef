import { ApiError } from '../core/errors.js'
import type { Contract, Operation } from './spec.js'

/** Stability markers an operation may carry (`x-stability`); none means stable. */
const stabilities = new Set(['experimental', 'beta'])

/** What the metrics and the usage records call an operation's lifecycle: `deprecated` (whatever
 * its level), `experimental` or `beta`; undefined for a stable operation in good standing. */
export function lifecycleOf({ definition }: Operation): 'deprecated' | 'experimental' | 'beta' | undefined {
  if (definition.deprecated === true) return 'deprecated'
  const stability = definition['x-stability']
  return stability === 'experimental' || stability === 'beta' ? stability : undefined
}

/** lifecycleHeaders of every operation of the contract, made once. */
export function lifecycleOfOperations(contract: Contract, docsPath: string): ReadonlyMap<Operation, Record<string, string> | undefined> {
  return new Map([...contract.operations.values()].map((operation) => [operation, lifecycleHeaders(operation, contract, docsPath)]))
}

/**
 * The response headers that announce an operation's lifecycle, built once at startup from its
 * entry in openapi.yaml: `deprecated`, `x-deprecated-at`, `x-sunset`, `x-successor` and
 * `x-stability`. An operation that has none of them gets no headers (undefined).
 */
export function lifecycleHeaders(
  operation: Operation,
  contract: Contract,
  docsPath: string,
): Record<string, string> | undefined {
  const definition = operation.definition
  const headers: Record<string, string> = {}
  const where = `openapi.yaml: operation ${operation.id}`

  const stability = definition['x-stability']
  if (stability !== undefined) {
    if (!stabilities.has(stability as string)) {
      throw new Error(`${where}: x-stability must be one of ${[...stabilities].join(', ')}, not ${JSON.stringify(stability)}`)
    }
    headers['API-Stability'] = stability as string
  }

  if (definition.deprecated === true) {
    const deprecatedAt = dateOf(definition['x-deprecated-at'], `${where}: x-deprecated-at`)
    headers.Deprecation = `@${deprecatedAt.getTime() / 1000}`
    const links = [`<${docsPath}>; rel="deprecation"; type="text/html"`]

    if (definition['x-sunset'] !== undefined) {
      const sunset = dateOf(definition['x-sunset'], `${where}: x-sunset`)
      if (sunset < deprecatedAt) throw new Error(`${where}: x-sunset is earlier than x-deprecated-at`)
      headers.Sunset = sunset.toUTCString()
    }
    if (definition['x-successor'] !== undefined) {
      const successor = contract.operations.get(definition['x-successor'] as string)
      if (!successor) throw new Error(`${where}: x-successor names no operation: ${String(definition['x-successor'])}`)
      links.unshift(`<${contract.basePath}${successor.path}>; rel="successor-version"`)
    }
    headers.Link = links.join(', ')
  }

  return Object.keys(headers).length > 0 ? headers : undefined
}

/** Whether a deprecated operation is gone at an instant (ms since the epoch): the `gone` error
 * to answer with, or undefined while it still works. */
export type Retirement = (now: number) => ApiError | undefined

/** The retirement of every operation that has one (a sunset or brownouts), made once. */
export function retirementOfOperations(contract: Contract): ReadonlyMap<Operation, Retirement | undefined> {
  return new Map([...contract.operations.values()].map((operation) => [operation, retirement(operation, contract)]))
}

/**
 * From `x-sunset` (00:00 UTC) on, and within each of its `x-brownouts` (`{start, end}`, RFC 3339
 * date-times in UTC, the end excluded, all before the sunset), a deprecated operation is gone.
 */
export function retirement(operation: Operation, contract: Contract): Retirement | undefined {
  const definition = operation.definition
  const where = `openapi.yaml: operation ${operation.id}`
  const brownouts = (definition['x-brownouts'] ?? []) as { start?: unknown; end?: unknown }[]
  if (definition.deprecated !== true || definition['x-sunset'] === undefined) {
    if (brownouts.length > 0) throw new Error(`${where}: x-brownouts needs deprecated: true and an x-sunset`)
    return undefined
  }
  const sunsetDay = String(definition['x-sunset'])
  const sunset = dateOf(sunsetDay, `${where}: x-sunset`).getTime()
  const intervals = brownouts.map(({ start, end }, index) => {
    const [from, to] = [instantOf(start, `${where}: x-brownouts[${index}].start`), instantOf(end, `${where}: x-brownouts[${index}].end`)]
    if (!(from < to && to <= sunset)) throw new Error(`${where}: x-brownouts[${index}] must end after it starts, and by the sunset`)
    return [from, to, String(end)] as const
  })
  const successorId = definition['x-successor'] as string | undefined
  const successor = successorId === undefined ? '' : `: use ${successorId}, ${contract.operations.get(successorId)!.method} ${contract.basePath}${contract.operations.get(successorId)!.path}`
  return (now) => {
    if (now >= sunset) return new ApiError('gone', `${operation.id} was removed on ${sunsetDay} (its sunset)${successor}`)
    for (const [from, to, end] of intervals) {
      if (now >= from && now < to) return new ApiError('gone', `${operation.id} is unavailable until ${end}, a brownout before its removal on ${sunsetDay}${successor}`)
    }
    return undefined
  }
}

/** An RFC 3339 date-time in UTC (`2030-11-01T14:00:00Z`), as ms since the epoch. */
function instantOf(value: unknown, what: string): number {
  const at = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(value) ? Date.parse(value) : Number.NaN
  if (Number.isNaN(at)) throw new Error(`${what} must be a UTC date-time written YYYY-MM-DDTHH:MM:SSZ, not ${JSON.stringify(value)}`)
  return at
}

/** An RFC 3339 full-date (`2030-12-05`), as midnight UTC. */
function dateOf(value: unknown, what: string): Date {
  const date = new Date(`${String(value)}T00:00:00Z`)
  // the round trip rejects other shapes and impossible days (2030-02-31)
  if (Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value) {
    throw new Error(`${what} must be a date written YYYY-MM-DD, not ${JSON.stringify(value)}`)
  }
  return date
}
