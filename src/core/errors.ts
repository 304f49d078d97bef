/**
 * The catalogue of error codes, with the HTTP status of each: the only values `code` takes in an
 * Error body. Each served document lists (Error.code, x-extensible-enum) the codes its version
 * can send, and no other: those its operations' answers name, and answeredOutsideOperations
 * (the contract model's codesSent); every code here is some served version's.
 * test/errors.test.ts holds the lists so. Every layer uses this module, so it imports nothing of
 * the service; errors leave through the one handler, in http/error-handler.ts.
 */
export const errorStatus = {
  invalid_request: 400,
  malformed_json: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  pet_unavailable: 409,
  invalid_transition: 409,
  webhook_limit_reached: 409,
  category_name_taken: 409,
  gone: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  webhook_url_not_allowed: 422,
  category_not_found: 422,
  too_many_requests: 429,
  internal_error: 500,
  unavailable: 503,
} as const

export type ErrorCode = keyof typeof errorStatus

/** The codes a request no operation serves is answered with, in every version: a path no
 * operation has (404), a method its path does not take (405). Every other code is an operation's,
 * and its document names it in the answers of the operations that send it. */
export const answeredOutsideOperations: readonly ErrorCode[] = ['not_found', 'method_not_allowed']

export interface ErrorBody {
  code: ErrorCode
  message: string
  status: number
}

/**
 * A message as the Error schema promises it: no control characters (a client's text quoted in
 * it may hold some: a property name, a path) and at most `maxLength` characters, the schema's
 * (the contract model's `service.limits.errorMessageLength`: a quoted path may be 16 KiB long),
 * cut with an ellipsis.
 */
export function fitMessage(message: string, maxLength: number): string {
  const printable = message.replace(/[\x00-\x1F\x7F]/g, '\uFFFD')
  if (printable.length <= maxLength) return printable
  // (never half a surrogate pair)
  return `${printable.slice(0, maxLength - 1).replace(/[\uD800-\uDBFF]$/, '')}…`
}

/** An error a handler or hook means to send as it is; `C` its code, for the handlers' types. */
export class ApiError<C extends ErrorCode = ErrorCode> extends Error {
  readonly status: number
  constructor(
    readonly code: C,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.status = errorStatus[code]
  }

  /** Its Error body, the message as the schema promises it (fitMessage). */
  bodyWithin(messageLength: number): ErrorBody {
    return { code: this.code, message: fitMessage(this.message, messageLength), status: this.status }
  }
}

/** A failure a setting or the environment causes, which the operator fixes (a bad setting, a
 * database that cannot be reached, a contract the server refuses): a command reports it in its
 * own words alone, without a stack. */
export class OperatorError extends Error {}

/**
 * The database cannot serve the request now (down, unreachable, frozen, busy, out of disk), but
 * may again: the client is told to retry (503), the operator is told the cause (`cause`).
 */
export class StorageUnavailable extends Error {
  constructor(cause: Error) {
    super(`the database is unavailable: ${cause.message}`, { cause })
  }
}
