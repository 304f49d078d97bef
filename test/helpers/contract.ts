/**
 * The contract, checked from the outside: every response a test receives is compared with the
 * document the app serves (documented status, media type, body schema, documented headers, each
 * header's value against its schema), and every webhook delivery with that document's `webhooks`
 * (media type, body schema, header parameters). Schemas are compiled here from the document
 * itself, independently of generated/, in OpenAPI 3.1's dialect (JSON Schema 2020-12) with Ajv
 * in strict mode: once per document, each schema when it is first needed.
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { ValidateFunction } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import formats from 'ajv-formats'
import type { OpenAPIV3 } from 'openapi-types'
import { loadContracts } from '../../src/contract/load.js'
import type { Contract, Operation } from '../../src/contract/model.js'
import { deref } from '../../src/contract/pointer.js'
import { openapiKeywords } from '../../src/http/compilers.js'

/** What the checker reads of a served contract (an app's `app.contract`). */
export type ServedContract = Pick<Contract, 'document' | 'basePath' | 'operations'>

let everyServed: readonly ServedContract[] | undefined
/** Every document a server serves unless it is given others (openapi.yaml, and each older major by its overlay),
 * oldest first. */
const servedByDefault = () => (everyServed ??= loadContracts())

/** Headers any HTTP response may carry without the spec naming them. */
const transportHeaders = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding'])

type Headers = Record<string, string | string[] | number | undefined>

export interface ObservedResponse {
  method: string
  /** the request path, query string allowed */
  url: string
  status: number
  headers: Headers
  body: string
}

/** A webhook delivery as its receiver got it. */
export interface ObservedDelivery {
  headers: IncomingHttpHeaders
  body: string
}

