/** JSON Pointers (RFC 6901) into an OpenAPI document, and the `$ref`s that hold them. */

/** One key as a pointer writes it: `~` and `/` escaped. */
const escapeKey = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1')

/** One key of a pointer as the document names it. */
const unescapeKey = (part: string) => part.replaceAll('~1', '/').replaceAll('~0', '~')

/** `#/paths/~1pets/get` from `['paths', '/pets', 'get']`. */
export const pointerTo = (keys: readonly (string | number)[]) => `#/${keys.map((key) => escapeKey(String(key))).join('/')}`

/** The keys of a local pointer (`#/paths/~1pets/get` → `['paths', '/pets', 'get']`). */
export const keysOf = (pointer: string): string[] => {
  const path = pointer.replace(/^#\/?/, '')
  return path === '' ? [] : path.split('/').map(unescapeKey)
}

/** What a local pointer reaches in `document`, or undefined. */
export function resolvePointer(document: unknown, pointer: string): unknown {
  return keysOf(pointer).reduce<unknown>(
    (node, key) => (typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[key] : undefined),
    document,
  )
}

/** A node, with its local `$ref`s (`#/components/...`) followed; a `$ref` to nothing throws. */
export function deref<T>(document: unknown, node: T | { $ref: string }): T {
  let found: unknown = node
  // (a cycle of $refs is not a document anyone could serve: ten hops end it)
  for (let hops = 0; typeof found === 'object' && found !== null && '$ref' in found; hops++) {
    const ref = found.$ref
    const next = typeof ref === 'string' && ref.startsWith('#') && hops < 10 ? resolvePointer(document, ref) : undefined
    if (next === undefined) throw new Error(`${String(ref)} points to nothing`)
    found = next
  }
  return found as T
}
