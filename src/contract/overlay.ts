/**
 * An OpenAPI Overlay (Overlay Specification 1.0.0) applied to a parsed document: the way an older
 * major version is made from the next newer one (contract/versions/N.overlay.yaml).
 *
 * As the specification says: the actions in order, each `target` (an RFC 9535 JSONPath, json-p3)
 * evaluated on the document as the actions before it left it; `update` merged into each node
 * selected, `remove: true` taking each out of the object or array holding it. A target that selects
 * nothing changes nothing (the specification allows zero nodes): the result names such actions, so
 * that a caller can refuse an overlay that no longer fits its document.
 *
 * Merging, as 1.1.0 spells out what 1.0.0 calls recursive merging: a property only in the update
 * is added after the node's own (an existing one keeps its place), two objects are merged, two
 * arrays concatenated, a primitive replaces a primitive, and any other pair is refused. On an array
 * target, `update` is an entry appended to it. Stricter than some tools, refused rather than
 * guessed: a target that selects a primitive or null (1.0.0: targets are objects or arrays), an
 * array `update` on an array target (appended as one entry by 1.0.0, concatenated by 1.1.0), an
 * action with both `update` and `remove: true` or neither, fields the specification does not
 * define (but `x-` extensions), and removing the document itself.
 */
import { jsonpath, type JSONPathNode, type JSONPathQuery, type JSONValue } from 'json-p3'

type Json = JSONValue
type JsonObject = { [key: string]: Json }

export interface OverlayAction {
  target: string
  description?: string
  update?: unknown
  remove?: boolean
}

export interface Overlay {
  overlay: string
  info: { title: string; version: string }
  extends?: string
  actions: OverlayAction[]
}

export interface Applied {
  document: unknown
  /** the actions whose target selected nothing, as `actions[i] (target)` */
  unmatched: string[]
}

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value)
const describe = (value: unknown) =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`

/** `object`'s fields are `known` ones and `x-` extensions, else an error naming the others */
function onlyKnown(object: JsonObject, known: string[], where: string): void {
  const unknown = Object.keys(object).filter((key) => !known.includes(key) && !key.startsWith('x-'))
  if (unknown.length > 0) throw new Error(`${where} has ${unknown.join(', ')}, which Overlay 1.0.0 does not define`)
}

/** `value` as an Overlay 1.0 document with its targets compiled, or an error saying what is wrong and where. */
export function overlayOf(value: unknown, name = 'overlay'): { overlay: Overlay; targets: JSONPathQuery[] } {
  if (!isObject(value)) throw new Error(`${name}: an overlay is an object, not ${describe(value)}`)
  onlyKnown(value, ['overlay', 'info', 'extends', 'actions'], name)
  if (typeof value.overlay !== 'string' || !/^1\.0\.\d+$/.test(value.overlay))
    throw new Error(`${name}: overlay is ${JSON.stringify(value.overlay) ?? 'missing'}: this applier reads Overlay 1.0.x (overlay: 1.0.0)`)
  const info = value.info
  if (!isObject(info) || typeof info.title !== 'string' || typeof info.version !== 'string')
    throw new Error(`${name}: info must be an object with a title and a version (strings)`)
  onlyKnown(info, ['title', 'version'], `${name}: info`)
  if ('extends' in value && typeof value.extends !== 'string') throw new Error(`${name}: extends must be a string (a URI reference)`)
  if (!Array.isArray(value.actions) || value.actions.length === 0) throw new Error(`${name}: actions must be a list of at least one action`)
  const targets = value.actions.map((action, index) => {
    const where = `${name}: actions[${index}]`
    if (!isObject(action)) throw new Error(`${where} is ${describe(action)}, not an object`)
    onlyKnown(action, ['target', 'description', 'update', 'remove'], where)
    if (typeof action.target !== 'string') throw new Error(`${where} has no target (a JSONPath, a string)`)
    if ('description' in action && typeof action.description !== 'string') throw new Error(`${where} (${action.target}): description must be a string`)
    if ('remove' in action && typeof action.remove !== 'boolean') throw new Error(`${where} (${action.target}): remove must be true or false`)
    if ('update' in action === (action.remove === true)) throw new Error(`${where} (${action.target}): an action has exactly one of update and remove: true`)
    try {
      return jsonpath.compile(action.target)
    } catch (error) {
      throw new Error(`${where}: target ${action.target} is not an RFC 9535 JSONPath: ${(error as Error).message}`)
    }
  })
  return { overlay: value as unknown as Overlay, targets }
}

const isPrimitive = (value: unknown) => typeof value !== 'object' || value === null

/** `update` merged into `node` (in place), or an error naming the first pair that cannot merge (at `where`). */
function merge(node: JsonObject, update: JsonObject, where: string): void {
  for (const [key, value] of Object.entries(update)) {
    const own = node[key]
    if (!Object.hasOwn(node, key)) Object.defineProperty(node, key, { value: structuredClone(value), enumerable: true, writable: true, configurable: true })
    else if (isObject(own) && isObject(value)) merge(own, value, `${where}['${key}']`)
    else if (Array.isArray(own) && Array.isArray(value)) own.push(...structuredClone(value))
    else if (isPrimitive(own) && isPrimitive(value)) node[key] = value
    else throw new Error(`${where}['${key}'] is ${describe(own)}: the update's ${describe(value)} cannot be merged with it`)
  }
}