const pointer = (...keys: string[]) => keys.map((key) => key.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')

/** One served document's schemas, compiled with its own keywords, and its operations' paths. */
interface Checker {
  document: OpenAPIV3.Document
  /** the validator of the schema at a JSON pointer of the document (`#/components/schemas/Pet`) */
  validator(schemaPointer: string): ValidateFunction
  /** where the document holds a schema: every component schema and every `schema` of a
   * parameter, header or media type */
  schemaPointers: string[]
  /** the operation that serves this method and path, if any (HEAD as GET) */
  operationFor(method: string, url: string): Operation | undefined
}

const checkers = new WeakMap<object, Checker>()

function checkerOf(served: ServedContract): Checker {
  let checker = checkers.get(served.document)
  if (checker === undefined) checkers.set(served.document, (checker = compile(served)))
  return checker
}

function compile({ document, basePath, operations }: ServedContract): Checker {
  const ajv = new Ajv2020({ strict: true, allErrors: true, keywords: openapiKeywords(document) })
  formats.default(ajv)
  // The document is no schema (strict mode refuses `openapi`, `paths`…): each schema in it is
  // added under its own pointer, so that a `$ref: '#/components/…'` finds it by that name.
  const schemaPointers: string[] = []
  const addSchemas = (node: unknown, at: string) => {
    for (const [key, value] of Object.entries(node as object)) {
      const location = `${at}/${pointer(key)}`
      if (key === 'schema' || at === '#/components/schemas') {
        ajv.addSchema(value as object, `openapi${location}`)
        schemaPointers.push(location)
      } else if (typeof value === 'object' && value !== null) addSchemas(value, location)
    }
  }
  addSchemas(document, '#')
  const routes = [...operations.values()].map((operation) => ({
    operation,
    pattern: new RegExp(`^${basePath}${operation.path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }))
  return {
    document,
    validator: (schemaPointer) => ajv.getSchema(`openapi${schemaPointer}`)!,
    schemaPointers,
    operationFor(method, url) {
      const served = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase()
      const path = url.split('?')[0]!
      return routes.find(({ operation, pattern }) => operation.method === served && pattern.test(path))?.operation
    },
  }
}

/** Compiles every schema of the contracts `served` (every served one unless told; strict mode
 * throws at the first it refuses), not only those the tests' answers need; says where they are. */
export function compileEverySchema(served: ServedContract | readonly ServedContract[] = servedByDefault()): string[] {
  return listOf(served).flatMap((contract) => {
    const checker = checkerOf(contract)
    for (const schemaPointer of checker.schemaPointers) checker.validator(schemaPointer)
    return checker.schemaPointers
  })
}

const listOf = (served: ServedContract | readonly ServedContract[]): readonly ServedContract[] => (Array.isArray(served) ? served : [served as ServedContract])

/** What is wrong with a response, in words, against the contract it was made through: of those
 * `served` (every served one unless told), the one under whose base path the request was, or
 * the newest (a path under none); empty when it keeps it. */
export function contractViolations(response: ObservedResponse, served: ServedContract | readonly ServedContract[] = servedByDefault()): string[] {
  const path = response.url.split('?')[0]!
  const contracts = listOf(served)
  const checker = checkerOf(contracts.find(({ basePath }) => path.startsWith(`${basePath}/`)) ?? contracts.at(-1)!)
  const { document } = checker
  const operation = checker.operationFor(response.method, response.url)
  if (operation === undefined) {
    // Not an operation (the documentation, or a path the spec lacks): errors still take the Error shape.
    return response.status >= 400 && response.method.toUpperCase() !== 'HEAD' ? bodyViolations(checker, response, '#/components/schemas/Error') : []
  }
  const problems: string[] = []
  const responses = operation.definition.responses
  let location = `#/${pointer('paths', operation.path, operation.method.toLowerCase(), 'responses', String(response.status))}`
  const documented = responses[String(response.status)]
  if (documented === undefined) return [`${operation.id} does not document status ${response.status}`]
  if ('$ref' in documented) location = documented.$ref
  const definition = deref<OpenAPIV3.ResponseObject>(document, documented)

  for (const [name, header] of Object.entries(definition.headers ?? {})) {
    const schemaPointer = `${'$ref' in header ? header.$ref : `${location}/headers/${pointer(name)}`}/schema`
    problems.push(...headerViolations(checker, name, response.headers[name.toLowerCase()], deref(document, header), schemaPointer))
  }
  const documentedHeaders = new Set(Object.keys(definition.headers ?? {}).map((name) => name.toLowerCase()))
  for (const name of Object.keys(response.headers)) {
    if (!transportHeaders.has(name) && !documentedHeaders.has(name)) problems.push(`header ${name} is not documented`)
  }

  if (response.method.toUpperCase() === 'HEAD') return problems
  // a response documented without content (204) has none
  if (definition.content === undefined) return response.body === '' ? problems : [...problems, `body ${response.body.slice(0, 100)} where none is documented`]
  const mediaType = mediaTypeOf(response.headers, Object.keys(definition.content))
  if (typeof mediaType !== 'string') return [...problems, mediaType.problem]
  return [...problems, ...bodyViolations(checker, response, `${location}/content/${pointer(mediaType)}/schema`)]
}

/** The media type of a message's Content-Type, when it is one of those documented. */
function mediaTypeOf(headers: Headers, documented: string[]): string | { problem: string } {
  const mediaType = String(headers['content-type'] ?? '').split(';')[0]!
  return documented.includes(mediaType) ? mediaType : { problem: `media type ${mediaType} is not one of ${documented.join(', ')}` }
}

/** What is wrong with a header, as its definition sees it: missing when required, or a value
 * its schema refuses. The value is the text, or the number or boolean it spells when the
 * schema's type is one (a header is text on the wire). */
function headerViolations(checker: Checker, name: string, value: Headers[string], { required }: OpenAPIV3.HeaderObject, schemaPointer: string): string[] {
  if (value === undefined) return required ? [`header ${name} is documented as required but missing`] : []
  const validate = checker.validator(schemaPointer)
  const text = Array.isArray(value) ? value.join(', ') : String(value)
  const { type } = deref<OpenAPIV3.SchemaObject>(checker.document, validate.schema as OpenAPIV3.SchemaObject)
  const typed =
    (type === 'integer' || type === 'number') && /^-?[0-9]+(\.[0-9]+)?$/.test(text)
      ? Number(text)
      : type === 'boolean' && /^(true|false)$/.test(text)
        ? text === 'true'
        : text
  return validate(typed) ? [] : (validate.errors ?? []).map((error) => `header ${name} ${JSON.stringify(text)} ${error.message}`)
}

function bodyViolations(checker: Checker, response: ObservedResponse, schemaPointer: string): string[] {
  let body: unknown
  try {
    body = JSON.parse(response.body)
  } catch {
    return [`body is not JSON: ${response.body.slice(0, 100)}`]
  }
  const validate = checker.validator(schemaPointer)
  const problems = validate(body) ? [] : (validate.errors ?? []).map((error) => `body${error.instancePath} ${error.message}`)
  if (response.status >= 400 && (body as { status?: unknown }).status !== response.status) {
    problems.push(`Error.status ${String((body as { status?: unknown }).status)} differs from the HTTP status ${response.status}`)
  }
  return problems
}

/** What is wrong with a webhook delivery, in words, against the `webhooks` entry of its event's
 * `type` in the contract it was made for: its media type, its body, and each header the entry
 * declares as a parameter. Empty when it is exactly what the entry declares. A delivery does not
 * say the version of its subscription: given several contracts (every served one unless told),
 * it keeps the contract when it keeps one of them, and is told what breaks the one it is nearest
 * (the fewest problems; the newest of equals). */
export function deliveryViolations(delivery: ObservedDelivery, served: ServedContract | readonly ServedContract[] = servedByDefault()): string[] {
  let nearest: string[] | undefined
  for (const contract of [...listOf(served)].reverse()) {
    const problems = violationsOfDelivery(delivery, contract)
    if (problems.length === 0) return problems
    if (nearest === undefined || problems.length < nearest.length) nearest = problems
  }
  return nearest!
}

function violationsOfDelivery(delivery: ObservedDelivery, served: ServedContract): string[] {
  const checker = checkerOf(served)
  const { document } = checker
  let event: { type?: unknown }
  try {
    event = JSON.parse(delivery.body)
  } catch {
    return [`event is not JSON: ${delivery.body.slice(0, 100)}`]
  }
  const type = String(event?.type)
  const webhooks = (document as { webhooks?: Record<string, { post?: OpenAPIV3.OperationObject }> }).webhooks
  const entry = webhooks?.[type]?.post
  if (entry?.requestBody === undefined) return [`type ${JSON.stringify(event?.type)} is not an event of the document's webhooks`]
  const location = `#/${pointer('webhooks', type, 'post')}`
  const problems: string[] = []
  for (const [index, parameter] of (entry.parameters ?? []).entries()) {
    const definition = deref<OpenAPIV3.ParameterObject>(document, parameter)
    if (definition.in !== 'header') continue
    const schemaPointer = `${'$ref' in parameter ? parameter.$ref : `${location}/parameters/${index}`}/schema`
    problems.push(...headerViolations(checker, definition.name, delivery.headers[definition.name.toLowerCase()], definition, schemaPointer))
  }
  const bodyLocation = '$ref' in entry.requestBody ? entry.requestBody.$ref : `${location}/requestBody`
  const mediaType = mediaTypeOf(delivery.headers, Object.keys(deref<OpenAPIV3.RequestBodyObject>(document, entry.requestBody).content))
  if (typeof mediaType !== 'string') return [...problems, mediaType.problem]
  const validate = checker.validator(`${bodyLocation}/content/${pointer(mediaType)}/schema`)
  return validate(event) ? problems : [...problems, ...(validate.errors ?? []).map((error) => `event${error.instancePath} ${error.message}`)]
}
