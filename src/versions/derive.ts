/**
 * Older versions' handlers and events, derived from the newest's by the version changes between
 * them (change.ts): no handler is written twice. A request of version m goes up one version at a
 * time to the newest (each step: its body's schemas made newer, then its operation's changes),
 * the newest handler serves it, and its answer comes down the same steps (each: its body's
 * schemas made older, then its operation's changes, then its URLs moved under the older base
 * path). An operation one version renamed or dropped is served by the one its change names, and
 * renames compose: version 1's getPet is version 2's listPets whatever version 3 calls it.
 */
import type { FastifyRequest } from 'fastify'
import type { OpenAPIV3 } from 'openapi-types'
import type { Contract, Operation } from '../contract/model.js'
import { deref } from '../contract/pointer.js'
import { ApiError } from '../core/errors.js'
import type { MaybePromise } from '../core/maybe-async.js'
import { fromStoreAlone, storePartOf } from '../core/store-read.js'
import type { EventFields } from '../events/outbox.js'
import type { ChangeContext, ChangedAnswer, ChangedRequest, OperationChange, VersionChange } from './change.js'
import { type Difference, uncovered, unpairedHalves } from './coverage.js'
import { type Transform, transformOf } from './schemas.js'

/** A handler as the operations plugin calls it, whatever its operation. */
export type AnyHandler = (request: FastifyRequest, reply: unknown, answer: unknown) => MaybePromise<ChangedAnswer | ApiError>

/** The response headers that hold a URL of the API. */
const urlHeaders = ['Location', 'Link']

/** One step down from a version to the one before it: the changes between them, read against both. */
interface Step {
  older: Contract
  newer: Contract
  changes: readonly VersionChange[]
  /** the operation of the newer version that serves one of the older, where it is not its own */
  servedBy: ReadonlyMap<string, string>
  context: ChangeContext
  /** a URL under the newer version's base path, in a header */
  moved: RegExp
  /** by the id of an older operation, the query parameters the newer version calls otherwise:
   * by the newer name, the older (a URL of that operation in an answer is given them back) */
  renamedQueries: ReadonlyMap<string, ReadonlyMap<string, string>>
  down: ReadonlyMap<string, Transform>
  up: ReadonlyMap<string, Transform>
  /** by event type: its payload made older */
  events: ReadonlyMap<string, EventChange>
}

/** An event's payload made older. */
type EventChange = (fields: EventFields) => EventFields

/** What one operation's request and answer go through at one step. */
interface Hop {
  step: Step
  /** the query parameters the newer operation calls otherwise: [older name, newer name] */
  renamed: [string, string][]
  bodyUp: Transform | undefined
  ups: OperationChange['up'][]
  /** by status of the newer operation's answers */
  bodyDown: ReadonlyMap<number, Transform>
  downs: OperationChange['down'][]
}

export interface Versions {
  /** the handlers of `older`'s operations, made of the newest's (a newest one is refused at
   * start when an operation of `older` is served by none) */
  derive(handlers: Readonly<Record<string, AnyHandler>>, older: Contract): Record<string, AnyHandler>
  /** an event's fields as the newest version shows them, shown as version `major` does */
  showEvent(type: string, fields: EventFields, major: number): EventFields
}

/** The versions of `contracts` (served together, oldest first) and the changes between them. A
 * change that names an operation, schema or event its versions lack is refused here, at start,
 * as is a breaking difference between two of them (`differences`, by the older major: those the
 * gate found, generated/vN/breaking.cjs) that no change covers. */
export function deriveVersions(
  contracts: readonly Contract[],
  changes: readonly VersionChange[],
  differences: ReadonlyMap<number, readonly Difference[]> = new Map(),
): Versions {
  const newest = contracts.at(-1)!
  const steps = new Map<number, Step>()
  for (const [i, older] of contracts.entries()) {
    const newer = contracts[i + 1]
    if (newer === undefined) break
    if (newer.version[0] !== older.version[0] + 1)
      throw new Error(`version ${older.version[0]} is served without version ${older.version[0] + 1}, through whose changes it is derived`)
    steps.set(
      older.version[0],
      stepOf(
        older,
        newer,
        changes.filter(({ version }) => version === older.version[0]),
        differences.get(older.version[0]) ?? [],
      ),
    )
  }
  const stepsFrom = (major: number) => [...steps.values()].filter(({ older }) => older.version[0] >= major)
  return {
    derive(handlers, older) {
      const derived: Record<string, AnyHandler> = {}
      for (const [id, operation] of older.operations) derived[id] = derivedHandler(operation, older.version[0], stepsFrom(older.version[0]), handlers, newest)
      return derived
    },
    showEvent(type, fields, major) {
      let made = fields
      for (const step of stepsFrom(major).reverse()) made = step.events.get(type)?.(made) ?? made
      return made
    },
  }
}

