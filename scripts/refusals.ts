/**
 * What a release refuses that the release before took, for the changelog (docs/compatibility.md,
 * Releases and the changelog): a request the release before accepted may be refused now.
 *
 * - A 4xx an operation gained is one, unless HTTP answers it only to a request that carries a
 *   header the operation did not take before (a 412 to a request with `If-Match`, new in the same
 *   release): no request the release before took carries it.
 * - A request value narrowed (a tighter pattern, reviewed as breaking no client) is one where a
 *   value the release before took is refused now: values are tried, and those refused named.
 * - A uniqueness rule that ignores more differences (`x-unique`, src/contract/uniqueness.ts) is
 *   one: two values that were two are one now, the second refused.
 */
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { OpenAPIV3 } from 'openapi-types'
import { readContract } from '../src/contract/model.js'
import { keysOf, pointerTo, resolvePointer } from '../src/contract/pointer.js'
import { Problems } from '../src/contract/problems.js'
import { ignorable, type Ignorable, readUniqueness } from '../src/contract/uniqueness.js'
import { compareVersions, parseVersion } from '../src/contract/version.js'
import { type Change, inPlace, placeOf, whereOf } from './comparison.js'

type Node = Record<string, unknown>
const asDocument = (node: Node) => node as unknown as OpenAPIV3.Document

/** The request headers without which HTTP never answers a status (RFC 9110, sections 13.1 and
 * 15.5): a 412 answers a precondition that failed, a 416 a range, a 417 an expectation. */
const answeredOnlyWith: Readonly<Record<string, readonly string[]>> = {
  '412': ['if-match', 'if-none-match', 'if-unmodified-since'],
  '416': ['range'],
  '417': ['expect'],
}

/** The header parameters (lower case) of the operation at `pointer` of `document`, or undefined
 * where it has no such operation. */
function headersTaken(document: Node, pointer: string): Set<string> | undefined {
  const operation = [...readContract(asDocument(document)).contract.operations.values()].find((found) => found.pointer === pointer)
  return operation && new Set(operation.parameters.filter((parameter) => parameter.in === 'header').map(({ name }) => name.toLowerCase()))
}

/**
 * Whether a refusal the comparison found (a 4xx added to an operation, rule `response-added`) is
 * answered only to requests `previous` did not describe: HTTP sends it only with a header the
 * operation did not take in `previous`.
 */
export function onlyThroughNewRequests(change: Change, previous: Node): boolean {
  if (!change.verdicts.some(({ ruleId }) => ruleId === 'response-added')) return false
  const keys = keysOf(change.path)
  const needed = answeredOnlyWith[keys[4]!]
  const taken = headersTaken(previous, pointerTo(keys.slice(0, 3)))
  return needed !== undefined && taken !== undefined && !needed.some((header) => taken.has(header))
}

/** Text a client may send, tried where a narrowed value is compared, each in words. */
const tried = [
  { text: ' ', words: 'a space' },
  { text: '\u00A0', words: 'a no-break space' },
  { text: '\u3000', words: 'an ideographic space' },
  { text: '\t', words: 'a tab' },
  { text: '\u200B', words: 'a zero-width space (U+200B)' },
  { text: '\u200D', words: 'a zero-width joiner (U+200D)' },
  { text: '\u202E', words: 'a bidi control (U+202E)' },
  { text: '\uFEFF', words: 'a byte order mark (U+FEFF)' },
  { text: '\u00AD', words: 'a soft hyphen (U+00AD)' },
  { text: '\u2060', words: 'a word joiner (U+2060)' },
  { text: '\u3164', words: 'a Hangul filler (U+3164)' },
  { text: '\uFE0F', words: 'a variation selector (U+FE0F)' },
  { text: '\u0301', words: 'a combining accent (U+0301)' },
  { text: '\u0085', words: 'a next line (U+0085)' },
  { text: '\u2028', words: 'a line separator (U+2028)' },
]
const positions = ['at the start', 'inside', 'at the end'] as const

/** Where in a value a text is refused, in words: `anywhere`, `at either end`... */
function whereRefused(at: ReadonlySet<(typeof positions)[number]>): string {
  if (at.size === positions.length) return 'anywhere'
  if (at.size === 2 && !at.has('inside')) return 'at either end'
  return [...at].join(' or ')
}

