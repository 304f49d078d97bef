/**
 * An older version's handlers, derived from the newest's by the version changes between them
 * (change.ts): no handler is written twice. An operation an older version shares with the
 * newest is served by the newest's handler; one the newest renamed or dropped, by the handler
 * its change names (`servedBy`). URLs the newest handler writes (Location, Link) are moved under
 * the older version's base path.
 */
import type { FastifyRequest } from 'fastify'
import type { Contract, Operation } from '../contract/model.js'
import { ApiError } from '../core/errors.js'
import type { MaybePromise } from '../core/maybe-async.js'
import type { EventFields } from '../events/outbox.js'
import type { ChangedAnswer, ChangedRequest, OperationChange, VersionChange } from './change.js'

/** A handler as the operations plugin calls it, whatever its operation. */
export type AnyHandler = (request: FastifyRequest, reply: unknown, answer: unknown) => MaybePromise<ChangedAnswer | ApiError>

/** The changes that lead from the newest version down to `major`, in the order an answer takes. */
const changesDownTo = (changes: readonly VersionChange[], major: number, newest: number) => changes.filter(({ version }) => version >= major && version < newest)

/** The response headers that hold a URL of the API. */
const urlHeaders = ['Location', 'Link']

/**
 * The handlers of `older`'s operations, made of the newest's (`handlers`, the newest contract's
 * `newest`) and `changes`. An operation of the older version that neither the newest has nor a
 * change says how to serve is refused at start.
 */
export function deriveHandlers(
  handlers: Readonly<Record<string, AnyHandler>>,
  changes: readonly VersionChange[],
  older: Pick<Contract, 'version' | 'basePath' | 'operations' | 'urlOf'>,
  newest: Pick<Contract, 'version' | 'basePath' | 'operations'>,
): Record<string, AnyHandler> {
  const steps = changesDownTo(changes, older.version[0], newest.version[0])
  const context = { urlOf: older.urlOf }
  const moved = new RegExp(`(^|<)${newest.basePath}/`, 'g')
  const derived: Record<string, AnyHandler> = {}
  for (const [id, operation] of older.operations) {
    const along = steps.map((change) => change.operations[id]).filter((change): change is OperationChange => change !== undefined)
    const servedBy = along.findLast((change) => change.servedBy !== undefined)?.servedBy ?? id
    const handler = handlers[servedBy]
    const serving = newest.operations.get(servedBy)
    if (handler === undefined || serving === undefined) throw new Error(`operation ${id} of version ${older.version[0]} is served by no handler: the newest version has no ${servedBy}, and no change in src/versions/ says what serves it`)
    const ups = along.flatMap((change) => (change.up === undefined ? [] : [change.up])).reverse()
    // A query parameter only the newer operation declares (version 2's `id` filter) is, sent to
    // the older one, an unknown parameter, which the contract says is ignored: the newer handler
    // is given the older operation's parameters alone.
    const declared = queryParameters(operation)
    const strays = queryParameters(serving).some((name) => !declared.includes(name))
    const downs = along.flatMap((change) => (change.down === undefined ? [] : [change.down]))
    const down = (answer: ChangedAnswer | ApiError, request: ChangedRequest): ChangedAnswer | ApiError => {
      let made = answer
      for (const step of downs) {
        if (made instanceof ApiError) break
        made = step(made, request, context)
      }
      if (made instanceof ApiError || made.headers === undefined) return made
      for (const name of urlHeaders) {
        const url = made.headers[name]
        if (url !== undefined) made.headers[name] = url.replace(moved, `$1${older.basePath}/`)
      }
      return made
    }
    derived[id] = (request, reply, answer) => {
      if (ups.length > 0 || strays) {
        // The request is made newer in place, on copies of its parameters (what the client
        // sent is left as it was). (A copy whose prototype is Fastify's request cost 3 µs a
        // request: V8 makes an object used as a prototype slower for everything after.)
        const newer = request as FastifyRequest & ChangedRequest
        newer.params = { ...(request.params as object) }
        newer.query = only(request.query as Record<string, unknown>, declared)
        for (const up of ups) up(newer, context)
      }
      const given = handler(request, reply, answer)
      return given instanceof Promise ? given.then((settled) => down(settled, request as ChangedRequest)) : down(given, request as ChangedRequest)
    }
  }
  return derived
}

const queryParameters = ({ parameters }: Operation) => parameters.filter((parameter) => parameter.in === 'query').map(({ name }) => name)

/** The values of `names` that `values` has. */
function only(values: Record<string, unknown>, names: readonly string[]): Record<string, unknown> {
  const kept: Record<string, unknown> = {}
  for (const name of names) if (values[name] !== undefined) kept[name] = values[name]
  return kept
}

/** How an event is shown to a subscription of version `major`: the newest's payload made older
 * by the changes between them. */
export function eventsDownTo(changes: readonly VersionChange[], newest: number) {
  return (type: string, fields: EventFields, major: number): EventFields => {
    let made = fields
    for (const change of changesDownTo(changes, major, newest)) {
      const down = change.events?.[type]
      if (down !== undefined) made = down(made)
    }
    return made
  }
}
