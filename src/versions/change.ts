/**
 * A version change (as Stripe calls them; Cadwyn's schema migrations): one breaking difference
 * between a major version and the one before it, declared once and typed by the generated types
 * of both. Handlers are written against the newest version; a request of an older one is made
 * newer by the changes between the two (`up`), the newest handler serves it, and its answer is
 * made older by the same changes (`down`), as is every event sent to a subscription of the older
 * version. A new major version adds changes, not copies.
 *
 * A change is keyed by what it transforms: a schema (one `Pet` change makes older every answer,
 * request and event that carries a Pet, wherever it sits), an operation (one the newer version
 * serves otherwise, or whose request or answer changed beyond its schemas), an event. What a
 * handler does differently for the older version (a side effect) it asks of the change:
 * `change.inForce(request)`.
 */
import type { ApiError } from '../core/errors.js'
import type { EventFields } from '../events/outbox.js'

/** What a change reads of a version's generated types (generated/vN/version.ts). */
export interface VersionTypes {
  major: number
  components: { schemas: object }
  operations: object
  webhooks: object
}

/** A request as a handler reads it: what a change may rewrite of it. */
export interface ChangedRequest<Params = Record<string, unknown>> {
  params: Params
  query: Record<string, unknown>
  body: unknown
}

/** An answer as a handler gives it: what a change may rewrite of it. */
export interface ChangedAnswer<Body = unknown> {
  status: number
  body: Body
  headers?: Record<string, string> | undefined
}

/** Where a change is applied: the older version. */
export interface ChangeContext {
  /** the URL of one of the older version's operations (its contract's `urlOf`) */
  urlOf: (operationId: string, params?: Record<string, string | number>) => string
}

/** How a schema's values are made older (an answer's, an event's) and newer (a request's).
 * (`this: void`: the derive layer calls a change's functions on their own.) */
export interface SchemaChange<Older, Newer> {
  down?(this: void, value: Newer): Older
  up?(this: void, value: Older): Newer
}

/** What a change does to one operation of the older version, beyond what its schemas' changes
 * do: `In`, the body it is given (the newer answer, its schemas made older), `Out`, the older
 * operation's. */
export interface OperationChange<Params = Record<string, unknown>, In = unknown, Out = unknown> {
  /** its query parameters the newer version calls otherwise, by the older name: a request's are
   * given the newer names, and every URL of this operation that an answer names (a next page,
   * a Location) the older ones */
  renamed?: Readonly<Record<string, string>>
  /** the older request made newer, in place (its body's schemas are made newer first) */
  up?(this: void, request: ChangedRequest<Params>, context: ChangeContext): void
  /** the newer answer made the older operation's, or the refusal the older version answers instead */
  down?(this: void, answer: ChangedAnswer<In>, request: ChangedRequest<Params>, context: ChangeContext): ChangedAnswer<Out> | ApiError
}

/** A change as the derive layer reads it, its types erased. */
export interface VersionChange {
  /** a name for people and for the messages that refuse it: its module's */
  name: string
  /** the older major version it leads to (1: what version 1 has that version 2 changed) */
  version: number
  /** what changed, for people (docs/compatibility.md lists them) */
  description: string
  /** by the name of the component schema, in both versions */
  schemas: Readonly<Record<string, SchemaChange<unknown, unknown>>>
  /** by the older version's operationId: the operation of the newer version that serves it, where
   * it is not its own operationId (one the newer version renamed or dropped) */
  servedBy: Readonly<Record<string, string>>
  /** by the older version's operationId */
  operations: Readonly<Record<string, OperationChange>>
  /** by event type: a newer payload, its schemas already made older, made older */
  events: Readonly<Record<string, (fields: EventFields) => EventFields>>
  /** by the older version's operationId: what its handler does otherwise while the change is in
   * force (asking `inForce(request)`), for people; a refusal the newer version added is covered so */
  sideEffects?: Readonly<Record<string, string | undefined>>
  /** whether the change is in force for a request: it was made through its version or an older one */
  inForce(request: { apiVersion: number }): boolean
}

type Schemas<V extends VersionTypes> = V['components']['schemas']
type Operations<V extends VersionTypes> = V['operations']
/** The operations of a version's paths (generated types list its events' operations too). */
type Served<V extends VersionTypes> = Exclude<keyof Operations<V>, EventOperation<V>> & string
type EventOperation<V extends VersionTypes> = {
  [T in keyof V['webhooks']]: V['webhooks'][T] extends { post: infer P }
    ? { [O in keyof Operations<V>]: Operations<V>[O] extends P ? O : never }[keyof Operations<V>]
    : never
}[keyof V['webhooks']]
type ParamsOf<V extends VersionTypes, O> = O extends keyof Operations<V>
  ? Operations<V>[O] extends { parameters: { path?: infer P } }
    ? NonNullable<P>
    : never
  : never
type SuccessBody<V extends VersionTypes, O> = O extends keyof Operations<V>
  ? Operations<V>[O] extends { responses: infer R }
    ? { [S in keyof R]: S extends 200 | 201 | 202 ? (R[S] extends { content: { 'application/json': infer B } } ? B : never) : never }[keyof R]
    : never
  : never

/** The operations of the newer version that serve operations of the older one, by the older's id. */
type ServedBy<Older extends VersionTypes, Newer extends VersionTypes> = { [Id in Served<Older>]?: Served<Newer> }

/** The body a change of the older operation `Id` is given: the answer of the newer operation that
 * serves it, as the older version shows that one (unknown, when it has none of that name). */
type BodyIn<Older extends VersionTypes, Id, By> = Id extends keyof By
  ? By[Id] extends keyof Operations<Older>
    ? SuccessBody<Older, By[Id]>
    : unknown
  : SuccessBody<Older, Id>

/** A change as it is written, typed by both versions: a name it does not have in them fails `tsc`. */
export interface Declared<Older extends VersionTypes, Newer extends VersionTypes, By extends ServedBy<Older, Newer>> {
  name: string
  version: Older['major']
  description: string
  schemas?: { [K in keyof Schemas<Older> & keyof Schemas<Newer>]?: SchemaChange<Schemas<Older>[K], Schemas<Newer>[K]> }
  servedBy?: By
  operations?: { [Id in Served<Older>]?: OperationChange<ParamsOf<Older, Id>, BodyIn<Older, Id, By>, SuccessBody<Older, Id>> }
  events?: { [T in keyof Older['webhooks'] & keyof Newer['webhooks']]?: (fields: EventFields) => EventFields }
  sideEffects?: { [Id in Served<Older>]?: string }
}

/** A version change from version `Older` to version `Newer` (each its generated/vN/version.ts):
 * `versionChange<V1, V2>()({...})` (the operations that serve others are read from the change). */
export const versionChange =
  <Older extends VersionTypes, Newer extends VersionTypes>() =>
  <By extends ServedBy<Older, Newer> = Record<never, never>>(declared: Declared<Older, Newer, By>): VersionChange => {
    const { version } = declared
    return {
      ...declared,
      servedBy: (declared.servedBy ?? {}) as VersionChange['servedBy'],
      schemas: (declared.schemas ?? {}) as VersionChange['schemas'],
      operations: (declared.operations ?? {}) as VersionChange['operations'],
      events: (declared.events ?? {}) as VersionChange['events'],
      inForce: (request) => request.apiVersion <= version,
    }
  }