/** the node at `location` in `document` */
const at = (document: Json, location: Array<string | number>): Json => location.reduce<Json>((node, key) => (node as JsonObject)[key]!, document)

/** each of `nodes` taken out of the object or array holding it: every parent found first, an array's indexes removed from the last */
function removeAll(document: Json, nodes: JSONPathNode[], where: string): void {
  const keysOf = new Map<JsonObject | Json[], Set<string | number>>()
  for (const { location } of nodes) {
    if (location.length === 0) throw new Error(`${where}: the document itself cannot be removed`)
    const parent = at(document, location.slice(0, -1)) as JsonObject | Json[]
    keysOf.set(parent, (keysOf.get(parent) ?? new Set()).add(location.at(-1)!))
  }
  for (const [parent, keys] of keysOf)
    if (Array.isArray(parent)) for (const index of [...keys].sort((a, b) => (b as number) - (a as number))) parent.splice(index as number, 1)
    else for (const key of keys) delete parent[key]
}

/**
 * `overlay` (parsed: an Overlay 1.0 document) applied to a copy of `document` (parsed); `name`
 * begins each error's message (the overlay's file, say). The document given is left as it was.
 */
export function applyOverlay(document: unknown, overlay: unknown, name = 'overlay'): Applied {
  const { overlay: checked, targets } = overlayOf(overlay, name)
  const result = structuredClone(document) as Json
  const unmatched: string[] = []
  checked.actions.forEach((action, index) => {
    const where = `${name}: actions[${index}] (${action.target})`
    const nodes = targets[index]!.query(result).nodes
    if (nodes.length === 0) unmatched.push(`actions[${index}] (${action.target})`)
    for (const node of nodes)
      if (isPrimitive(node.value))
        throw new Error(`${where} selects ${describe(node.value)} at ${node.getPath({ form: 'canonical' })}: Overlay 1.0.0 targets objects and arrays only`)
    if (action.remove === true) return removeAll(result, nodes, where)
    for (const node of nodes) {
      const here = `${where} at ${node.getPath({ form: 'canonical' })}`
      if (Array.isArray(node.value)) {
        if (Array.isArray(action.update))
          throw new Error(`${here}: an array update on an array is one entry in Overlay 1.0.0, its entries in 1.1.0: write it otherwise`)
        node.value.push(structuredClone(action.update as Json))
      } else if (isObject(action.update)) merge(node.value as JsonObject, action.update, here)
      else throw new Error(`${here}: the node is an object, the update ${describe(action.update)}: an object's update is an object`)
    }
  })
  return { document: result, unmatched }
}
