/** What an operation's lifecycle, as its contract declares it, adds to its answers. */
import { ApiError } from '../core/errors.js'
import { goneAt, lifecycleLink } from '../contract/lifecycle.js'
import type { Contract, Operation, RequestValues } from '../contract/model.js'

/** An operation's lifecycle headers for a request (its values, where the router read them:
 * a deprecated operation's Link leads to its successor with them). */
export type LifecycleHeaders = (request?: RequestValues) => Record<string, string>

/**
 * The response headers that announce an operation's lifecycle: `API-Stability` for an
 * experimental or beta one; for a deprecated one `Deprecation` (RFC 9745), `Sunset` (RFC 8594)
 * and `Link` to its successor, at the URL that does what the request asked (`</v1/pets?id=7>`
 * for getPet's `/v1/pets/7`), and to the documentation page. Undefined when it has none.
 */
export function lifecycleHeaders(operation: Operation, contract: Contract): LifecycleHeaders | undefined {
  const { lifecycle } = operation
  const headers: Record<string, string> = {}
  if (lifecycle.level !== 'stable') headers['API-Stability'] = lifecycle.level
  const { deprecation } = lifecycle
  if (deprecation === undefined) return Object.keys(headers).length > 0 ? () => headers : undefined
  // (both dates are there: the contract model refuses a deprecation without them)
  headers.Deprecation = `@${deprecation.at!.getTime() / 1000}`
  headers.Sunset = deprecation.sunset!.toUTCString()
  const docs = contract.service.paths.docs
  return (request) => ({ ...headers, Link: lifecycleLink(docs, contract.successorUrl(operation, request)) })
}

/** Whether a deprecated operation is gone at an instant (ms since the epoch), for a request: the
 * `gone` error to answer with, or undefined while it still works. */
export type Retirement = (now: number, request?: RequestValues) => ApiError | undefined

/** From its sunset (00:00 UTC) on, and within its brownouts, a deprecated operation is gone (its
 * error names the request of its successor that does the same); undefined for an operation that
 * is not deprecated. */
export function retirement(operation: Operation, contract: Contract): Retirement | undefined {
  if (operation.lifecycle.deprecation === undefined) return undefined
  const successorId = operation.lifecycle.deprecation.successor
  const successor = successorId === undefined ? undefined : contract.operations.get(successorId)!
  return (now, request) => {
    // (asked at every request: the successor's request is written only when it is gone)
    const successorText = () => (successor === undefined ? '' : `: use ${successorId}, ${successor.method} ${contract.successorUrl(operation, request)}`)
    const why = goneAt(operation.id, operation.lifecycle, now, successorText)
    return why === undefined ? undefined : new ApiError('gone', why)
  }
}
