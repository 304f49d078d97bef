/**
 * The contract model: an OpenAPI document read once into the answers every part of the service
 * asks of it (operations and their URLs, roles, lifecycles, events, limits, paths), with every
 * rule the server holds a document to. It is a value, one per document, and knows nothing of
 * Fastify or of files: the server, the scripts, the lint (through generated/contract-rules.js)
 * and the tests all read a document through it, so a rule is written once and a document is
 * refused everywhere with the same words.
 */
import type { OpenAPIV3 } from 'openapi-types'
import { answeredOutsideOperations } from '../core/errors.js'
import { type Lifecycle, lifecycleLink, readLifecycle } from './lifecycle.js'
import { deref, keysOf, pointerTo } from './pointer.js'
import { type Problem, Problems } from './problems.js'
import { bearerScheme, type RoleCatalogue, type RoleRequirement, readCatalogue, readEventRoles, readRequirement } from './roles.js'
import { readService, type Service } from './service.js'
import { readUniqueness, type Uniqueness } from './uniqueness.js'
import { parseVersion, type Version } from './version.js'

/** An operation's or event's object as written in the spec, with its `x-*` extensions. */
export type OperationDefinition = OpenAPIV3.OperationObject & { [extension: `x-${string}`]: unknown }

type Location = 'query' | 'path'

export interface Operation {
  id: string
  /** HTTP method, upper case */
  method: string
  /** the path template as written in the spec, e.g. `/pets/{petId}` */
  path: string
  /** where it is in the document: `#/paths/~1pets/get` */
  pointer: string
  definition: OperationDefinition
  lifecycle: Lifecycle
  /** the roles its `security` asks of a bearer key; undefined when it needs no key */
  roles: RoleRequirement | undefined
  /** its parameters, its path's included */
  parameters: readonly OpenAPIV3.ParameterObject[]
  /** the names of its integer parameters, by where they are sent */
  integerParameters: Readonly<Record<Location, readonly string[]>>
  /** whether it takes a (JSON) request body */
  takesBody: boolean
  /** whether it answers a page of a list (keyset paging, src/http/pagination.ts): it takes `after` */
  paged: boolean
  /** the conditional requests it answers (RFC 9110 section 13), as its definition declares them */
  conditional: Conditional
  /** the error codes its documented answers name: each one's example `code`, and the codes its
   * description names as "code `x`" */
  errorCodes: ReadonlySet<string>
}

/** What an operation declares of conditional requests, each read from its definition. */
export interface Conditional {
  /** its 200 documents an `ETag`: the server tags each 200 it sends */
  tagged: boolean
  /** it takes `If-None-Match` and tags its 200 (and documents its 304): a read answered 304
   * when the tag matches */
  ifNoneMatch: boolean
  /** it takes `If-Match` (and documents its 412): a change made only when the tag matches */
  ifMatch: boolean
}

/** An event of the document's `webhooks`, which the service sends. */
export interface Event {
  type: string
  pointer: string
  definition: OperationDefinition
  lifecycle: Lifecycle
  /** the roles a key needs to receive it (`x-roles`) */
  roles: readonly string[]
}

