/**
 * `x-service` of a contract: what the server promises beyond its operations, as the numbers and
 * paths it reads at start (the descriptions say the same in words), and the limits the schemas
 * state that the server must keep to when it writes text of its own.
 */
import type { OpenAPIV3 } from 'openapi-types'
import { deref } from './pointer.js'
import type { NoticeDays } from './lifecycle.js'
import type { Problems } from './problems.js'

export interface ServiceLimits {
  /** a request body above this many bytes is a 413 */
  requestBodyBytes: number
  /** Retry-After of a 503 (a dependency that failed or refused) */
  unavailableRetryAfterSeconds: number
  /** Access-Control-Max-Age of a preflight answer */
  preflightMaxAgeSeconds: number
  /** how long an Idempotency-Key is remembered */
  idempotencyKeyHours: number
  /** how long a finished webhook delivery is kept */
  finishedDeliveriesKeptDays: number
  /** the longest `message` of an Error body (Error.message's maxLength) */
  errorMessageLength: number
  /** the longest `lastError` of a delivery (WebhookDelivery.lastError's maxLength) */
  lastErrorLength: number
}

/** Where the service serves what is not an operation: absolute request paths. */
export interface ServicePaths {
  /** the documentation page, under the base path (`/v1/docs/`) */
  docs: string
  /** the contract, as JSON and as written */
  json: string
  yaml: string
  /** the consumers' changelog (Markdown) */
  changelog: string
  /** the health probes, at the root of the host: the process runs, the instance can serve */
  live: string
  ready: string
}

export interface Service {
  limits: ServiceLimits
  paths: ServicePaths
  /** the least notice a deprecation gives, by level */
  noticeDays: NoticeDays
  /** the prefix of an event's id (`evt_` in `evt_42`) */
  eventIdPrefix: string
}

const numbers = ['requestBodyBytes', 'unavailableRetryAfterSeconds', 'preflightMaxAgeSeconds', 'idempotencyKeyHours', 'finishedDeliveriesKeptDays'] as const
const published = ['docs', 'json', 'yaml', 'changelog'] as const
const health = ['live', 'ready'] as const

interface Declared {
  limits?: Record<string, unknown>
  published?: Record<string, unknown>
  health?: Record<string, unknown>
  lifecycle?: { noticeDays?: Record<string, unknown> }
  events?: { idPrefix?: unknown }
}

/** What readService reads of a document: `x-service`, and the maxLength of some properties. */
interface ServiceDocument {
  'x-service'?: unknown
  components?: OpenAPIV3.ComponentsObject
}

/** `x-service` of `document`, under `basePath`; what is missing or malformed is reported. */
export function readService(document: ServiceDocument, basePath: string, problems: Problems): Service {
  const declared = (document['x-service'] ?? {}) as Declared
  const at = ['x-service']
  const where = 'x-service'
  const count = (value: unknown, path: string[], zeroAllowed = false): number => {
    if (Number.isSafeInteger(value) && (value as number) >= (zeroAllowed ? 0 : 1)) return value as number
    problems.add('service', [...at, ...path], where, `${path.join('.')} must be a whole number${zeroAllowed ? '' : ' above 0'}, not ${JSON.stringify(value)}`)
    return 0
  }
  const path = (value: unknown, keys: string[]): string => {
    if (typeof value === 'string' && /^\/[A-Za-z0-9._~/-]*$/.test(value)) return value
    problems.add('service', [...at, ...keys], where, `${keys.join('.')} must be a path beginning with /, not ${JSON.stringify(value)}`)
    return '/'
  }
  const limits = Object.fromEntries(numbers.map((name) => [name, count(declared.limits?.[name], ['limits', name])])) as Record<(typeof numbers)[number], number>
  const noticeDays = {
    beta: count(declared.lifecycle?.noticeDays?.beta, ['lifecycle', 'noticeDays', 'beta'], true),
    stable: count(declared.lifecycle?.noticeDays?.stable, ['lifecycle', 'noticeDays', 'stable'], true),
  }
  const prefix = declared.events?.idPrefix
  if (typeof prefix !== 'string' || !/^[a-z]+_$/.test(prefix))
    problems.add('service', [...at, 'events', 'idPrefix'], where, `events.idPrefix must be lower-case letters and _, not ${JSON.stringify(prefix)}`)
  return {
    limits: {
      ...limits,
      errorMessageLength: maxLengthOf(document, ['Error', 'message'], problems),
      lastErrorLength: maxLengthOf(document, ['WebhookDelivery', 'lastError'], problems),
    },
    paths: {
      ...(Object.fromEntries(published.map((name) => [name, `${basePath}${path(declared.published?.[name], ['published', name])}`])) as Record<
        (typeof published)[number],
        string
      >),
      ...(Object.fromEntries(health.map((name) => [name, path(declared.health?.[name], ['health', name])])) as Record<(typeof health)[number], string>),
    },
    noticeDays,
    eventIdPrefix: String(prefix),
  }
}

/** The maxLength of a property of a component schema, which the server must keep to. */
function maxLengthOf(document: ServiceDocument, [schema, property]: [string, string], problems: Problems): number {
  const at = ['components', 'schemas', schema, 'properties', property]
  const node = (document.components?.schemas?.[schema] as OpenAPIV3.SchemaObject | undefined)?.properties?.[property]
  const maxLength = node === undefined ? undefined : deref<{ maxLength?: unknown }>(document, node).maxLength
  if (Number.isSafeInteger(maxLength) && (maxLength as number) > 0) return maxLength as number
  problems.add('service', at, `${schema}.${property}`, `${schema}.${property} must state its maxLength: the server cuts what it writes there to it`)
  return 0
}
