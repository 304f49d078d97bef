/**
 * A version change (as Stripe calls them): one breaking difference between a major version and
 * the one before it, declared once. Handlers are written against the newest version; a request
 * of an older one is made newer by the changes between the two (`up`), the newest handler
 * serves it, and its answer is made older by the same changes (`down`), as is every event sent
 * to a subscription of the older version. A new major version adds changes, not copies.
 */
import type { ApiError } from '../core/errors.js'
import type { EventFields } from '../events/outbox.js'

/** A request as a handler reads it: what a change may rewrite of it. */
export interface ChangedRequest {
  params: Record<string, unknown>
  query: Record<string, unknown>
  body: unknown
}

/** An answer as a handler gives it: what a change may rewrite of it. */
export interface ChangedAnswer {
  status: number
  body: unknown
  headers?: Record<string, string> | undefined
}

/** Where a change is applied: the older version. */
export interface ChangeContext {
  /** the URL of one of the older version's operations (its contract's `urlOf`) */
  urlOf(operationId: string, params?: Record<string, string | number>): string
}

/** What a change does to one operation of the older version. */
export interface OperationChange {
  /** the operation of the newer version that serves it (by default, its own operationId) */
  servedBy?: string
  /** the older request made newer, in place */
  up?(request: ChangedRequest, context: ChangeContext): void
  /** a newer answer made older, or the refusal the older version answers instead */
  down?(answer: ChangedAnswer, request: ChangedRequest, context: ChangeContext): ChangedAnswer | ApiError
}

export interface VersionChange {
  /** the older major version it leads to (1: what version 1 has that version 2 changed) */
  version: number
  /** what changed, for people (docs/compatibility.md lists them) */
  description: string
  /** by the older version's operationId */
  operations: Readonly<Record<string, OperationChange>>
  /** by event type: a newer payload made older */
  events?: Readonly<Record<string, (fields: EventFields) => EventFields>>
}
