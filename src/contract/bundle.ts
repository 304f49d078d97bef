/**
 * A served document made of its sources: a version's own document (openapi.yaml,
 * openapi-vN.yaml) and the parts versions share, written once in contract/shared/. What is
 * served, released, generated and linted is the bundle, one document with local `$ref`s only;
 * every tool makes it here, from the same sources (docs/changing-the-api.md).
 *
 * - A `$ref` to a shared file (`contract/shared/orders.yaml#/paths/~1store~1orders`, a path item,
 *   an event, `x-service`) is replaced by what it points to.
 * - A component named by a local `$ref` (`#/components/schemas/Pet`), in the version's document
 *   or in a shared part, is the version's own when its document has one, and else the one the
 *   shared files define (each name once among them): a version forks a shared component by
 *   writing its own. The bundle holds the version's own components, then the shared ones it uses,
 *   in the order the shared files write them. A security scheme is taken by its name in `security`.
 */
import { dirname, join, relative } from 'node:path'
import { keysOf, resolvePointer } from './pointer.js'

/** A node of a parsed document: an object, an array or a scalar. */
type Json = unknown
/** An object of a document, by its keys. */
type Fields = Record<string, Json>
/** The components of a document, by section (`schemas`, `responses`…) and name. */
type Components = Record<string, Fields>

export interface Sources {
  /** the version's document, as its path names it */
  root: string
  /** the shared files, the pool of shared components */
  shared: readonly string[]
  /** a source file's document, parsed */
  read: (path: string) => Json
}

const componentRef = /^#\/components\/([^/]+)\/([^/]+)$/

/** The bundle of a version's document with the shared files: one document, its `$ref`s local;
 * and the files it took anything from (the document's own first). */
export function bundle({ root, shared, read }: Sources): { document: Fields; files: string[] } {
  // (files named in messages as the project names them: beside the version's document)
  const named = (file: string) => relative(dirname(root), file)
  const document = read(root) as Fields
  const used = new Set([root])
  const own = (document.components ?? {}) as Components
  // each shared component, by section and name, where it is written
  const pool = new Map<string, { file: string; node: Json; order: number }>()
  for (const file of shared) {
    for (const [section, entries] of Object.entries(((read(file) as Fields).components ?? {}) as Components)) {
      for (const [name, node] of Object.entries(entries)) {
        const key = `${section}/${name}`
        const there = pool.get(key)
        if (there !== undefined) throw new Error(`${named(file)}: components/${key} is written in ${named(there.file)} too: a shared component is written once`)
        pool.set(key, { file, node, order: pool.size })
      }
    }
  }
  const taken = new Map<string, Json>()
  const take = (section: string, name: string, from: string) => {
    const key = `${section}/${name}`
    if (own[section]?.[name] !== undefined || taken.has(key)) return
    const found = pool.get(key)
    if (found === undefined) throw new Error(`${named(from)}: #/components/${key} is neither in ${named(root)} nor in the shared files`)
    taken.set(key, undefined)
    used.add(found.file)
    taken.set(key, copy(found.node, found.file))
  }
  const copy = (node: Json, file: string): Json => {
    if (Array.isArray(node)) return node.map((item) => copy(item, file))
    if (typeof node !== 'object' || node === null) return node
    const { $ref } = node as Fields
    if (typeof $ref === 'string') {
      const [target, pointer = ''] = $ref.split('#') as [string, string?]
      if (target === '') {
        const component = componentRef.exec(`#${pointer}`)
        if (component !== null) take(component[1]!, keysOf(`#/${component[2]!}`)[0]!, file)
        else if (file !== root) throw new Error(`${named(file)}: ${$ref}: a shared part names components only (#/components/...)`)
        return { ...node }
      }
      const path = join(dirname(file), target)
      if (componentRef.test(`#${pointer}`)) throw new Error(`${named(file)}: ${$ref}: a shared component is named by its local $ref (#${pointer})`)
      if (Object.keys(node).length > 1) throw new Error(`${named(file)}: ${$ref}: a $ref to a shared part stands alone`)
      const found = resolvePointer(read(path), `#${pointer}`)
      if (found === undefined) throw new Error(`${named(file)}: ${$ref} points to nothing`)
      used.add(path)
      return copy(found, path)
    }
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, copy(value, file)]))
  }
  const made = copy(document, root) as Fields
  // the security schemes are named, not referred to
  const requirements = [
    ...((document.security ?? []) as object[]),
    ...Object.values((made.paths ?? {}) as Record<string, Components>).flatMap((item) =>
      Object.values(item).flatMap((operation) => (operation.security ?? []) as object[]),
    ),
  ]
  for (const name of new Set(requirements.flatMap((requirement) => Object.keys(requirement)))) take('securitySchemes', name, root)
  const components: Components = { ...(made.components as Components | undefined) }
  for (const key of [...taken.keys()].sort((a, b) => pool.get(a)!.order - pool.get(b)!.order)) {
    const [section, name] = key.split('/') as [string, string]
    components[section] = { ...components[section], [name]: taken.get(key) }
  }
  return { document: Object.keys(components).length === 0 ? made : { ...made, components }, files: [...used] }
}
