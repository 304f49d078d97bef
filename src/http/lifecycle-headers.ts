/** What an operation's lifecycle, as its contract declares it, adds to its answers. */
import { ApiError } from '../core/errors.js'
import { goneAt, lifecycleLink } from '../contract/lifecycle.js'
import type { Contract, Operation } from '../contract/model.js'

/**
 * The response headers that announce an operation's lifecycle: `API-Stability` for an
 * experimental or beta one; for a deprecated one `Deprecation` (RFC 9745), `Sunset` (RFC 8594)
 * and `Link` to its successor and to the documentation page. Undefined when it has none.
 */
export function lifecycleHeaders({ lifecycle }: Operation, contract: Contract): Record<string, string> | undefined {
  const headers: Record<string, string> = {}
  if (lifecycle.level !== 'stable') headers['API-Stability'] = lifecycle.level
  const { deprecation } = lifecycle
  if (deprecation !== undefined) {
    // (both dates are there: the contract model refuses a deprecation without them)
    headers.Deprecation = `@${deprecation.at!.getTime() / 1000}`
    headers.Sunset = deprecation.sunset!.toUTCString()
    const successor = deprecation.successor === undefined ? undefined : contract.operations.get(deprecation.successor)
    headers.Link = lifecycleLink(contract.service.paths.docs, successor && `${contract.basePath}${successor.path}`)
  }
  return Object.keys(headers).length > 0 ? headers : undefined
}

/** Whether a deprecated operation is gone at an instant (ms since the epoch): the `gone` error
 * to answer with, or undefined while it still works. */
export type Retirement = (now: number) => ApiError | undefined

/** From its sunset (00:00 UTC) on, and within its brownouts, a deprecated operation is gone;
 * undefined for an operation that is not deprecated. */
export function retirement(operation: Operation, contract: Contract): Retirement | undefined {
  if (operation.lifecycle.deprecation === undefined) return undefined
  const successorId = operation.lifecycle.deprecation.successor
  const successor = successorId === undefined ? undefined : contract.operations.get(successorId)!
  const successorText = successor === undefined ? '' : `: use ${successorId}, ${successor.method} ${contract.basePath}${successor.path}`
  return (now) => {
    const why = goneAt(operation.id, operation.lifecycle, now, successorText)
    return why === undefined ? undefined : new ApiError('gone', why)
  }
}
