// Spectral functions of the lifecycle rules in .spectral.yaml: what a deprecated operation must
// carry (docs/compatibility.md). The notice periods are read from contract/lifecycle-policy.yaml,
// the one place that holds them.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

// (Spectral bundles its functions, without import.meta: `npm run lint:owasp` runs at the root)
const policyText = readFileSync(join(process.cwd(), 'contract', 'lifecycle-policy.yaml'), 'utf8')
/** `noticeDays:` then `  beta: 30`, `  stable: 180` (the file's own shape, read without a YAML library) */
const noticeDays = Object.fromEntries([...policyText.matchAll(/^\s+(beta|stable):\s*(\d+)\s*$/gm)].map(([, level, days]) => [level, Number(days)]))

const day = (value) => {
  const date = new Date(`${String(value)}T00:00:00Z`)
  return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value ? undefined : date
}

/** x-sunset at or after x-deprecated-at plus the notice period of the operation's level. */
export function sunsetNotice(operation) {
  if (operation?.deprecated !== true) return []
  const deprecatedAt = day(operation['x-deprecated-at'])
  const sunset = day(operation['x-sunset'])
  if (sunset === undefined) return [{ message: 'a deprecated operation needs x-sunset, a date YYYY-MM-DD' }]
  if (deprecatedAt === undefined) return []
  const level = operation['x-stability'] === 'beta' || operation['x-stability'] === 'experimental' ? operation['x-stability'] : 'stable'
  const days = noticeDays[level] ?? 0
  if (sunset.getTime() < deprecatedAt.getTime() + days * 86_400_000) {
    return [{ message: `x-sunset ${operation['x-sunset']} is less than ${days} days (the ${level} notice period, contract/lifecycle-policy.yaml) after x-deprecated-at ${operation['x-deprecated-at']}` }]
  }
  return []
}

/** x-successor names an operation of the document, or x-successor-reason says why there is none. */
export function successor(operation, _options, context) {
  if (operation?.deprecated !== true) return []
  const name = operation['x-successor']
  if (name === undefined) {
    return typeof operation['x-successor-reason'] === 'string' && operation['x-successor-reason'].trim() !== ''
      ? []
      : [{ message: 'a deprecated operation names its x-successor (an operationId), or says in x-successor-reason why there is none' }]
  }
  const ids = new Set()
  for (const item of Object.values(context.document.data.paths ?? {})) for (const op of Object.values(item ?? {})) if (op?.operationId) ids.add(op.operationId)
  return ids.has(name) ? [] : [{ message: `x-successor ${name} names no operation of this document` }]
}

/** Every response documents Deprecation, Sunset and Link (but the 408), and the 410 of the
 * sunset is there. */
export function retirementDocumented(operation, _options, context) {
  if (operation?.deprecated !== true) return []
  const resolve = (node) => {
    let found = node
    for (let hops = 0; found?.$ref !== undefined && hops < 10; hops++) {
      found = found.$ref.slice(2).split('/').reduce((parent, key) => parent?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], context.document.data)
    }
    return found
  }
  const responses = operation.responses ?? {}
  const problems = []
  if (responses['410'] === undefined) problems.push({ message: 'a deprecated operation documents its 410 (gone, from its sunset on)', path: [...context.path, 'responses'] })
  for (const [status, response] of Object.entries(responses)) {
    // (a 408 is the server's answer to a request that did not arrive: no operation was known)
    if (status === '408') continue
    const headers = Object.keys(resolve(response)?.headers ?? {})
    const missing = ['Deprecation', 'Sunset', 'Link'].filter((header) => !headers.includes(header))
    if (missing.length > 0) problems.push({ message: `response ${status} does not document ${missing.join(', ')}`, path: [...context.path, 'responses', status] })
  }
  return problems
}
