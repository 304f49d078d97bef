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
import { deref } from '../src/contract/pointer.js'
import { build } from './helpers/app.js'
import { everyRole, examplesOrder, sendStep } from './helpers/examples.js'

/** A value as the examples can show it: a date-time is the time of the run, left out. */
const withoutTimes = (value: unknown) =>
  JSON.parse(JSON.stringify(value, (_, item) => (typeof item === 'string' && /^[0-9]{4}-[0-9]{2}-[0-9]{2}T/.test(item) ? undefined : item)))

for (const contract of loadContracts()) {
  const { document } = contract
  t.test(`the examples of ${contract.file} run in the order it states, on a fresh store`, async (t) => {
    t.match(
      document.info.description,
      /## Examples\s+The examples of the operations run in order on a fresh store[^#]*`x-examples-order`/,
      'the description says how',
    )
    const order = examplesOrder(contract)
    if (order === undefined) return t.fail('x-examples-order lists the operations whose examples run, each an operationId or `operationId: [names]`')
    t.strictSame(
      order.filter(({ id }) => !contract.operations.has(id)),
      [],
      'x-examples-order names operations of the document',
    )
    const app = await build(t, { API_KEYS: [everyRole(contract)] })
    for (const step of order) {
      const operation = contract.operations.get(step.id)!
      const [status, documented] = Object.entries(operation.definition.responses).find(([code]) => code.startsWith('2'))!
      const response = deref<OpenAPIV3.ResponseObject>(document, documented)
      const answers = await sendStep(t, app, contract, step)
      if (step.names !== undefined) t.equal(answers.length, step.names.length, `${step.id}: the examples it names are its own`)
      for (const [i, { name, answer }] of answers.entries()) {
        t.equal(answer.status, Number(status), `${step.id}${operation.takesBody ? ` (${name})` : ''}: ${status}`)
        if (i > 0) continue
        t.strictSame(withoutTimes(answer.json), withoutTimes(response.content!['application/json']!.example), `${step.id} answers its example`)
        const location = response.headers?.Location
        if (location !== undefined)
          t.equal(answer.headers.location, deref<OpenAPIV3.HeaderObject>(document, location).example, `${step.id}: its Location's example`)
      }
    }
  })
}