export interface Contract {
  /** the file's name, as problems name it: `openapi.yaml` */
  file: string
  /** the text as written, served byte for byte (the document itself when read from an object) */
  source: string
  /** of an older major derived by its overlay: the version changes its actions name (`x-change`),
   * the code half of each breaking change whose contract half they are; undefined for a document
   * written whole (openapi.yaml) */
  overlayChanges?: readonly string[]
  document: OpenAPIV3.Document
  /** `info.version` */
  version: Version
  /** the path every server URL ends in (`/v1`), `/v` and the major version: every route's prefix */
  basePath: string
  operations: ReadonlyMap<string, Operation>
  events: ReadonlyMap<string, Event>
  roles: RoleCatalogue
  service: Service
  /** the roles a key needs to receive the event `type`; none for a type this document does not
   * declare (an event recorded before the document dropped it) */
  rolesOfEvent: (type: string) => readonly string[]
  /** the codes an Error body may carry (Error.code's x-extensible-enum) */
  errorCodes: readonly string[]
  /** the uniqueness rules of its schemas (x-unique): the differences each compares values without */
  uniqueness: Uniqueness
  /** the codes this version can send: those its operations name (errorCodes of each), and those
   * any path is answered with outside an operation (answeredOutsideOperations); what errorCodes
   * lists, and no more */
  codesSent: ReadonlySet<string>
  /** the methods served at a request path (`/v1/pets/7`), HEAD with GET; undefined for a path the spec lacks */
  methodsAt: (path: string) => string[] | undefined
  /** the operation that serves `method` at a request path (HEAD as GET), if any */
  operationAt: (method: string, path: string) => Operation | undefined
  /** where an operation is served: its path under the base path, with the values of its path
   * parameters (`urlOf('getPet', { petId: 7 })` is `/v1/pets/7`) */
  urlOf: (operationId: string, params?: Record<string, string | number>) => string
  /** the values of an operation's path parameters in a request path (`/v1/pets/7` of getPet:
   * `{petId: '7'}`), decoded; undefined when the path is not the operation's */
  pathParamsOf: (operation: Operation, requestPath: string) => Record<string, string> | undefined
  /** where a deprecated operation's successor does what it did: the successor's URL, its
   * `x-successor-parameters` given the request's values (`/v1/pets?id=7` for getPet's
   * `/v1/pets/7`; one the request lacks is left out); undefined when it names no successor */
  successorUrl: (operation: Operation, request?: RequestValues) => string | undefined
}

/** What a request sent, as a router reads it: its path parameters and its query. */
export interface RequestValues {
  params?: unknown
  query?: unknown
}

const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** A document read into its contract, with every problem found; the contract is as complete as
 * the problems let it be (a released document is read this way, under the rules of its day). */
export function readContract(
  document: OpenAPIV3.Document,
  { file = 'openapi.yaml', source, overlayChanges }: { file?: string; source?: string; overlayChanges?: readonly string[] } = {},
): { contract: Contract; problems: Problem[] } {
  const problems = new Problems()
  const version = parseVersion(document.info?.version)
  if (version === undefined)
    problems.add('version', ['info', 'version'], 'info.version', `info.version ${JSON.stringify(document.info?.version)} is not a version MAJOR.MINOR.PATCH`)
  const basePath = basePathOf(document, version, problems)
  const service = readService(document, basePath, problems)
  const roles = readCatalogue(document, problems)
  const operations = readOperations(document, roles, service, problems)
  const events = readEvents(document, roles, problems)
  checkSuccessors(operations, basePath, problems)
  const successorUrl = successorUrls(basePath, operations)
  checkLifecycleLinks(document, operations, basePath, service.paths.docs, successorUrl, problems)
  const uniqueness = readUniqueness(document, problems)
  const at = pathsOf(basePath, operations)
  const contract: Contract = {
    file,
    source: source ?? JSON.stringify(document),
    ...(overlayChanges === undefined ? {} : { overlayChanges }),
    document,
    version: version ?? [0, 0, 0],
    basePath,
    operations,
    events,
    roles,
    service,
    rolesOfEvent: (type) => events.get(type)?.roles ?? [],
    errorCodes: errorCodesOf(document),
    uniqueness,
    codesSent: new Set([...answeredOutsideOperations, ...[...operations.values()].flatMap(({ errorCodes }) => [...errorCodes])]),
    methodsAt: (path) => at(path)?.methods,
    operationAt: (method, path) => at(path)?.operations.get(method === 'HEAD' ? 'GET' : method),
    urlOf(operationId, params = {}) {
      const operation = operations.get(operationId)
      if (operation === undefined) throw new Error(`${file} has no operation ${operationId}`)
      const path = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
        if (params[name] === undefined) throw new Error(`${operationId}'s URL needs ${name}`)
        return encodeURIComponent(params[name])
      })
      return `${basePath}${path}`
    },
    pathParamsOf: (operation, requestPath) => pathParams(basePath, operation, requestPath),
    successorUrl,
  }
  return { contract, problems: problems.found }
}

/** The servers differ in host only: the path they share, `/v` and the major version of
 * `info.version`, is where the API is mounted. */
