/**
 * What the breaking-change gate asks of an operation's lifecycle (docs/compatibility.md): which
 * operations a change of redocly diff touches, at what level each was released, and whether
 * that level lets the change through within the major version. Also the lifecycle changes
 * redocly does not see: a demotion, a sunset moved earlier. Every lifecycle is read by the
 * contract model (src/contract/lifecycle.ts).
 */
import { dayMs, type Lifecycle, type NoticeDays, rank } from '../src/contract/lifecycle.js'
import { readContract } from '../src/contract/model.js'
import { keysOf } from '../src/contract/pointer.js'
import type { OpenAPIV3 } from 'openapi-types'

type Node = Record<string, any>
export interface ReleasedOperation {
  /** `GET /pets/{petId}`, or `WEBHOOK pet.created` */
  name: string
  /** its operationId, or the event's type */
  id: string
  /** its JSON pointer in the document, `#/paths/~1pets~1{petId}/get` */
  pointer: string
  lifecycle: Lifecycle
  /** the components (`#/components/schemas/Pet`) it reaches, through $refs */
  uses: Set<string>
}

/** Every operation of a document, its paths' and its webhooks', with its lifecycle as the
 * contract model reads it (a released document under the rules of its day: problems are not
 * the gate's to judge in it) and the components it uses. */
export function operationsOf(document: Node): ReleasedOperation[] {
  const { contract } = readContract(document as OpenAPIV3.Document)
  const reached = new Map<string, Set<string>>()
  const refsIn = (node: unknown, into: Set<string>) => {
    if (typeof node !== 'object' || node === null) return
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/')) {
        const component = value.split('/').slice(0, 4).join('/')
        if (!into.has(component)) {
          into.add(component)
          for (const inner of componentRefs(component)) into.add(inner)
        }
      } else refsIn(value, into)
    }
  }
  const componentRefs = (component: string): Set<string> => {
    const known = reached.get(component)
    if (known) return known
    const found = new Set<string>()
    reached.set(component, found)
    const [, kind, name] = keysOf(component)
    refsIn(document.components?.[kind!]?.[name!], found)
    return found
  }
  const used = (definition: unknown, pathItem: Node | undefined) => {
    const uses = new Set<string>()
    refsIn(definition, uses)
    refsIn(pathItem?.parameters, uses)
    return uses
  }
  return [
    ...[...contract.operations.values()].map(({ id, method, path, pointer, definition, lifecycle }) => ({
      name: `${method} ${path}`,
      id,
      pointer,
      lifecycle,
      uses: used(definition, document.paths?.[path]),
    })),
    ...[...contract.events.values()].map(({ type, pointer, definition, lifecycle }) => ({
      name: `WEBHOOK ${type}`,
      id: type,
      pointer,
      lifecycle,
      uses: used(definition, undefined),
    })),
  ]
}

/** The operations a change touches: those at or under its place, and the users of the
 * component its verdict names, when that component changed (`changed`: a verdict also names the
 * component an operation's `$ref` now points to, which its other users see as it was). None: a
 * change outside every operation (servers, info). */
export function touched(
  operations: ReleasedOperation[],
  changePath: string,
  verdictPointers: string[],
  changed: (component: string) => boolean,
): ReleasedOperation[] {
  const under = (pointer: string, prefix: string) => pointer === prefix || pointer.startsWith(`${prefix}/`)
  return operations.filter(
    (operation) =>
      under(operation.pointer, changePath) ||
      under(changePath, operation.pointer) ||
      verdictPointers.some(
        (pointer) => under(pointer, operation.pointer) || [...operation.uses].some((component) => under(pointer, component) && changed(component)),
      ),
  )
}

/** Whether a component (`#/components/headers/LifecycleLink`) differs from `base` to `revision`. */
export const componentChanged =
  (base: Node, revision: Node) =>
  (component: string): boolean => {
    const [, kind, name] = keysOf(component)
    return JSON.stringify(base.components?.[kind!]?.[name!]) !== JSON.stringify(revision.components?.[kind!]?.[name!])
  }

export interface Judgement {
  /** let through, and why (`experimental`, `sunset 2030-12-05 passed`); undefined: breaking */
  allowed?: string
  /** why not, when it is not obvious (a deprecation that does not count yet) */
  why?: string
}

const day = (date: Date) => date.toISOString().slice(0, 10)

/**
 * Whether a change (a removal or not) of one operation may pass within the major version:
 * `released` is the lifecycle of the operation as the latest release that has it describes it.
 */
export function judge(released: Lifecycle, removal: boolean, noticeDays: NoticeDays, now: Date): Judgement {
  const { level, deprecation } = released
  if (level === 'experimental') return { allowed: 'experimental' }
  if (level === 'stable' && !removal) return {}
  if (deprecation === undefined) return { why: `${level}: only a released deprecation with a passed sunset lets it go` }
  if (deprecation.at === undefined || deprecation.sunset === undefined) return { why: `${level}, deprecated without both x-deprecated-at and x-sunset` }
  const notice = noticeDays[level]
  if (deprecation.sunset.getTime() - deprecation.at.getTime() < notice * dayMs) {
    return { why: `${level}: its sunset ${day(deprecation.sunset)} was less than ${notice} days after its deprecation ${day(deprecation.at)}` }
  }
  if (now < deprecation.sunset) return { why: `${level}, deprecated, but its sunset ${day(deprecation.sunset)} has not passed` }
  return { allowed: `${level}, sunset ${day(deprecation.sunset)} passed` }
}

/**
 * Whether a change is to the Link of a response of an operation that the revision deprecates and
 * `operation`'s release did not: deprecating it adds its lifecycle links to every answer's Link
 * (after a next page's, one field, RFC 8288), so the documented Link changes with it (and the
 * contract model holds it to what the server sends). Undefined for any other change.
 */
export function deprecationLink(operation: ReleasedOperation, changePath: string, revision: ReadonlyMap<string, Lifecycle>): Judgement | undefined {
  const place = changePath.slice(operation.pointer.length)
  const atLink = changePath.startsWith(operation.pointer) && /^\/responses\/[^/]+\/headers\/Link(\/|$)/.test(place)
  const deprecatedNow = operation.lifecycle.deprecation === undefined && revision.get(operation.name)?.deprecation !== undefined
  return atLink && deprecatedNow ? { allowed: 'deprecated: its Link carries its lifecycle links' } : undefined
}

/** Demotions and sunsets moved earlier, from `released` to `revision`: one line each. */
export function lifecycleBreaks(released: ReleasedOperation[], revision: ReleasedOperation[]): string[] {
  const now = new Map(revision.map((operation) => [operation.name, operation.lifecycle]))
  return released.flatMap(({ name, lifecycle: was }) => {
    const is = now.get(name)
    if (is === undefined) return []
    const lines: string[] = []
    if (rank(is.level) < rank(was.level)) lines.push(`  ${name}: demoted from ${was.level} to ${is.level} (x-stability)`)
    // (an experimental operation promised no date)
    const promised = was.deprecation?.sunset
    const moved = is.deprecation?.sunset
    if (was.level !== 'experimental' && promised !== undefined && moved !== undefined && moved < promised) {
      lines.push(`  ${name}: x-sunset moved earlier, from ${day(promised)} to ${day(moved)}: clients were promised that date`)
    }
    return lines
  })
}
