/**
 * The examples of a served document as it says they run (its `x-examples-order`, info.description
 * "## Examples"): on a fresh store, with one key holding every role, each listed operation
 * sending its request examples in turn (a path parameter is its schema's example).
 */
import type { OpenAPIV3 } from 'openapi-types'
import type { Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import type { Contract, Operation } from '../../src/contract/model.js'
import { deref } from '../../src/contract/pointer.js'
import { call, type CallResult, testKey } from './app.js'
import { requestExamples } from './spec.js'

/** One step of the examples: an operation, and the names of the request examples it sends
 * (undefined: every one). */
export interface Step {
  id: string
  names?: string[]
}

/** The steps of the document's `x-examples-order`: an operationId, or `operationId: [names]`;
 * undefined when it has none that reads so. */
export function examplesOrder({ document }: Contract): Step[] | undefined {
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
export function pathExamples({ document }: Contract, operation: Operation): Record<string, string | number> {
  const inPath = operation.parameters.filter((parameter) => parameter.in === 'path')
  return Object.fromEntries(inPath.map(({ name, schema }) => [name, deref<OpenAPIV3.SchemaObject>(document, schema!).example as string | number]))
}

/** The API_KEYS entry of a key holding every role of the contract. */
export const everyRole = (contract: Contract) => `${testKey}:${[...contract.roles.roles.keys()].join('+')}`

/** Sends one step's examples, in turn; each answer, with the example it answers. */
export async function sendStep(t: Test, app: FastifyInstance, contract: Contract, { id, names }: Step): Promise<{ name: string; answer: CallResult }[]> {
  const operation = contract.operations.get(id)!
  const url = contract.urlOf(id, pathExamples(contract, operation))
  const examples = operation.takesBody ? requestExamples(contract, id) : [{ name: 'none', value: undefined }]
  const sent = names === undefined ? examples : examples.filter(({ name }) => names.includes(name))
  const answers: { name: string; answer: CallResult }[] = []
  for (const { name, value } of sent) {
    answers.push({ name, answer: await call(t, app, { method: operation.method, url, ...(value !== undefined && { payload: value as object }) }) })
  }
  return answers
}