function basePathOf(document: OpenAPIV3.Document, version: Version | undefined, problems: Problems): string {
  const servers = document.servers ?? []
  const paths = new Set(servers.map(({ url }) => new URL(url, 'http://localhost').pathname.replace(/\/+$/, '')))
  if (paths.size !== 1) {
    problems.add('shape', ['servers'], 'servers', `every server URL must end in the same base path, found ${JSON.stringify([...paths])}`)
    return [...paths][0] ?? ''
  }
  const basePath = [...paths][0]!
  if (version !== undefined && !basePath.endsWith(`/v${version[0]}`)) {
    for (const { url } of servers) {
      problems.add(
        'version',
        ['servers'],
        'servers',
        `server ${url} must end in /v${version[0]}: the version segment is the major version of info.version ${document.info.version}`,
      )
    }
  }
  return basePath
}

function readOperations(document: OpenAPIV3.Document, catalogue: RoleCatalogue, service: Service, problems: Problems): Map<string, Operation> {
  const operations = new Map<string, Operation>()
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of methods) {
      const definition = (item as Record<string, OperationDefinition | undefined>)[method]
      if (definition === undefined) continue
      const at = ['paths', path, method]
      const id = definition.operationId
      if (id === undefined) {
        problems.add('shape', at, `${method.toUpperCase()} ${path}`, 'has no operationId')
        continue
      }
      const where = `operation ${id}`
      const parameters = [...(item?.parameters ?? []), ...(definition.parameters ?? [])].map((parameter) =>
        deref<OpenAPIV3.ParameterObject>(document, parameter),
      )
      const lifecycle = readLifecycle(definition, at, where, problems, service.noticeDays)
      if (lifecycle.deprecation !== undefined) checkRetirementDocumented(document, definition, at, where, problems)
      checkStabilityDocumented(document, definition, lifecycle.level !== 'stable', at, where, problems)
      operations.set(id, {
        id,
        method: method.toUpperCase(),
        path,
        pointer: pointerTo(at),
        definition,
        lifecycle,
        roles: requirementOf(document, definition, catalogue, at, where, problems),
        parameters,
        integerParameters: integersOf(document, parameters),
        takesBody: checkJsonOnly(document, definition, at, where, problems),
        paged: parameters.some((parameter) => parameter.in === 'query' && parameter.name === 'after'),
        conditional: readConditional(document, definition, parameters, at, where, problems),
        errorCodes: codesNamed(document, definition),
      })
    }
  }
  return operations
}

/** The roles an operation needs of a bearer key, or undefined when it needs no key. Any scheme
 * but an HTTP bearer one is one the server lacks. */
function requirementOf(
  document: OpenAPIV3.Document,
  definition: OperationDefinition,
  catalogue: RoleCatalogue,
  at: string[],
  where: string,
  problems: Problems,
): RoleRequirement | undefined {
  const security = definition.security ?? document.security ?? []
  if (security.length === 0 || security.some((requirement) => Object.keys(requirement).length === 0)) return undefined
  for (const name of security.flatMap(Object.keys)) {
    const scheme = document.components?.securitySchemes?.[name] as { type?: string; scheme?: string } | undefined
    if (name !== bearerScheme || scheme?.type !== 'http' || scheme.scheme?.toLowerCase() !== 'bearer') {
      problems.add(
        'roles',
        [...at, 'security'],
        where,
        `requires the security scheme ${name}, which this server does not implement (only ${bearerScheme}, HTTP bearer)`,
      )
    }
  }
  return readRequirement(security, catalogue, [...at, 'security'], where, problems)
}

function integersOf(document: OpenAPIV3.Document, parameters: readonly OpenAPIV3.ParameterObject[]): Record<Location, string[]> {
  const found: Record<Location, string[]> = { query: [], path: [] }
  for (const parameter of parameters) {
    const schema = parameter.schema && deref<OpenAPIV3.SchemaObject>(document, parameter.schema)
    if (schema?.type === 'integer' && (parameter.in === 'query' || parameter.in === 'path')) found[parameter.in].push(parameter.name)
  }
  return found
}

/**
 * The conditional requests an operation answers, from what it documents: an `ETag` on its 200,
 * the `If-None-Match` and `If-Match` header parameters. Each needs what the server then sends
 * documented: `If-None-Match` with a tagged 200 a 304, `If-Match` a 412.
 */
