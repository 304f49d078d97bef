/**
 * Where a value of a document's schema holds the component schemas a version change transforms
 * (a Pet in a page of Pets, in an event's `data`): one function, made once per operation, status
 * and event at start, that applies each transform where its schema sits, or none where the
 * schema holds none of them.
 */
import { deref, resolvePointer } from '../contract/pointer.js'

/** A value made older or newer (each change is typed where it is written: change.ts). */
export type Transform = (value: unknown) => unknown

type Node = Record<string, unknown>

/** The name of the component schema a `$ref` names (`#/components/schemas/Pet`), if it does. */
function componentOf(ref: string): string | undefined {
  return /^#\/components\/schemas\/([^/]+)$/.exec(ref)?.[1]?.replaceAll('~1', '/').replaceAll('~0', '~')
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** `first`, then `second`, of the ones there are. */
function then(first: Transform | undefined, second: Transform | undefined): Transform | undefined {
  if (first === undefined || second === undefined) return first ?? second
  return (value) => second(first(value))
}

/**
 * The transform of values of `schema` (a node of `document`) that applies `transforms`, by
 * component schema name, wherever those schemas sit in it; undefined when none sits in it. A
 * schema's own transform comes before those of the schemas inside it: it is given the value as
 * that version has it, and passes on what it does not change. Under `oneOf` or `anyOf`, which
 * branch a value is of cannot be told: a transformed schema there is refused.
 */
export function transformOf(document: unknown, schema: unknown, transforms: ReadonlyMap<string, Transform>): Transform | undefined {
  if (transforms.size === 0) return undefined
  // (each component once: a schema that holds itself gets the transform being made, when made)
  const made = new Map<string, Transform | undefined | 'making'>()
  const walk = (node: unknown, at: string): Transform | undefined => {
    if (!isObject(node)) return undefined
    if (typeof node.$ref === 'string') {
      const name = componentOf(node.$ref)
      // (one step at a time: a $ref to a $ref of a schema still names the schema)
      if (name === undefined) return walk(resolvePointer(document, node.$ref), at)
      const known = made.get(name)
      if (known === 'making') return (value) => (made.get(name) as Transform | undefined)?.(value) ?? value
      if (made.has(name)) return known
      made.set(name, 'making')
      const transform = then(transforms.get(name), walk(deref(document, node), `#/components/schemas/${name}`))
      made.set(name, transform)
      return transform
    }
    let transform: Transform | undefined
    for (const branch of (node.allOf as unknown[] | undefined) ?? []) transform = then(transform, walk(branch, at))
    for (const keyword of ['oneOf', 'anyOf'] as const) {
      for (const branch of (node[keyword] as unknown[] | undefined) ?? []) {
        if (walk(branch, at) !== undefined)
          throw new Error(`${at}: a schema a version change transforms is under ${keyword}, where which branch a value is of cannot be told`)
      }
    }
    const items = walk(node.items, at)
    if (items !== undefined) transform = then(transform, (value) => (Array.isArray(value) ? value.map(items) : value))
    for (const [key, property] of Object.entries((node.properties as Node | undefined) ?? {})) {
      const inner = walk(property, at)
      if (inner !== undefined)
        transform = then(transform, (value) => (isObject(value) && value[key] !== undefined ? { ...value, [key]: inner(value[key]) } : value))
    }
    const values = walk(node.additionalProperties, at)
    if (values !== undefined) {
      const declared = new Set(Object.keys((node.properties as Node | undefined) ?? {}))
      const each = ([key, item]: [string, unknown]) => [key, declared.has(key) ? item : values(item)]
      transform = then(transform, (value) => (isObject(value) ? Object.fromEntries(Object.entries(value).map(each)) : value))
    }
    return transform
  }
  return walk(schema, '#')
}