/** The changes of one step, checked against its two versions, and what they make of schemas and events. */
function stepOf(older: Contract, newer: Contract, changes: readonly VersionChange[], differences: readonly Difference[]): Step {
  const problems: string[] = []
  const hasSchema = ({ document }: Contract, name: string) => document.components?.schemas?.[name] !== undefined
  const down = new Map<string, Transform>()
  const up = new Map<string, Transform>()
  const eventChanges = new Map<string, EventChange[]>()
  const changed = new Set<string>()
  const servedBy = new Map<string, string>()
  const renamedQueries = new Map<string, ReadonlyMap<string, string>>()
  for (const change of changes) {
    const named = `version change ${change.name}`
    for (const [name, schema] of Object.entries(change.schemas)) {
      if (!hasSchema(older, name) || !hasSchema(newer, name))
        problems.push(`${named} changes the schema ${name}, which ${older.file} and ${newer.file} do not both have`)
      if (changed.has(name))
        problems.push(`${named} changes the schema ${name}, which another change of version ${older.version[0]} changes: write them as one`)
      changed.add(name)
      if (schema.down !== undefined) down.set(name, schema.down)
      if (schema.up !== undefined) up.set(name, schema.up)
    }
    for (const [id, { renamed }] of Object.entries(change.operations)) {
      const operation = older.operations.get(id)
      if (operation === undefined) problems.push(`${named} changes the operation ${id}, which ${older.file} does not have`)
      else if (renamed !== undefined) renamedQueries.set(id, renamedQueryOf(operation, renamed, older, newer, change, problems))
    }
    for (const [id, by] of Object.entries(change.servedBy)) {
      if (!older.operations.has(id)) problems.push(`${named} serves the operation ${id}, which ${older.file} does not have`)
      if (!newer.operations.has(by)) problems.push(`${named} serves ${id} by ${by}, which ${newer.file} does not have`)
      if (servedBy.has(id)) problems.push(`${named} serves ${id} by ${by}, which another change of version ${older.version[0]} serves by ${servedBy.get(id)}`)
      servedBy.set(id, by)
    }
    for (const [type, event] of Object.entries(change.events)) {
      if (!older.events.has(type) || !newer.events.has(type))
        problems.push(`${named} changes the event ${type}, which ${older.file} and ${newer.file} do not both have`)
      eventChanges.set(type, [...(eventChanges.get(type) ?? []), event])
    }
  }
  problems.push(...unpairedHalves(older, changes))
  problems.push(...uncovered(differences, older, newer, changes).map((line) => `${newer.file} against ${older.file}: ${line}`))
  if (problems.length > 0) throw new Error(problems.join('; '))
  const events = new Map<string, EventChange>()
  for (const [type, event] of newer.events) {
    // (a payload is an object: its schema's transform makes one)
    const payload = transformOf(newer.document, jsonSchemaOf(newer.document, event.definition.requestBody), down) as EventChange | undefined
    const made = [...(payload === undefined ? [] : [payload]), ...(eventChanges.get(type) ?? [])]
    if (made.length > 0) events.set(type, (fields) => made.reduce((value, transform) => transform(value), fields))
  }
  const moved = new RegExp(`(^|<)${newer.basePath}/`, 'g')
  return { older, newer, changes, servedBy, context: { urlOf: older.urlOf }, moved, renamedQueries, down, up, events }
}

/** What `change` renames of `operation`'s query (of `older`), checked against both versions. */
function renamedQueryOf(
  operation: Operation,
  renamed: Readonly<Record<string, string>>,
  older: Contract,
  newer: Contract,
  change: VersionChange,
  problems: string[],
): ReadonlyMap<string, string> {
  const serving = newer.operations.get(change.servedBy[operation.id] ?? operation.id)
  for (const [was, is] of Object.entries(renamed)) {
    if (!queryParameters(operation).includes(was))
      problems.push(`version change ${change.name} renames ${operation.id}'s query parameter ${was}, which ${older.file} does not have`)
    if (serving !== undefined && !queryParameters(serving).includes(is))
      problems.push(
        `version change ${change.name} renames ${operation.id}'s query parameter ${was} to ${is}, which ${newer.file}'s ${serving.id} does not have`,
      )
  }
  return new Map(Object.entries(renamed).map(([was, is]) => [is, was]))
}

/** The URLs of `header` (a Location, or a Link's `<...>`) of an operation of `older` that
 * `renamedQueries` holds, their query parameters called by the older names. */
function renamedBack(header: string, older: Contract, renamedQueries: Step['renamedQueries']): string {
  return header.replace(/(^|<)([^<>?\s]+)\?([^<>\s]*)/g, (url: string, lead: string, path: string, query: string) => {
    const back = renamedQueries.get(older.operationAt('GET', path)?.id ?? '')
    if (back === undefined) return url
    const named = query.split('&').map((pair) => {
      const name = pair.split('=', 1)[0]!
      const was = back.get(name)
      return was === undefined ? pair : `${was}${pair.slice(name.length)}`
    })
    return `${lead}${path}?${named.join('&')}`
  })
}

