/**
 * Whether the version changes between two neighbouring majors cover every breaking difference
 * the gate finds between their documents (scripts/check-breaking.ts): a difference no change
 * covers is a client of the older version answered in the newer one's shape, so
 * `npm run check:breaking` and the start refuse it, naming it and the change to write.
 *
 * A difference is covered
 * - when it is the version segment itself (a URL pattern under `/v1` that is `/v2` in the newer
 *   document): the derive layer moves every URL of an answer under the older base path;
 * - inside a schema (a property renamed in Pet, wherever it sits): by a change of that schema,
 *   or of one that holds it, that makes values older (`down`, for answers and events) or newer
 *   (`up`, for requests);
 * - elsewhere in an operation (its headers, its statuses): by a change of that operation of the
 *   older version (`operations`), or of a schema on the way to it; a new refusal (a 4xx the
 *   older version did not answer) by a change that says so (`sideEffects`); a query parameter
 *   the newer version lacks, by a change that renames it (`renamed`: the links the server writes
 *   name it too);
 * - an operation removed: by the change that names what serves it (`servedBy`);
 * - in an event: by a change of that event (`events`), or of a schema of its payload;
 * - what a deprecation documents (its 410, its Deprecation, Sunset and Link headers), when the
 *   operation is deprecated in either version: each document's own lifecycle, which the server
 *   serves from its markers.
 */
import type { Contract } from '../contract/model.js'
import { keysOf, resolvePointer } from '../contract/pointer.js'
import type { VersionChange } from './change.js'

/** One breaking difference between two neighbouring majors' documents, as the gate found it. */
export interface Difference {
  /** where, for people: `GET /pets`, `POST /pets`, `event pet.created`, `servers` */
  where: string
  /** the gate's rule (`property-removed`) */
  rule: string
  /** the place the rule judged, in the newer document (the older, for what it removed) */
  pointer: string
  /** the place in an operation or event that changed (`#/paths/~1pets/get/responses/200/...`) */
  path: string
  message: string
}

type Node = Record<string, unknown>

const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null

/** The node at `keys` in `document`, every `$ref` on the way followed, and the component schemas
 * passed through (`Pets`, `Pet`...); undefined where the document has no such place. */
function walk(document: unknown, keys: readonly string[]): { node: unknown; schemas: string[] } {
  const schemas: string[] = []
  const follow = (node: unknown): unknown => {
    for (let hops = 0; isNode(node) && typeof node.$ref === 'string' && hops < 10; hops++) {
      const [section, kind, name] = keysOf(node.$ref)
      if (section === 'components' && kind === 'schemas') schemas.push(name!)
      node = resolvePointer(document, node.$ref)
    }
    return node
  }
  let node = follow(document)
  for (const key of keys) node = follow(isNode(node) ? node[key] : undefined)
  return { node, schemas }
}

/** A node with every `$ref` in it replaced by what it names (a schema's whole shape, to compare). */
function inlined(document: unknown, node: unknown, depth = 0): unknown {
  if (Array.isArray(node)) return node.map((item) => inlined(document, item, depth))
  if (!isNode(node) || depth > 20) return node
  if (typeof node.$ref === 'string') return inlined(document, walk(document, keysOf(node.$ref)).node, depth + 1)
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, inlined(document, value, depth)]))
}

/** The breaking differences of `differences` that no change of `changes` covers between `older`
 * and the version after it, `newer`, one line each: the difference, and the change to write. */
export function uncovered(differences: readonly Difference[], older: Contract, newer: Contract, changes: readonly VersionChange[]): string[] {
  const major = older.version[0]
  const mine = changes.filter(({ version }) => version === major)
  const write = (what: string) => `no change of version ${major} covers it: write ${what} in a version change of version ${major} (src/versions/changes/)`
  const lines: string[] = []
  for (const difference of differences) {
    const why = uncoveredBecause(difference, older, newer, mine, write)
    if (why !== undefined) lines.push(`${difference.where}: ${difference.message} (${difference.rule} at ${difference.pointer}): ${why}`)
  }
  return lines
}

