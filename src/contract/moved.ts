/**
 * Where a newer version does what an older one did at a path the newer no longer has. A client
 * that moves to version 2 by changing `/v1` to `/v2` in its URLs meets version 1's getPet
 * (`/v2/pets/7`), which version 2 dropped: its 404 says `GET /v2/pets?id=7`. Read from the
 * contracts alone: the older version's operation at the same path under its own base path, its
 * successor (`x-successor`, with `x-successor-parameters`), and the operation of that id in the
 * newer version, given those of the successor's query parameters it declares too.
 */
import type { Contract, RequestValues } from './model.js'

/** What a 404 at `path` (of the version whose base path it is under, which has no such path) adds
 * to its message: which older version's operation the path is, and the request of the newer
 * version that does it; undefined when no older version has the path. Oldest last: the newest
 * older version that has the path is the one named. */
export function movedFrom(contracts: readonly Contract[], method: string, path: string, query: RequestValues['query'] = {}): string | undefined {
  const newer = contracts.find(({ basePath }) => path.startsWith(`${basePath}/`))
  if (newer === undefined || newer.methodsAt(path) !== undefined) return undefined
  const rest = path.slice(newer.basePath.length)
  const older = contracts.filter(({ version }) => version[0] < newer.version[0]).reverse()
  for (const contract of older) {
    const olderPath = `${contract.basePath}${rest}`
    const operation = contract.operationAt(method, olderPath)
    if (operation === undefined) continue
    const was = `: version ${newer.version[0]} has no such path; it is version ${contract.version[0]}'s ${operation.id}, ${operation.method} ${olderPath}`
    const successorId = operation.lifecycle.deprecation?.successor
    const successor = successorId === undefined ? undefined : newer.operations.get(successorId)
    if (successor === undefined) return was
    // (the older successor's URL, its query kept where the newer operation takes the parameter)
    const url = new URL(contract.successorUrl(operation, { params: contract.pathParamsOf(operation, olderPath), query })!, 'http://localhost')
    const taken = new Set(successor.parameters.filter((parameter) => parameter.in === 'query').map(({ name }) => name))
    for (const name of [...url.searchParams.keys()]) if (!taken.has(name)) url.searchParams.delete(name)
    return `${was}; version ${newer.version[0]} does it with ${successor.id}, ${successor.method} ${newer.basePath}${successor.path}${url.search}`
  }
  return undefined
}