function readConditional(
  document: OpenAPIV3.Document,
  definition: OperationDefinition,
  parameters: readonly OpenAPIV3.ParameterObject[],
  at: string[],
  where: string,
  problems: Problems,
): Conditional {
  const responses = definition.responses ?? {}
  const ok = responses['200'] && deref<OpenAPIV3.ResponseObject>(document, responses['200'])
  const takes = (name: string) => parameters.some((parameter) => parameter.in === 'header' && parameter.name.toLowerCase() === name)
  const tagged = ok?.headers?.ETag !== undefined
  // (without a tag to compare, If-None-Match changes nothing: the server answers as without it)
  const conditional = { tagged, ifNoneMatch: tagged && takes('if-none-match'), ifMatch: takes('if-match') }
  if (conditional.ifNoneMatch && responses['304'] === undefined) {
    problems.add(
      'shape',
      [...at, 'responses'],
      where,
      "takes If-None-Match and tags its 200, so it documents its 304: add '304': $ref '#/components/responses/NotModified'",
    )
  }
  if (conditional.ifMatch && responses['412'] === undefined) {
    problems.add('shape', [...at, 'responses'], where, "takes If-Match, so it documents its 412: add '412': $ref '#/components/responses/PreconditionFailed'")
  }
  return conditional
}

/** The server reads JSON only, and answers JSON only: a body it takes is a required
 * application/json one, and every response with content is application/json. Whether it takes
 * a body. */
function checkJsonOnly(document: OpenAPIV3.Document, definition: OperationDefinition, at: string[], where: string, problems: Problems): boolean {
  const body = definition.requestBody && deref<OpenAPIV3.RequestBodyObject>(document, definition.requestBody)
  if (body !== undefined) {
    const mediaTypes = Object.keys(body.content ?? {}).join(', ')
    if (mediaTypes !== 'application/json' || body.required !== true)
      problems.add(
        'shape',
        [...at, 'requestBody'],
        where,
        `must require an application/json body (it takes ${mediaTypes || 'none'}${body.required === true ? '' : ', optionally'})`,
      )
  }
  for (const [status, response] of Object.entries(definition.responses ?? {})) {
    const content = deref<OpenAPIV3.ResponseObject>(document, response).content
    const mediaTypes = Object.keys(content ?? {}).join(', ')
    if (content !== undefined && mediaTypes !== 'application/json')
      problems.add('shape', [...at, 'responses', status], where, `must answer ${status} in application/json (it says ${mediaTypes})`)
  }
  return body !== undefined
}

/** The header components that document what a deprecated operation's answers carry: on its own
 * responses (required), and on shared ones, which other operations answer too (present when the
 * operation is deprecated). */
const lifecycleHeaderComponents = { Deprecation: 'Deprecation', Sunset: 'Sunset', Link: 'LifecycleLink' } as const

/** What of its operation an answer's header is sent by, where not by every operation that
 * answers it: the lifecycle headers (Deprecation, Sunset, a Link that a lifecycle component
 * documents) by a deprecated operation alone, API-Stability by one with a stability marker
 * alone. `component` is the name of the header component that documents it, if any. */
function sentOnlyBy(header: string, component: string | undefined): 'deprecated' | 'marked' | undefined {
  if (header === 'API-Stability') return 'marked'
  if (header === 'Deprecation' || header === 'Sunset') return 'deprecated'
  return header === 'Link' && lifecycleLinks.has(component) ? 'deprecated' : undefined
}
const lifecycleLinks = new Set<string | undefined>([lifecycleHeaderComponents.Link, `${lifecycleHeaderComponents.Link}WhenDeprecated`])

/** The 408 of a request that never arrived is answered before its operation is known: it
 * carries none of the headers an operation's lifecycle adds. */
const beforeRouting = '408'

/** Whether the server sends `header`, documented by the header component `component` (if any) on
 * an operation's answer of `status`, given whether the operation is deprecated and whether it
 * carries a stability marker. */
export function sendsHeader(header: string, component: string | undefined, status: string, operation: { deprecated: boolean; marked: boolean }): boolean {
  const only = sentOnlyBy(header, component)
  if (only === undefined) return true
  return status !== beforeRouting && (only === 'deprecated' ? operation.deprecated : operation.marked)
}
const componentOf = (header: keyof typeof lifecycleHeaderComponents, shared: boolean) =>
  `$ref '#/components/headers/${lifecycleHeaderComponents[header]}${shared ? 'WhenDeprecated' : ''}'`

