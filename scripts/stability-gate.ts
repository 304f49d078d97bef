/**
 * What the breaking-change gate asks of an operation's lifecycle (docs/compatibility.md): which
 * operations a change of redocly diff touches, at what level each was released, and whether
 * that level lets the change through within the major version. Also the lifecycle changes
 * redocly does not see: a demotion, a sunset moved earlier.
 */
import { dayMs, dayOf, type LifecyclePolicy, type Level, levelOf, rank } from './lifecycle-policy.js'

type Node = Record<string, any>
export interface ReleasedOperation {
  /** `GET /pets/{petId}`, or `WEBHOOK pet.created` */
  name: string
  /** its JSON pointer in the document, `#/paths/~1pets~1{petId}/get` */
  pointer: string
  definition: Node
  /** the components (`#/components/schemas/Pet`) it reaches, through $refs */
  uses: Set<string>
}

const httpMethods = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])
const escape = (part: string) => part.replaceAll('~', '~0').replaceAll('/', '~1')

/** Every operation of a document, its paths' and its webhooks', with the components it uses. */
export function operationsOf(document: Node): ReleasedOperation[] {
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
    const [, , kind, name] = component.split('/')
    refsIn(document.components?.[kind!]?.[name!.replaceAll('~1', '/').replaceAll('~0', '~')], found)
    return found
  }
  const operations: ReleasedOperation[] = []
  for (const section of ['paths', 'webhooks'] as const) {
    for (const [path, item] of Object.entries<Node>(document[section] ?? {})) {
      for (const [method, definition] of Object.entries<Node>(item)) {
        if (!httpMethods.has(method)) continue
        const uses = new Set<string>()
        refsIn(definition, uses)
        refsIn(item.parameters, uses)
        const name = section === 'paths' ? `${method.toUpperCase()} ${path}` : `WEBHOOK ${path}`
        operations.push({ name, pointer: `#/${section}/${escape(path)}/${method}`, definition, uses })
      }
    }
  }
  return operations
}

/** The operations a change touches: those at or under its place, and the users of the
 * component its verdict names. None: a change outside every operation (servers, info). */
export function touched(operations: ReleasedOperation[], changePath: string, verdictPointers: string[]): ReleasedOperation[] {
  const under = (pointer: string, prefix: string) => pointer === prefix || pointer.startsWith(`${prefix}/`)
  return operations.filter(
    (operation) =>
      under(operation.pointer, changePath) ||
      under(changePath, operation.pointer) ||
      verdictPointers.some((pointer) => under(pointer, operation.pointer) || [...operation.uses].some((component) => under(pointer, component))),
  )
}

export interface Judgement {
  /** let through, and why (`experimental`, `sunset 2030-12-05 passed`); undefined: breaking */
  allowed?: string
  /** why not, when it is not obvious (a deprecation that does not count yet) */
  why?: string
}

/**
 * Whether a change (a removal or not) of one operation may pass within the major version:
 * `released` is the operation as the latest release that has it describes it.
 */
export function judge(released: Node, removal: boolean, policy: LifecyclePolicy, now: Date): Judgement {
  const level = levelOf(released)
  if (level === 'experimental') return { allowed: 'experimental' }
  if (level === 'stable' && !removal) return {}
  if (released.deprecated !== true) return { why: `${level}: only a released deprecation with a passed sunset lets it go` }
  const deprecatedAt = dayOf(released['x-deprecated-at'])
  const sunset = dayOf(released['x-sunset'])
  if (deprecatedAt === undefined || sunset === undefined) return { why: `${level}, deprecated without both x-deprecated-at and x-sunset` }
  const notice = policy.noticeDays[level]
  if (sunset.getTime() - deprecatedAt.getTime() < notice * dayMs) {
    return { why: `${level}: its sunset ${released['x-sunset']} was less than ${notice} days after its deprecation ${released['x-deprecated-at']}` }
  }
  if (now < sunset) return { why: `${level}, deprecated, but its sunset ${released['x-sunset']} has not passed` }
  return { allowed: `${level}, sunset ${released['x-sunset']} passed` }
}

/** Demotions and sunsets moved earlier, from `released` to `revision`: one line each. */
export function lifecycleBreaks(released: ReleasedOperation[], revision: ReleasedOperation[]): string[] {
  const now = new Map(revision.map((operation) => [operation.name, operation.definition]))
  return released.flatMap(({ name, definition }) => {
    const current = now.get(name)
    if (current === undefined) return []
    const was: Level = levelOf(definition)
    const is: Level = levelOf(current)
    const lines: string[] = []
    if (rank(is) < rank(was)) lines.push(`  ${name}: demoted from ${was} to ${is} (x-stability)`)
    // (an experimental operation promised no date)
    const sunset = dayOf(definition['x-sunset'])
    if (was !== 'experimental' && definition.deprecated === true && sunset !== undefined) {
      const moved = current.deprecated === true ? dayOf(current['x-sunset']) : undefined
      if (moved !== undefined && moved < sunset) lines.push(`  ${name}: x-sunset moved earlier, from ${definition['x-sunset']} to ${current['x-sunset']}: clients were promised that date`)
    }
    return lines
  })
}