/** The schema of the JSON content of a request body or response, if it has one. */
function jsonSchemaOf(document: OpenAPIV3.Document, node: OpenAPIV3.RequestBodyObject | OpenAPIV3.ResponseObject | OpenAPIV3.ReferenceObject | undefined) {
  return node === undefined ? undefined : deref<OpenAPIV3.RequestBodyObject | OpenAPIV3.ResponseObject>(document, node).content?.['application/json']?.schema
}

/** The handler of `operation` of version `major`: the newest handler, through each of `steps`. */
function derivedHandler(
  operation: Operation,
  major: number,
  steps: readonly Step[],
  handlers: Readonly<Record<string, AnyHandler>>,
  newest: Contract,
): AnyHandler {
  const hops: Hop[] = []
  const served = `operation ${operation.id} of version ${major} is served by no handler`
  let current = operation.id
  for (const step of steps) {
    const along = step.changes.flatMap((change) => change.operations[current] ?? [])
    const next = step.servedBy.get(current) ?? current
    const serving = step.newer.operations.get(next)
    if (serving === undefined) throw new Error(`${served}: ${step.newer.file} has no ${next}, and no change in src/versions/ says what serves it`)
    const bodyDown = new Map<number, Transform>()
    for (const [status, response] of Object.entries(serving.definition.responses)) {
      const transform = transformOf(step.newer.document, jsonSchemaOf(step.newer.document, response), step.down)
      if (transform !== undefined) bodyDown.set(Number(status), transform)
    }
    hops.push({
      step,
      renamed: along.flatMap((change) => Object.entries(change.renamed ?? {})),
      bodyUp: transformOf(step.older.document, jsonSchemaOf(step.older.document, step.older.operations.get(current)!.definition.requestBody), step.up),
      ups: along.flatMap((change) => change.up ?? []).reverse(),
      bodyDown,
      downs: along.flatMap((change) => change.down ?? []),
    })
    current = next
  }
  const handler = handlers[current]
  if (handler === undefined) throw new Error(`${served}: no handler serves ${current} of ${newest.file}`)
  if (hops.length === 0) return handler
  // A query parameter only the newer operation declares (version 2's `id` filter) is, sent to
  // the older one, an unknown parameter, which the contract says is ignored: the newer handler
  // is given the older operation's parameters alone.
  const declared = queryParameters(operation)
  const strays = queryParameters(newest.operations.get(current)!).some((name) => !declared.includes(name))
  const makesNewer = strays || hops.some(({ bodyUp, ups, renamed }) => bodyUp !== undefined || ups.length > 0 || renamed.length > 0)
  const down = (answer: ChangedAnswer | ApiError, request: ChangedRequest): ChangedAnswer | ApiError => {
    let made = answer
    for (let i = hops.length - 1; i >= 0; i--) {
      if (made instanceof ApiError) return made
      const { step, bodyDown, downs } = hops[i]!
      const body = bodyDown.get(made.status)
      if (body !== undefined) made = { ...made, body: body(made.body) }
      for (const change of downs) {
        made = change!(made, request, step.context)
        if (made instanceof ApiError) return made
      }
      if (made.headers === undefined) continue
      for (const name of urlHeaders) {
        const url = made.headers[name]
        if (url === undefined) continue
        const moved = url.replace(step.moved, `$1${step.older.basePath}/`)
        made.headers[name] = step.renamedQueries.size === 0 ? moved : renamedBack(moved, step.older, step.renamedQueries)
      }
    }
    return made
  }
  const derived: AnyHandler = (request, reply, answer) => {
    if (makesNewer) {
      // The request is made newer in place, on copies of its parameters (what the client sent
      // is left as it was). (A copy whose prototype is Fastify's request cost 3 µs a request:
      // V8 makes an object used as a prototype slower for everything after.)
      const newer = request as FastifyRequest & ChangedRequest
      newer.params = { ...(request.params as object) }
      newer.query = only(request.query as Record<string, unknown>, declared)
      for (const { step, bodyUp, ups, renamed } of hops) {
        for (const [was, is] of renamed) {
          if (!(was in newer.query)) continue
          newer.query[is] = newer.query[was]
          delete newer.query[was]
        }
        if (bodyUp !== undefined && newer.body !== undefined) newer.body = bodyUp(newer.body)
        for (const up of ups) up!(newer, step.context)
      }
    }
    const given = handler(request, reply, answer)
    return given instanceof Promise ? given.then((settled) => down(settled, request as ChangedRequest)) : down(given, request as ChangedRequest)
  }
  // (the changes down are of the answer and the request alone: what the store alone made stays so)
  const part = storePartOf(handler)
  return part === undefined ? derived : fromStoreAlone(derived, part)
}

const queryParameters = ({ parameters }: Operation) => parameters.filter((parameter) => parameter.in === 'query').map(({ name }) => name)

/** The values of `names` that `values` has. */
function only(values: Record<string, unknown>, names: readonly string[]): Record<string, unknown> {
  const kept: Record<string, unknown> = {}
  for (const name of names) if (values[name] !== undefined) kept[name] = values[name]
  return kept
}
