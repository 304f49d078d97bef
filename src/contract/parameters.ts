import type { FastifyRequest } from 'fastify'
import type { OpenAPIV3 } from 'openapi-types'
import { type Contract, deref, type Operation } from './spec.js'

/** How an integer parameter must be written: decimal digits, no sign, no leading zero. */
const decimal = /^(0|[1-9][0-9]*)$/

type Location = 'query' | 'path'

/** The parameters of an operation, its path's included, as the spec declares them. */
export function parametersOf(operation: Operation, { document }: Contract): OpenAPIV3.ParameterObject[] {
  const pathItem = document.paths[operation.path]!
  return [...(pathItem.parameters ?? []), ...(operation.definition.parameters ?? [])].map((reference) =>
    deref<OpenAPIV3.ParameterObject>(document, reference),
  )
}

/** The integer parameters of an operation, by where they are sent, from the spec. */
export function integerParameters(operation: Operation, contract: Contract): Record<Location, string[]> {
  const { document } = contract
  const found: Record<Location, string[]> = { query: [], path: [] }
  for (const parameter of parametersOf(operation, contract)) {
    const schema = parameter.schema && deref<OpenAPIV3.SchemaObject>(document, parameter.schema)
    if (schema?.type === 'integer' && (parameter.in === 'query' || parameter.in === 'path')) found[parameter.in].push(parameter.name)
  }
  return found
}

/**
 * Reads the integer parameters of a request from their text, strictly: `limit=20` is 20, but
 * `1e2`, `0x10`, `+5`, ` 5`, `007`, `20.0` and `Infinity` stay text, which the generated
 * validator (type coercion off) refuses as "must be integer", naming the parameter. Range
 * checks then see the real number: a 309-digit id is over its maximum, not Infinity.
 * Undefined when the operation has no integer parameter. Called once the request is admitted
 * (the path and query are read as it arrives), before validation.
 */
export function strictIntegers({ query, path }: Record<Location, string[]>): ((request: FastifyRequest) => void) | undefined {
  if (query.length + path.length === 0) return undefined
  const read = (values: Record<string, unknown>, names: string[]) => {
    for (const name of names) {
      const text = values[name]
      if (typeof text === 'string' && decimal.test(text)) values[name] = Number(text)
    }
  }
  return (request) => {
    read(request.query as Record<string, unknown>, query)
    read(request.params as Record<string, unknown>, path)
  }
}
