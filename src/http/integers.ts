import type { FastifyRequest } from 'fastify'
import type { Operation } from '../contract/model.js'

/** How an integer parameter must be written: decimal digits, no sign, no leading zero. */
const decimal = /^(0|[1-9][0-9]*)$/

/**
 * Reads the integer parameters of a request from their text, strictly: `limit=20` is 20, but
 * `1e2`, `0x10`, `+5`, ` 5`, `007`, `20.0` and `Infinity` stay text, which the generated
 * validator (type coercion off) refuses as "must be integer", naming the parameter. Range
 * checks then see the real number: a 309-digit id is over its maximum, not Infinity.
 * Undefined when the operation has no integer parameter. Called once the request is admitted
 * (the path and query are read as it arrives), before validation.
 */
export function strictIntegers({ integerParameters: { query, path } }: Operation): ((request: FastifyRequest) => void) | undefined {
  if (query.length + path.length === 0) return undefined
  const read = (values: Record<string, unknown>, names: readonly string[]) => {
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