/** A deprecated operation documents the headers the server adds to each of its answers
 * (Deprecation, Sunset, Link), but the 408 of a request that never arrived, and its 410. */
function checkRetirementDocumented(document: OpenAPIV3.Document, definition: OperationDefinition, at: string[], where: string, problems: Problems) {
  const responses = definition.responses ?? {}
  if (responses['410'] === undefined)
    problems.add(
      'shape',
      [...at, 'responses'],
      where,
      "a deprecated operation documents its 410 (gone, from its sunset on): add '410': $ref '#/components/responses/Gone'",
    )
  for (const [status, response] of Object.entries(responses)) {
    if (status === beforeRouting) continue
    const headers = Object.keys(deref<OpenAPIV3.ResponseObject>(document, response).headers ?? {})
    const missing = (['Deprecation', 'Sunset', 'Link'] as const).filter((header) => !headers.includes(header))
    if (missing.length === 0) continue
    // (a shared response is answered by operations that are not deprecated too)
    const shared = '$ref' in response ? response.$ref : undefined
    const add = missing.map((header) => `${header}: ${componentOf(header, shared !== undefined)}`).join(', ')
    problems.add(
      'shape',
      [...at, 'responses', status],
      where,
      `response ${status} does not document ${missing.join(', ')}: add ${add} to ${shared ?? 'its headers'}`,
    )
  }
}

/**
 * Every answer of a deprecated operation carries its lifecycle Link (lifecycleLink); a page of a
 * list with more after it (keyset paging, src/http/pagination.ts: an operation that takes
 * `after`) carries the next page's link first, in the same field. So each response of a
 * deprecated operation that documents a Link admits the one the server sends: that Link, and on
 * a paged operation's successes that Link after a next page's.
 */