function uncoveredBecause(
  difference: Difference,
  older: Contract,
  newer: Contract,
  changes: readonly VersionChange[],
  write: (what: string) => string,
): string | undefined {
  const keys = keysOf(difference.path)
  const [section] = keys
  // (the servers of a new major end in its own segment: the gate holds them to it)
  if (section === 'servers') return undefined
  if (section !== 'paths' && section !== 'webhooks')
    return `${write('nothing')}: no change covers a difference outside the operations and events; make the documents agree there`
  if (onlyTheSegment(difference.path, older, newer)) return undefined
  const downwards = keys[3] === 'responses' || section === 'webhooks'
  const region = downwards ? 'down' : 'up'
  // the schemas on the way to it, outermost first, down to the one the gate judged (a change of
  // a schema inside that one cannot cover it)
  const judged = keysOf(difference.pointer)[2]
  const upTo = (names: string[]) => (names.includes(judged!) ? names.slice(0, names.indexOf(judged!) + 1) : names)
  const schemas = [...new Set([...upTo(walk(newer.document, keys).schemas), ...upTo(walk(older.document, keys).schemas)])]
  const schemaCovers = schemas.some((name) => changes.some((change) => change.schemas[name]?.[region] !== undefined))
  const inSchema = difference.pointer.startsWith('#/components/schemas/')
  // (the innermost schema on the way that both versions have)
  const both = (name: string) => older.document.components?.schemas?.[name] !== undefined && newer.document.components?.schemas?.[name] !== undefined
  const schemaWanted = `schemas: { ${schemas.findLast(both) ?? keysOf(difference.pointer)[2]}: { ${region} } }`
  if (section === 'webhooks') {
    const type = keys[1]!
    if (schemaCovers || changes.some((change) => change.events[type] !== undefined)) return undefined
    return write(inSchema ? schemaWanted : `events: { '${type}': ... }`)
  }
  const [, path, method] = keys
  const operationsAt = [...older.operations.values()].filter(
    (operation) => operation.path === path && (method === undefined || operation.method === method.toUpperCase()),
  )
  if (method === undefined || keys.length === 3) {
    // an operation, or a whole path, the newer version no longer has
    const unserved = operationsAt.filter(({ id }) => !changes.some((change) => change.servedBy[id] !== undefined))
    return unserved.length === 0
      ? undefined
      : write(unserved.map(({ id }) => `servedBy: { ${id}: 'the operation of version ${newer.version[0]} that serves it' }`).join(', '))
  }
  if (schemaCovers) return undefined
  if (inSchema) return write(schemaWanted)
  if (lifecyclePart(keys) && [older, newer].some((contract) => deprecatedAt(contract, path!, method))) return undefined
  const operation = operationsAt[0]
  // (an operation the older version does not have is an addition, which breaks no one)
  if (operation === undefined) return undefined
  // (a refusal is not an answer a change makes older: the handler does otherwise for the older version)
  const refusal = keys[3] === 'responses' && keys.length === 5 && /^4/.test(keys[4]!)
  if (refusal)
    return changes.some((change) => change.sideEffects?.[operation.id] !== undefined)
      ? undefined
      : write(`sideEffects: { ${operation.id}: 'what version ${older.version[0]} does instead' }, asked by the handler as inForce(request)`)
  // a query parameter the newer version lacks: renamed, so that the links the server writes of
  // the operation (a next page, a Location) name it as the older version does
  const parameter = keys[3] === 'parameters' ? (walk(older.document, keys).node as { in?: string; name?: string } | undefined) : undefined
  if (parameter?.in === 'query') {
    const name = parameter.name!
    if (changes.some((change) => change.operations[operation.id]?.renamed?.[name] !== undefined)) return undefined
    return write(`operations: { ${operation.id}: { renamed: { ${name}: 'its name in version ${newer.version[0]}' } } }`)
  }
  if (changes.some((change) => change.operations[operation.id]?.[region] !== undefined)) return undefined
  return write(`operations: { ${operation.id}: { ${region} } }`)
}

/** The headers a deprecated operation's answers carry (RFC 9745, RFC 8594, RFC 8288). */
const lifecycleHeaders = new Set(['deprecation', 'sunset', 'link'])

/** Whether the place at `keys` (of an operation) is what a deprecation documents: its 410, or a
 * lifecycle header of a response. Each version's document says it of its own operations, and
 * the server sends it from that document's markers: no change makes it. */
const lifecyclePart = (keys: readonly string[]) =>
  keys[3] === 'responses' && ((keys[4] === '410' && keys.length === 5) || (keys[5] === 'headers' && lifecycleHeaders.has(String(keys[6]).toLowerCase())))

/** Whether `contract`'s operation at `path` and `method` is deprecated. */
const deprecatedAt = (contract: Contract, path: string, method: string) =>
  [...contract.operations.values()].some(
    (operation) => operation.path === path && operation.method === method.toUpperCase() && operation.lifecycle.deprecation !== undefined,
  )

/** Whether the older and newer values at `path` differ by the version segment alone. */
function onlyTheSegment(path: string, older: Contract, newer: Contract): boolean {
  const keys = keysOf(path)
  const before = walk(older.document, keys).node
  const after = walk(newer.document, keys).node
  if (before === undefined || after === undefined) return false
  const moved = JSON.stringify(inlined(older.document, before)).replaceAll(`${older.basePath}/`, `${newer.basePath}/`)
  return moved === JSON.stringify(inlined(newer.document, after))
}

/**
 * An overlay and its version changes are the two halves of the same breaking changes, and each
 * names the other: the changes of `older`'s version (`changes`) that no action of its overlay
 * names (`x-change`), and the names its actions give that no change of that version has, each
 * said. Nothing for a document written whole (the newest).
 */
export function unpairedHalves(older: Contract, changes: readonly VersionChange[]): string[] {
  const named = older.overlayChanges
  if (named === undefined) return []
  const major = older.version[0]
  const declared = new Set(changes.filter(({ version }) => version === major).map(({ name }) => name))
  return [
    ...[...declared]
      .filter((name) => !named.includes(name))
      .map(
        (name) =>
          `version change ${name} of version ${major} is named by no action of ${older.file}: the overlay carries its contract half (x-change: ${name} on the actions that set back what it changes)`,
      ),
    ...named
      .filter((name) => !declared.has(name))
      .map((name) => `${older.file} names the version change ${name} (x-change), which src/versions/changes/ does not declare for version ${major}`),
  ]
}
