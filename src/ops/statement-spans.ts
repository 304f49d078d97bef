import type { Attributes } from '@opentelemetry/api'
import type { Dialect } from '../storage/database.js'
import type { StatementWatcher } from '../storage/watched-sql.js'
import type { TraceApi } from './tracing.js'

/** OpenTelemetry's `db.system.name` of each dialect (database semantic conventions). */
const systems: Record<Dialect, string> = { sqlite: 'sqlite', postgres: 'postgresql' }

/** The table a statement names first, by its verb: where it can be told from the text alone. */
const tables: Record<string, RegExp> = {
  SELECT: /\bfrom\s+([a-z_][a-z0-9_]*)/i,
  DELETE: /\bfrom\s+([a-z_][a-z0-9_]*)/i,
  INSERT: /\binto\s+([a-z_][a-z0-9_]*)/i,
  UPDATE: /^\s*update\s+([a-z_][a-z0-9_]*)/i,
}

interface Described {
  name: string
  attributes: Attributes
}

/** What a statement's span says of it, from its text alone (placeholders, never a value):
 * `SELECT pets`, with db.operation.name and db.collection.name. */
export function describeStatement(dialect: Dialect, text: string): Described {
  const operation = text.trimStart().split(/\s/, 1)[0]!.toUpperCase()
  const collection = tables[operation]?.exec(text)?.[1]
  const attributes: Attributes = { 'db.system.name': systems[dialect], 'db.operation.name': operation }
  if (collection !== undefined) attributes['db.collection.name'] = collection
  return { name: collection === undefined ? operation : `${operation} ${collection}`, attributes }
}

/**
 * A client span for each statement made while a request's span, kept, is active: a child of it. A
 * statement outside a request (the webhook dispatcher's, a start's) starts no trace of its own.
 * Each distinct text is described once: the service has a few dozen.
 */
export function statementSpans(api: TraceApi): StatementWatcher {
  const described = new Map<string, Described>()
  return (dialect, text) => {
    const parent = api.active()
    // (a request's span not kept has no child kept either: the sampler follows the parent)
    if (api.spanOf(parent)?.isRecording() !== true) return undefined
    const key = `${dialect} ${text}`
    let found = described.get(key)
    if (found === undefined) described.set(key, (found = describeStatement(dialect, text)))
    const span = api.tracer.startSpan(found.name, { kind: api.kinds.client, attributes: found.attributes }, parent)
    return (error) => {
      if (error !== undefined) {
        span.setAttribute('error.type', errorType(error))
        span.setStatus({ code: api.errorStatus })
      }
      span.end()
    }
  }
}

/** A failed statement's `error.type`: the database's code (a SQLSTATE, `SQLITE_BUSY`), else the
 * error's class (StorageUnavailable: the connection failed, see storage/sql.ts). */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' ? code : (error as Error).constructor.name
}