/** `a, b or c` */
const listed = (items: readonly string[]) => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`)

/** The status an operation documents for a request its schemas refuse: its 400, if any. */
const invalidStatus = (document: Node, change: Change) => {
  const responses = resolvePointer(document, pointerTo([...keysOf(change.path).slice(0, 3), 'responses'])) as Node | undefined
  return responses?.['400'] === undefined ? 'refused' : 'refused (400)'
}

/**
 * The values of a request part (a parameter, a field of a body) that `previous` took and
 * `current` refuses, in words: texts (spaces, characters that draw nothing...) put at the start,
 * inside or at the end of the schema's example; undefined where none of those is refused now.
 */
export function narrowedValues(change: Change, previous: Node, current: Node): string | undefined {
  const keys = keysOf(change.path)
  if (keys[0] !== 'paths' || (keys[3] !== 'requestBody' && keys[3] !== 'parameters')) return undefined
  const schemaOf = (document: Node) => resolvePointer(inPlace(document), change.path) as Node | undefined
  const [before, after] = [schemaOf(previous), schemaOf(current)]
  const ajv = new Ajv2020({ strict: false, validateFormats: false })
  const schemas = [before, after].map((schema) => (schema?.type === 'string' ? ajv.compile(schema) : undefined))
  const [took, takes] = schemas
  const example = after?.example ?? before?.example
  if (took === undefined || takes === undefined || typeof example !== 'string') return undefined
  const refused = new Map<string, Set<(typeof positions)[number]>>()
  for (const { text, words } of tried) {
    const middle = Math.ceil(example.length / 2)
    const values = [text + example, example.slice(0, middle) + text + example.slice(middle), example + text]
    for (const [i, value] of values.entries()) {
      if (!took(value) || takes(value)) continue
      refused.set(words, (refused.get(words) ?? new Set()).add(positions[i]!))
    }
  }
  if (refused.size === 0) return undefined
  // texts refused at the same places, named together
  const byPlace = new Map<string, string[]>()
  for (const [words, at] of refused) byPlace.set(whereRefused(at), [...(byPlace.get(whereRefused(at)) ?? []), words])
  // (a body's field, or a parameter, by its name)
  const field = [...placeOf(change.path, current, previous).matchAll(/`([^`]+)`/g)].at(-1)?.[1] ?? 'value'
  return `a \`${field}\` with ${[...byPlace].map(([at, words]) => `${listed(words)} ${at}`).join('; ')} is now ${invalidStatus(current, change)}`
}

/** The differences the `x-unique` of schema `name` ignores in `document`; a document released
 * before it said so is read by `stated`'s, the differences it says held by then. */
function ignoredIn(document: Node, name: string, stated: Node | undefined): Set<Ignorable> | undefined {
  if (asDocument(document).components?.schemas?.[name] === undefined) return undefined
  const own = readUniqueness(asDocument(document), new Problems()).get(name)
  const version = parseVersion(asDocument(document).info?.version)
  const rule =
    own ??
    readUniqueness(asDocument(stated ?? {}), new Problems())
      .get(name)
      ?.filter(({ since }) => version !== undefined && compareVersions(since, version) <= 0)
  return rule && new Set(rule.map(({ difference }) => difference))
}

/** Where an operation's request body carries schema `name`: `#/paths/.../properties/name`, one
 * pointer each, through every `$ref`. */
function placesOf(document: Node, name: string): string[] {
  const target = `#/components/schemas/${name}`
  const places: string[] = []
  const walk = (node: unknown, at: string[], seen: ReadonlySet<string>) => {
    if (typeof node !== 'object' || node === null) return
    const ref = (node as Node).$ref as string | undefined
    if (ref === target) places.push(pointerTo(at))
    else if (ref !== undefined && !seen.has(ref)) walk(resolvePointer(document, ref), at, new Set([...seen, ref]))
    else for (const [key, value] of Object.entries(node)) if (key !== 'example' && key !== 'examples') walk(value, [...at, key], seen)
  }
  for (const [path, item] of Object.entries((document.paths ?? {}) as Node))
    for (const [method, operation] of Object.entries(item as Node))
      if (typeof operation === 'object' && operation !== null && 'requestBody' in operation)
        walk((operation as Node).requestBody, ['paths', path, method, 'requestBody'], new Set())
  return places
}

/**
 * The uniqueness rules that ignore more differences in `current` than in `previous`: one line
 * each per operation whose request carries the schema (and that `previous` had), a value now one
 * with a value taken before refused with the operation's 409. `stated` is the newest document,
 * whose `x-unique` says since which release each difference is ignored, for documents released
 * before they said it themselves.
 */
export function newUniqueness(previous: Node, current: Node, stated?: Node): string[] {
  const lines: string[] = []
  for (const name of Object.keys(asDocument(current).components?.schemas ?? {})) {
    const [before, after] = [ignoredIn(previous, name, stated), ignoredIn(current, name, stated)]
    if (before === undefined || after === undefined) continue
    const more = [...after].filter((difference) => !before.has(difference))
    if (more.length === 0) continue
    for (const place of placesOf(current, name)) {
      const operation = pointerTo(keysOf(place).slice(0, 3))
      if (resolvePointer(previous, operation) === undefined) continue
      const conflict = (resolvePointer(current, `${operation}/responses`) as Node)['409'] === undefined ? 'refused' : 'refused (409)'
      const field = keysOf(place).at(-1)
      lines.push(
        `${whereOf(place)}, request body \`${field}\`: a \`${field}\` that differs from one taken only in ${listed(more.map((difference) => ignorable[difference].words))} is the same \`${field}\` now: ${conflict}`,
      )
    }
  }
  return lines
}
