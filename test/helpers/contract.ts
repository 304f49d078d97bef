/**
 * The contract, checked from the outside: every response a test receives is compared with
 * openapi.yaml (documented status, media type, body schema, documented headers, each header's
 * value against its schema). Schemas are compiled here from the YAML itself, independently of
 * generated/.
 */
import { Ajv } from 'ajv'
import formats from 'ajv-formats'
import type { OpenAPIV3 } from 'openapi-types'
import { loadContract } from '../../src/contract/load.js'
import { type Operation } from '../../src/contract/model.js'
import { deref } from '../../src/contract/pointer.js'

const contract = loadContract()
const { document, basePath } = contract

const ajv = new Ajv({ strict: false, allErrors: true })
formats.default(ajv)
ajv.addSchema(document as object, 'openapi')

/** Headers any HTTP response may carry without the spec naming them. */
const transportHeaders = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding'])

export interface ObservedResponse {
  method: string
  /** the request path, query string allowed */
  url: string
  status: number
  headers: Record<string, string | string[] | number | undefined>
  body: string
}

const pointer = (...keys: string[]) => keys.map((key) => key.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')

/** The operation of the spec that serves this method and path, if any. HEAD is served as GET,
 * without the body. */
export function operationFor(method: string, url: string): Operation | undefined {
  const served = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase()
  const path = url.split('?')[0]!
  if (!path.startsWith(`${basePath}/`)) return undefined
  const relative = path.slice(basePath.length)
  return [...contract.operations.values()].find(
    (operation) =>
      operation.method === served &&
      new RegExp(`^${operation.path.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(relative),
  )
}

/** What is wrong with a response, in words; empty when it keeps the contract. */
export function contractViolations(response: ObservedResponse): string[] {
  const operation = operationFor(response.method, response.url)
  if (operation === undefined) {
    // Not an operation (the documentation, or a path the spec lacks): errors still take the Error shape.
    return response.status >= 400 && response.method.toUpperCase() !== 'HEAD'
      ? bodyViolations(response, '#/components/schemas/Error')
      : []
  }
  const problems: string[] = []
  const responses = operation.definition.responses
  let location = `#/${pointer('paths', operation.path, operation.method.toLowerCase(), 'responses', String(response.status))}`
  const documented = responses[String(response.status)]
  if (documented === undefined) return [`${operation.id} does not document status ${response.status}`]
  if ('$ref' in documented) location = documented.$ref
  const definition = deref<OpenAPIV3.ResponseObject>(document, documented)

  for (const [name, header] of Object.entries(definition.headers ?? {})) {
    const value = response.headers[name.toLowerCase()]
    if (value === undefined) {
      if (deref<OpenAPIV3.HeaderObject>(document, header).required) problems.push(`header ${name} is documented as required but missing`)
      continue
    }
    const schemaPointer = `${'$ref' in header ? header.$ref : `${location}/headers/${pointer(name)}`}/schema`
    problems.push(...headerViolations(name, value, schemaPointer))
  }
  const documentedHeaders = new Set(Object.keys(definition.headers ?? {}).map((name) => name.toLowerCase()))
  for (const name of Object.keys(response.headers)) {
    if (!transportHeaders.has(name) && !documentedHeaders.has(name)) problems.push(`header ${name} is not documented`)
  }

  if (response.method.toUpperCase() === 'HEAD') return problems
  // a response documented without content (204) has none
  if (definition.content === undefined) return response.body === '' ? problems : [...problems, `body ${response.body.slice(0, 100)} where none is documented`]
  const mediaTypes = Object.keys(definition.content ?? {})
  const mediaType = String(response.headers['content-type'] ?? '').split(';')[0]!
  if (!mediaTypes.includes(mediaType)) return [...problems, `media type ${mediaType} is not one of ${mediaTypes.join(', ')}`]
  return [...problems, ...bodyViolations(response, `${location}/content/${pointer(mediaType)}/schema`)]
}

/** What is wrong with a header's value, as its schema sees it: the text, or the number or
 * boolean it spells when the schema's type is one (a header is text on the wire). */
function headerViolations(name: string, value: string | string[] | number, schemaPointer: string): string[] {
  const validate = ajv.getSchema(`openapi${schemaPointer}`)!
  const text = Array.isArray(value) ? value.join(', ') : String(value)
  const { type } = deref<OpenAPIV3.SchemaObject>(document, validate.schema as OpenAPIV3.SchemaObject)
  const typed = (type === 'integer' || type === 'number') && /^-?[0-9]+(\.[0-9]+)?$/.test(text) ? Number(text) : type === 'boolean' && /^(true|false)$/.test(text) ? text === 'true' : text
  return validate(typed) ? [] : (validate.errors ?? []).map((error) => `header ${name} ${JSON.stringify(text)} ${error.message}`)
}

function bodyViolations(response: ObservedResponse, schemaPointer: string): string[] {
  let body: unknown
  try {
    body = JSON.parse(response.body)
  } catch {
    return [`body is not JSON: ${response.body.slice(0, 100)}`]
  }
  const validate = ajv.getSchema(`openapi${schemaPointer}`)!
  const problems = validate(body) ? [] : (validate.errors ?? []).map((error) => `body${error.instancePath} ${error.message}`)
  if (response.status >= 400 && (body as { status?: unknown }).status !== response.status) {
    problems.push(`Error.status ${(body as { status?: unknown }).status} differs from the HTTP status ${response.status}`)
  }
  return problems
}

/** What is wrong with an event's body, in words, against the `webhooks` entry of its `type`;
 * empty when it is exactly what openapi.yaml declares. */
export function webhookViolations(body: unknown): string[] {
  const type = (body as { type?: unknown }).type
  const entry = (document as { webhooks?: Record<string, { post: OpenAPIV3.OperationObject }> }).webhooks?.[String(type)]
  if (entry === undefined) return [`type ${JSON.stringify(type)} is not an event of openapi.yaml's webhooks`]
  const schema = deref<OpenAPIV3.RequestBodyObject>(document, entry.post.requestBody!).content['application/json']!.schema as OpenAPIV3.ReferenceObject
  const validate = ajv.getSchema(`openapi${schema.$ref}`)!
  return validate(body) ? [] : (validate.errors ?? []).map((error) => `event${error.instancePath} ${error.message}`)
}
