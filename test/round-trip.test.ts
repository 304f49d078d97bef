/**
 * Every optional property of every request schema makes its round trip, in every served version:
 * sent (the operation's first request example, with the property set), it is answered as sent,
 * wherever the operation's answer shows it. The store is first brought to where the operation's
 * examples run (the document's `x-examples-order`, up to the operation), so that the request
 * succeeds. The properties are read from the spec: one it adds is sent with nothing written here.
 */
import type { OpenAPIV3 } from 'openapi-types'
import t from 'tap'
import { loadContracts } from '../src/contract/load.js'
import type { Contract, Operation } from '../src/contract/model.js'
import { deref, resolvePointer } from '../src/contract/pointer.js'
import { build, call } from './helpers/app.js'
import { everyRole, examplesOrder, pathExamples, sendStep } from './helpers/examples.js'
import { requestExamples } from './helpers/spec.js'

type Schema = OpenAPIV3.SchemaObject

/** The JSON schema of a request body or a response, its `$ref`s followed. */
const jsonSchema = (document: OpenAPIV3.Document, node: OpenAPIV3.RequestBodyObject | OpenAPIV3.ResponseObject | OpenAPIV3.ReferenceObject) => {
  const schema = deref<{ content?: Record<string, OpenAPIV3.MediaTypeObject> }>(document, node).content?.['application/json']?.schema
  return schema === undefined ? undefined : deref<Schema>(document, schema)
}

/** A value for a property that is not the one the server would take without it: a value of its
 * enum other than its default, else its example; read through its `$ref`s and `allOf`s, one at a
 * time (a default may sit beside them). */
function valueOf(document: OpenAPIV3.Document, node: unknown, defaulted?: unknown): unknown {
  const schema = (node ?? {}) as Schema & { $ref?: string }
  const given = defaulted ?? schema.default
  const other = schema.enum?.find((value) => value !== given)
  if (other !== undefined) return other
  if (schema.example !== undefined) return schema.example
  const inner = [...(schema.$ref === undefined ? [] : [resolvePointer(document, schema.$ref)]), ...(schema.allOf ?? [])]
  return inner.map((next) => valueOf(document, next, given)).find((value) => value !== undefined)
}

/** Each optional property of an operation's request body that its success answer shows. */
function roundTrips(contract: Contract, operation: Operation): { property: string; status: string }[] {
  const body = jsonSchema(contract.document, operation.definition.requestBody!)!
  const [status, response] = Object.entries(operation.definition.responses).find(([code]) => code.startsWith('2'))!
  const shown = Object.keys(jsonSchema(contract.document, response)?.properties ?? {})
  return Object.keys(body.properties ?? {})
    .filter((property) => !(body.required ?? []).includes(property) && shown.includes(property))
    .map((property) => ({ property, status }))
}

for (const contract of loadContracts()) {
  const order = examplesOrder(contract)!
  for (const operation of [...contract.operations.values()].filter(({ takesBody }) => takesBody)) {
    for (const { property, status } of roundTrips(contract, operation)) {
      t.test(`${contract.file}: ${operation.id} takes its optional ${property} and answers it as sent`, async (t) => {
        const body = jsonSchema(contract.document, operation.definition.requestBody!)!
        const value = valueOf(contract.document, body.properties![property]!)
        if (value === undefined) return t.fail(`${operation.id}'s ${property} has neither an example nor an enum: give it an example (this test sends it)`)
        const app = await build(t, { API_KEYS: [everyRole(contract)] })
        // what the operation needs (a category, a pet...): the examples that run before it
        for (const step of order.slice(
          0,
          order.findIndex(({ id }) => id === operation.id),
        ))
          await sendStep(t, app, contract, step)
        const [example] = requestExamples(contract, operation.id)
        const payload = { ...(example!.value as object), [property]: value }
        const answer = await call(t, app, { method: operation.method, url: contract.urlOf(operation.id, pathExamples(contract, operation)), payload })
        t.equal(answer.status, Number(status), `${operation.id}: ${status}`)
        t.strictSame(answer.json[property], value, `${property}: ${JSON.stringify(value)}, as sent`)
      })
    }
  }
}

t.test('a value other than the one the server would take without it', async (t) => {
  const document = {
    components: {
      schemas: {
        Status: { type: 'string', enum: ['available', 'sold'] },
        Named: { allOf: [{ $ref: '#/components/schemas/Status' }], default: 'available' },
        Free: { type: 'string' },
      },
    },
  } as unknown as OpenAPIV3.Document
  t.equal(valueOf(document, { $ref: '#/components/schemas/Named' }), 'sold', 'through its $refs, not the default beside one')
  t.equal(valueOf(document, { type: 'string', example: 'calm' }), 'calm', 'its example')
  t.equal(valueOf(document, { $ref: '#/components/schemas/Free' }), undefined, 'nothing to send')
  t.equal(valueOf(document, undefined), undefined, 'no schema at all')
})
