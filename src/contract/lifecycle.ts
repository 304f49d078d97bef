import type { Contract, Operation } from './spec.js'

/** Stability markers an operation may carry (`x-stability`); none means stable. */
const stabilities = new Set(['experimental', 'beta'])

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

/** An RFC 3339 full-date (`2030-12-05`), as midnight UTC. */
function dateOf(value: unknown, what: string): Date {
  const date = new Date(`${String(value)}T00:00:00Z`)
  // the round trip rejects other shapes and impossible days (2030-02-31)
  if (Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value) {
    throw new Error(`${what} must be a date written YYYY-MM-DD, not ${JSON.stringify(value)}`)
  }
  return date
}
