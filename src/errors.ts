import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { Contract } from './contract/spec.js'
import { bodyStillArriving, closeAfterAnswer } from './http/linger.js'
import { StorageUnavailable } from './storage/sql.js'

/** Seconds a client is asked to wait (Retry-After) before trying again after a 503. */
export const retryAfterSeconds = 5

/**
 * The catalogue of error codes, with the HTTP status of each: the only values `code` takes in an
 * Error body. openapi.yaml lists the same codes (Error.code, x-extensible-enum); a test holds the
 * two lists equal.
 */
export const errorStatus = {
  invalid_request: 400,
  malformed_json: 400,
  unauthorized: 401,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  pet_unavailable: 409,
  invalid_transition: 409,
  webhook_limit_reached: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  webhook_url_not_allowed: 422,
  too_many_requests: 429,
  internal_error: 500,
  unavailable: 503,
} as const

export type ErrorCode = keyof typeof errorStatus

export interface ErrorBody {
  code: ErrorCode
  message: string
  status: number
}

/** The longest `message` of an Error body (openapi.yaml's Error.message says the same). */
export const messageMaxLength = 500

/**
 * A message as the Error schema promises it: no control characters (a client's text quoted in
 * it may hold some: a property name, a path) and at most messageMaxLength characters (a quoted
 * path may be 16 KiB long), cut with an ellipsis.
 */
export function fitMessage(message: string): string {
  const printable = message.replace(/[\x00-\x1F\x7F]/g, '\uFFFD')
  if (printable.length <= messageMaxLength) return printable
  // (never half a surrogate pair)
  return `${printable.slice(0, messageMaxLength - 1).replace(/[\uD800-\uDBFF]$/, '')}…`
}

/** An error a handler or hook means to send as it is. */
export class ApiError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(fitMessage(message))
    this.status = errorStatus[code]
  }

  get body(): ErrorBody {
    return { code: this.code, message: this.message, status: this.status }
  }
}

interface ValidationIssue {
  keyword: string
  instancePath: string
  message?: string
  params: { additionalProperty?: string; allowedValues?: unknown[]; type?: string }
  parentSchema?: { description?: string }
}

/** Fastify's names for the parts of a request, in the words of the spec's `in`. */
const partNames: Record<string, string> = { querystring: 'query', params: 'path', headers: 'header' }

/** One validation failure in words a client can act on, e.g. `body/status must be one of: ...`. */
export function describeValidation(issue: ValidationIssue, part: string): string {
  const where = `${partNames[part] ?? part}${issue.instancePath}`
  switch (issue.keyword) {
    case 'additionalProperties':
      return `${where} must NOT have additional property '${issue.params.additionalProperty}'`
    case 'enum':
      return `${where} must be one of: ${issue.params.allowedValues?.join(', ')}`
    case 'type':
      // a parameter is text: say how an integer is written
      return part !== 'body' && issue.params.type === 'integer'
        ? `${where} must be an integer in decimal digits`
        : `${where} ${issue.message}`
    case 'pattern':
      // the regular expression helps no one; the schema's description says the rule (in its
      // first sentence: a parameter's description goes on to say what it is for)
      return `${where} is not valid: ${firstSentence(issue.parentSchema?.description) ?? issue.message}`
    default:
      return `${where} ${issue.message}`
  }
}

const firstSentence = (text: string | undefined) => text?.trim().split(/(?<=\.)\s/)[0]!.replace(/\s+/g, ' ')

/** A request body of a media type the server does not read. */
export const unsupportedMediaType = (request: FastifyRequest) =>
  new ApiError('unsupported_media_type', `Unsupported media type ${JSON.stringify(request.headers['content-type'] ?? 'none')}: send application/json`)

/** Any error, ours or Fastify's, as one of the catalogue's. */
export function toApiError(error: FastifyError | ApiError, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error
  if (error instanceof StorageUnavailable) {
    return new ApiError('unavailable', 'The service is unavailable for a moment: try again later', {
      'Retry-After': String(retryAfterSeconds),
    })
  }
  if (error.validation) {
    if (error.validationContext === 'body' && request.body === undefined) {
      return new ApiError('invalid_request', 'A request body is required: send a JSON object')
    }
    return new ApiError('invalid_request', describeValidation(error.validation[0] as ValidationIssue, error.validationContext!))
  }
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return unsupportedMediaType(request)
  // Anything else a client caused (a malformed URL, a wrong Content-Length) is a bad request.
  if (error.statusCode !== undefined && error.statusCode < 500) return new ApiError('invalid_request', error.message)
  return new ApiError('internal_error', 'Internal server error')
}

declare module 'fastify' {
  interface FastifyInstance {
    /** logs why the database could not serve a request, each cause once per interval */
    reportUnavailable: (cause: Error) => void
  }
}

/** How often one cause of an unavailable database is logged: a database down under load would
 * otherwise write a line for every request, thousands a second, and bury the cause. */
export const unavailableLogIntervalMs = 10_000

/** Causes told apart at most, beyond which they are forgotten (and logged again when seen). */
const causesBound = 100

/**
 * Logs the cause of a StorageUnavailable: at once the first time, then at most once per
 * interval for the same cause (its SQLSTATE or error code, and message), with the number of
 * requests it failed since its last line. A new cause (the login refused, after the sessions
 * were ended) is logged as it comes.
 */
export function unavailableLog(log: FastifyBaseLogger, intervalMs = unavailableLogIntervalMs): (cause: Error) => void {
  const causes = new Map<string, { loggedAt: number; failed: number }>()
  return (cause) => {
    const key = `${(cause as { code?: string }).code} ${cause.message}`
    const now = performance.now()
    let seen = causes.get(key)
    if (seen === undefined) {
      if (causes.size >= causesBound) causes.clear()
      causes.set(key, (seen = { loggedAt: -Infinity, failed: 0 }))
    }
    seen.failed++
    if (now - seen.loggedAt < intervalMs) return
    log.error({ err: cause, failedRequests: seen.failed }, 'the database is unavailable')
    seen.loggedAt = now
    seen.failed = 0
  }
}

/** The one way out for every error: the Error body, with its status and headers. */
export function errorHandler(error: FastifyError | ApiError, request: FastifyRequest, reply: FastifyReply) {
  const apiError = toApiError(error, request)
  // the operator is told the cause (SQLITE_FULL, ECONNREFUSED…), the client only what to do
  // (once per interval: see unavailableLog)
  if (error instanceof StorageUnavailable) request.server.reportUnavailable(error.cause as Error)
  else if (apiError.status >= 500) request.log.error({ err: error }, 'request failed')
  // Answered before its body has all arrived (401, 413, 415, 408, 404…): the rest of the body
  // will not be read as a request, so the connection closes, without losing the answer.
  if (bodyStillArriving(request.raw)) closeAfterAnswer(request.raw, reply)
  return reply.code(apiError.status).headers(apiError.headers).send(apiError.body)
}

/** No route: a path the spec lacks is a 404; a path it has, asked with another method, a 405
 * that names the methods it takes (RFC 9110). */
export function notFoundHandler(contract: Contract) {
  return (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!
    const allowed = contract.methodsAt(path)?.join(', ')
    const error = allowed
      ? new ApiError('method_not_allowed', `${request.method} is not served at ${path}; it takes ${allowed}`, { Allow: allowed })
      : new ApiError('not_found', `No route ${request.method} ${path}`)
    return errorHandler(error, request, reply)
  }
}
