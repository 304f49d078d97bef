import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { Contract } from '../contract/model.js'
import { movedFrom } from '../contract/moved.js'
import { ApiError, StorageUnavailable } from '../core/errors.js'
import { bodyStillArriving, closeAfterAnswer } from './linger.js'

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
      return part !== 'body' && issue.params.type === 'integer' ? `${where} must be an integer in decimal digits` : `${where} ${issue.message}`
    case 'pattern':
      // the regular expression helps no one; the schema's description says the rule (in its
      // first sentence: a parameter's description goes on to say what it is for)
      return `${where} is not valid: ${firstSentence(issue.parentSchema?.description) ?? issue.message}`
    default:
      return `${where} ${issue.message}`
  }
}

const firstSentence = (text: string | undefined) =>
  text
    ?.trim()
    .split(/(?<=\.)\s/)[0]!
    .replace(/\s+/g, ' ')

/** A request body of a media type the server does not read. */
export const unsupportedMediaType = (request: FastifyRequest) =>
  new ApiError('unsupported_media_type', `Unsupported media type ${JSON.stringify(request.headers['content-type'] ?? 'none')}: send application/json`)

/** Any error, ours or Fastify's, as one of the catalogue's. */
function toApiError(error: FastifyError | ApiError, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error
  if (error instanceof StorageUnavailable) {
    return new ApiError('unavailable', 'The service is unavailable for a moment: try again later', {
      'Retry-After': String(request.server.contract.service.limits.unavailableRetryAfterSeconds),
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
const unavailableLogIntervalMs = 10_000

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

/** The methods the contract under whose base path `path` is serves there, if any. */
export const methodsAt = (contracts: readonly Contract[], path: string) => contracts.find(({ basePath }) => path.startsWith(`${basePath}/`))?.methodsAt(path)

declare module 'fastify' {
  interface FastifyRequest {
    /** the `code` of the Error body the request was answered with (its trace span's error.type) */
    errorCode?: string
  }
}

/** The one way out for every error: the Error body, with its status and headers. */
export function errorHandler(error: FastifyError | ApiError, request: FastifyRequest, reply: FastifyReply) {
  const apiError = toApiError(error, request)
  request.errorCode = apiError.code
  // the operator is told the cause (SQLITE_FULL, ECONNREFUSED…), the client only what to do
  // (once per interval: see unavailableLog)
  if (error instanceof StorageUnavailable) request.server.reportUnavailable(error.cause as Error)
  else if (apiError.status >= 500) request.log.error({ err: error }, 'request failed')
  // Answered before its body has all arrived (401, 413, 415, 408, 404…): the rest of the body
  // will not be read as a request, so the connection closes, without losing the answer.
  if (bodyStillArriving(request.raw)) closeAfterAnswer(request.raw, reply)
  return reply.code(apiError.status).headers(apiError.headers).send(apiError.bodyWithin(request.server.contract.service.limits.errorMessageLength))
}

/** No route: a path no served contract has is a 404; a path one has, asked with another
 * method, a 405 that names the methods it takes (RFC 9110). The root, where a person is likely
 * to look first, is a 404 that says where each version of the API and its documentation are; a
 * path an older version has and a newer one dropped, a 404 that says how the newer does it. */
export function notFoundHandler(contracts: readonly Contract[]) {
  const each = (read: (contract: Contract) => string) => contracts.map(read).join(' and ')
  const atRoot = `: the API is under ${each(({ basePath }) => basePath)}; its documentation is at ${each(({ service }) => service.paths.docs)} and its contract at ${each(({ service }) => service.paths.yaml)}`
  return (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!
    const allowed = methodsAt(contracts, path)?.join(', ')
    const error = allowed
      ? new ApiError('method_not_allowed', `${request.method} is not served at ${path}; it takes ${allowed}`, { Allow: allowed })
      : new ApiError(
          'not_found',
          `No route ${request.method} ${path}${path === '/' ? atRoot : (movedFrom(contracts, request.method, path, request.query) ?? '')}`,
        )
    return errorHandler(error, request, reply)
  }
}
