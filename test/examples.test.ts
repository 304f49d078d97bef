/**
 * The examples of every served document run as the document says (info.description, "##
 * Examples"): on a fresh store, with one key holding every role, in the order of its
 * `x-examples-order`, as a contract-test generator would run them. Each operation listed sends
 * its request examples in turn, as they are (a path parameter is its schema's example); each
 * succeeds, and the answer to the first is the example of the operation's success response, its
 * Location included (times aside: they are those of the run).
 */
import type { OpenAPIV3 } from 'openapi-types'
import t from 'tap'
import { loadContracts } from '../src/contract/load.js'
import type { Contract, Operation } from '../src/contract/model.js'
import { deref } from '../src/contract/pointer.js'
import { build, call, testKey } from './helpers/app.js'
import { requestExamples } from './helpers/spec.js'

/** A value as the examples can show it: a date-time is the time of the run, left out. */
const withoutTimes = (value: unknown) =>
  JSON.parse(JSON.stringify(value, (_, item) => (typeof item === 'string' && /^[0-9]{4}-[0-9]{2}-[0-9]{2}T/.test(item) ? undefined : item)))

/** One step of the examples: an operation, and the names of the request examples it sends
 * (undefined: every one). */
interface Step {
  id: string
  names?: string[]
}

/** The steps of the document's `x-examples-order`: an operationId, or `operationId: [names]`;
 * undefined when it has none that reads so. */
function examplesOrder({ document }: Contract): Step[] | undefined {
  const order = (document as { 'x-examples-order'?: unknown })['x-examples-order']
  if (!Array.isArray(order) || order.length === 0) return undefined
  const steps = order.map((entry): Step | undefined => {
    if (typeof entry === 'string') return { id: entry }
    const [named, ...more] = Object.entries(entry ?? {})
    const [id, names] = named ?? []
    return more.length === 0 && Array.isArray(names) && names.every((name) => typeof name === 'string') ? { id: id!, names } : undefined
  })
  return steps.every((step) => step !== undefined) ? steps : undefined
}

/** An operation's path parameters, each its schema's example. */
function pathExamples({ document }: Contract, operation: Operation): Record<string, string | number> {
  const inPath = operation.parameters.filter((parameter) => parameter.in === 'path')
  return Object.fromEntries(inPath.map(({ name, schema }) => [name, deref<OpenAPIV3.SchemaObject>(document, schema!).example as string | number]))
}

for (const contract of loadContracts()) {
  const { document } = contract
  t.test(`the examples of ${contract.file} run in the order it states, on a fresh store`, async (t) => {
    t.match(document.info.description, /## Examples\s+The examples of the operations run in order on a fresh store[^#]*`x-examples-order`/, 'the description says how')
    const order = examplesOrder(contract)
    if (order === undefined) return t.fail('x-examples-order lists the operations whose examples run, each an operationId or `operationId: [names]`')
    t.strictSame(order.filter(({ id }) => !contract.operations.has(id)), [], 'x-examples-order names operations of the document')
    const app = await build(t, { API_KEYS: [`${testKey}:${[...contract.roles.roles.keys()].join('+')}`] })
    for (const { id, names } of order) {
      const operation = contract.operations.get(id)!
      const url = contract.urlOf(id, pathExamples(contract, operation))
      const [status, documented] = Object.entries(operation.definition.responses).find(([code]) => code.startsWith('2'))!
      const response = deref<OpenAPIV3.ResponseObject>(document, documented)
      const examples = operation.takesBody ? requestExamples(contract, id) : [{ name: 'none', value: undefined }]
      const sent = names === undefined ? examples : examples.filter(({ name }) => names.includes(name))
      if (names !== undefined) t.equal(sent.length, names.length, `${id}: the examples it names are its own`)
      for (const [i, { name, value }] of sent.entries()) {
        const answer = await call(t, app, { method: operation.method as 'GET', url, ...(value !== undefined && { payload: value as object }) })
        t.equal(answer.status, Number(status), `${id}${operation.takesBody ? ` (${name})` : ''}: ${status}`)
        if (i > 0) continue
        t.strictSame(withoutTimes(answer.json), withoutTimes(response.content!['application/json']!.example), `${id} answers its example`)
        const location = response.headers?.Location
        if (location !== undefined) t.equal(answer.headers.location, deref<OpenAPIV3.HeaderObject>(document, location).example, `${id}: its Location's example`)
      }
    }
  })
}