function checkLifecycleLinks(
  document: OpenAPIV3.Document,
  operations: ReadonlyMap<string, Operation>,
  basePath: string,
  docs: string,
  successorUrl: Contract['successorUrl'],
  problems: Problems,
) {
  for (const operation of operations.values()) {
    const { id, path, pointer, definition, lifecycle, parameters, paged } = operation
    if (lifecycle.deprecation === undefined) continue
    // (its successor's URL as a request with every parameter `1` makes it)
    const ones = Object.fromEntries(parameters.map(({ name }) => [name, '1']))
    const link = lifecycleLink(docs, successorUrl(operation, { params: ones, query: ones }))
    // (a next page's link as pageOf writes it, its path parameters filled in)
    const next = `<${basePath}${path.replace(/\{[^}]+\}/g, '1')}?limit=1&after=1>; rel="next"`
    for (const [status, response] of Object.entries(definition.responses ?? {})) {
      const header = deref<OpenAPIV3.ResponseObject>(document, response).headers?.Link
      if (header === undefined) continue
      const sent = paged && status.startsWith('2') ? [link, `${next}, ${link}`] : [link]
      const refused = sent.filter((value) => !admits(document, deref<OpenAPIV3.HeaderObject>(document, header), value))
      if (refused.length === 0) continue
      problems.add(
        'shape',
        [...keysOf(pointer), 'responses', status, 'headers', 'Link'],
        `operation ${id}`,
        `response ${status} documents a Link that does not admit ${refused.map((value) => `\`${value}\``).join(' nor ')}, which the server sends: document Link as ${componentOf('Link', '$ref' in response)}`,
      )
    }
  }
}

/** Whether a header's schema admits a value, by the keywords a document gives a text header
 * (pattern, maxLength). */
function admits(document: OpenAPIV3.Document, header: OpenAPIV3.HeaderObject, value: string): boolean {
  const { pattern, maxLength = Number.POSITIVE_INFINITY } = deref<OpenAPIV3.SchemaObject>(document, header.schema ?? {})
  return value.length <= maxLength && (pattern === undefined || new RegExp(pattern, 'u').test(value))
}

/** The server adds `API-Stability` to every answer of an operation with a stability marker, and
 * to no other: a marked operation documents it on its answers (but the 408 of a request that
 * never arrived), and an unmarked one does not document it as required. */
function checkStabilityDocumented(
  document: OpenAPIV3.Document,
  definition: OperationDefinition,
  marked: boolean,
  at: string[],
  where: string,
  problems: Problems,
) {
  for (const [status, response] of Object.entries(definition.responses ?? {})) {
    if (status === beforeRouting) continue
    const header = deref<OpenAPIV3.ResponseObject>(document, response).headers?.['API-Stability']
    if (marked && header === undefined)
      problems.add('shape', [...at, 'responses', status], where, `response ${status} does not document API-Stability, which the server sends for x-stability`)
    if (!marked && header !== undefined && deref<OpenAPIV3.HeaderObject>(document, header).required === true) {
      problems.add(
        'shape',
        [...at, 'responses', status],
        where,
        `response ${status} documents API-Stability as required, which the server sends only for x-stability`,
      )
    }
  }
}

/** A successor is an operation of the same document whose URL is a request a client can send:
 * no path parameter, a template no client can follow (`/store/orders/{orderId}`); what its
 * parameters are given (`x-successor-parameters`) are query parameters of it, from parameters of
 * the operation. */
function checkSuccessors(operations: ReadonlyMap<string, Operation>, basePath: string, problems: Problems) {
  for (const { id, lifecycle, pointer, parameters } of operations.values()) {
    const successor = lifecycle.deprecation?.successor
    if (successor === undefined) continue
    const successorOperation = operations.get(successor)
    if (successorOperation === undefined) {
      problems.add('lifecycle', [...keysOf(pointer), 'x-successor'], `operation ${id}`, `x-successor ${successor} names no operation of this document`)
      continue
    }
    if (successorOperation.path.includes('{')) {
      problems.add(
        'lifecycle',
        [...keysOf(pointer), 'x-successor'],
        `operation ${id}`,
        `x-successor ${successor} is at ${basePath}${successorOperation.path}, a template, not a request a client can send: name an operation without path parameters (x-successor-parameters fills its query), or say in x-successor-reason why there is none`,
      )
      continue
    }
    const has = (list: readonly OpenAPIV3.ParameterObject[], where: string, name: string) =>
      list.some((parameter) => parameter.in === where && parameter.name === name)
    for (const [name, source] of Object.entries(lifecycle.deprecation!.successorParameters ?? {})) {
      const at = [...keysOf(pointer), 'x-successor-parameters', name]
      if (!has(successorOperation.parameters, 'query', name))
        problems.add('lifecycle', at, `operation ${id}`, `x-successor-parameters names ${name}, which is no query parameter of ${successor}`)
      if (!has(parameters, source.in, source.name))
        problems.add(
          'lifecycle',
          at,
          `operation ${id}`,
          `x-successor-parameters gives ${name} the ${source.in} parameter ${source.name}, which ${id} does not have`,
        )
    }
  }
}

/** The longest value a successor's URL carries, encoded: more than any id or filter takes. */
const successorValueLength = 100

/** Contract's successorUrl, over the operations of a document served under `basePath`. */
function successorUrls(basePath: string, operations: ReadonlyMap<string, Operation>): Contract['successorUrl'] {
  // (asked at every answer of a deprecated operation: what the document decides is read once)
  const built = new Map<Operation, (request: RequestValues) => string | undefined>()
  const builderOf = ({ lifecycle }: Operation) => {
    const successor = lifecycle.deprecation?.successor
    const target = successor === undefined ? undefined : operations.get(successor)
    if (target === undefined) return () => undefined
    const url = `${basePath}${target.path}`
    const parameters = Object.entries(lifecycle.deprecation!.successorParameters ?? {}).map(([name, source]) => ({
      query: encodeURIComponent(name),
      ...source,
    }))
    return ({ params, query }: RequestValues) => {
      const values = { path: params, query } as Record<string, Record<string, unknown> | undefined>
      const search: string[] = []
      for (const parameter of parameters) {
        const value = values[parameter.in]?.[parameter.name]
        // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a value of the request's path or query: text, a number, or a list of them
        const encoded = value === undefined ? '' : encodeURIComponent(String(value))
        // (a value no valid request has, as long as a client likes, is left out: the Link stays short)
        if (encoded !== '' && encoded.length <= successorValueLength) search.push(`${parameter.query}=${encoded}`)
      }
      return search.length === 0 ? url : `${url}?${search.join('&')}`
    }
  }
  return (operation, request = {}) => {
    let build = built.get(operation)
    if (build === undefined) built.set(operation, (build = builderOf(operation)))
    return build(request)
  }
}

/** Operation's path parameters in a request path under `basePath`, decoded (as sent, where that
 * is not percent-encoding). */
function pathParams(basePath: string, { path }: Operation, requestPath: string): Record<string, string> | undefined {
  const names = [...path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => name!)
  const match = new RegExp(`^${basePath}${path.replace(/\{[^}]+\}/g, '([^/]+)')}$`).exec(requestPath)
  if (match === null) return undefined
  return Object.fromEntries(names.map((name, i) => [name, decoded(match[i + 1]!)]))
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

function readEvents(document: OpenAPIV3.Document, catalogue: RoleCatalogue, problems: Problems): Map<string, Event> {
  const events = new Map<string, Event>()
  for (const [type, item] of Object.entries((document as { webhooks?: Record<string, { post?: OperationDefinition }> }).webhooks ?? {})) {
    const at = ['webhooks', type, 'post']
    const where = `event ${type}`
    const definition = item?.post
    if (definition === undefined) {
      problems.add('shape', ['webhooks', type], where, 'an event is sent as a POST: it needs its post')
      continue
    }
    const lifecycle = readLifecycle(definition, at, where, problems)
    if (lifecycle.deprecation !== undefined)
      problems.add(
        'lifecycle',
        [...at, 'deprecated'],
        where,
        'the server does not retire events: a deprecated event would still be sent, so it is not marked deprecated',
      )
    events.set(type, {
      type,
      pointer: pointerTo(at),
      definition,
      lifecycle,
      roles: readEventRoles(definition['x-roles'], catalogue, [...at, 'x-roles'], where, problems),
    })
  }
  return events
}

/** The error codes an operation's documented answers name: the `code` of each one's example (or
 * examples), and each code its description names so, "code `x`" (one answer may carry several:
 * a 400 is `invalid_request` or `malformed_json`). */
function codesNamed(document: OpenAPIV3.Document, definition: OperationDefinition): Set<string> {
  const codes = new Set<string>()
  for (const answer of Object.values(definition.responses ?? {})) {
    const { description, content } = deref<OpenAPIV3.ResponseObject>(document, answer)
    for (const [, code] of description.matchAll(/code `([a-z_]+)`/g)) codes.add(code!)
    for (const media of Object.values(content ?? {})) {
      const examples: unknown[] = [
        media.example,
        ...Object.values(media.examples ?? {}).map((example): unknown => deref<OpenAPIV3.ExampleObject>(document, example).value),
      ]
      for (const example of examples) {
        const code = (example as { code?: unknown } | undefined)?.code
        if (typeof code === 'string') codes.add(code)
      }
    }
  }
  return codes
}

function errorCodesOf(document: OpenAPIV3.Document): string[] {
  const code = (document.components?.schemas?.Error as OpenAPIV3.SchemaObject | undefined)?.properties?.code as { 'x-extensible-enum'?: string[] } | undefined
  return code?.['x-extensible-enum'] ?? []
}

/** `/pets/{petId}` matches `/v1/pets/7`: a template becomes a pattern under the base path. */
function pathsOf(basePath: string, operations: ReadonlyMap<string, Operation>) {
  interface PathEntry {
    pattern: RegExp
    methods: string[]
    operations: Map<string, Operation>
  }
  const paths = new Map<string, PathEntry>()
  for (const operation of operations.values()) {
    const { path, method } = operation
    const pattern = new RegExp(`^${basePath}${path.replace(/\{[^}]+\}/g, '[^/]+')}$`)
    const entry: PathEntry = paths.get(path) ?? { pattern, methods: [], operations: new Map() }
    // HEAD is served wherever GET is (RFC 9110)
    entry.methods.push(...(method === 'GET' ? ['GET', 'HEAD'] : [method]))
    entry.operations.set(method, operation)
    paths.set(path, entry)
  }
  const entries = [...paths.values()]
  return (requestPath: string) => entries.find(({ pattern }) => pattern.test(requestPath))
}
