/**
 * The lifecycle an operation or event declares (docs/compatibility.md): its stability level
 * (`x-stability`), and for a deprecated operation when it was deprecated, when it goes, what
 * replaces it and its brownouts. Read here and nowhere else: the server, the breaking-change
 * gate, the changelog and the lint all ask this module, so a marker is refused by all of them
 * with the same words.
 */
import type { Problems } from './problems.js'

/** Stability levels, least stable first; `stable` is the level of an operation without a marker. */
const levels = ['experimental', 'beta', 'stable'] as const
export type Level = (typeof levels)[number]

export const rank = (level: Level) => levels.indexOf(level)

/** How the lifecycle of an operation is labelled in metrics and usage records: deprecated
 * (whatever its level), experimental or beta; undefined for a stable one in good standing. */
export type LifecycleLabel = 'deprecated' | 'experimental' | 'beta'

/** A UTC interval before the sunset during which a deprecated operation already answers 410. */
export interface Brownout {
  /** ms since the epoch; the end excluded */
  start: number
  end: number
  /** the end as the spec writes it */
  endText: string
}

/** (A date is undefined only in a document read with problems: one the server would not serve.) */
export interface Deprecation {
  /** `x-deprecated-at`: midnight UTC of that day */
  at?: Date
  /** `x-sunset`: midnight UTC of the day the operation is gone */
  sunset?: Date
  /** `x-successor`: the operationId that replaces it */
  successor?: string
  /** `x-successor-parameters`: the successor's query parameters, by name, each given the value
   * of one of the deprecated operation's parameters (`$request.path.petId`, as OpenAPI's Link
   * Object writes it), so that its Link leads to the request that does the same */
  successorParameters?: Readonly<Record<string, ParameterSource>>
  /** `x-successor-reason`: why none does */
  successorReason?: string
  brownouts: readonly Brownout[]
}

/** A parameter of a request, by where it is sent and its name. */
export interface ParameterSource {
  in: 'path' | 'query'
  name: string
}

export interface Lifecycle {
  level: Level
  deprecation?: Deprecation
  label?: LifecycleLabel
}

/** The least days from deprecation to sunset, by level (`x-service.lifecycle.noticeDays`). */
export type NoticeDays = Record<Exclude<Level, 'experimental'>, number>

export const dayMs = 86_400_000

/** An RFC 3339 full-date (`2030-12-05`) as midnight UTC, or undefined when it is not one (the
 * round trip refuses other shapes and impossible days, 2030-02-31). */
function dayOf(value: unknown): Date | undefined {
  if (typeof value !== 'string') return undefined
  const date = new Date(`${value}T00:00:00Z`)
  return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value ? undefined : date
}

/** An RFC 3339 date-time in UTC (`2030-11-01T14:00:00Z`) as ms since the epoch, or undefined. */
function instantOf(value: unknown): number | undefined {
  const at = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(value) ? Date.parse(value) : Number.NaN
  return Number.isNaN(at) ? undefined : at
}

/** The level a definition declares; an unknown one is reported, and read as stable (the
 * strictest: nothing is let through on a typo). */
function levelOf(definition: Record<string, unknown>, at: readonly (string | number)[], where: string, problems: Problems): Level {
  const stability = definition['x-stability']
  if (stability === undefined) return 'stable'
  if (stability === 'experimental' || stability === 'beta') return stability
  problems.add('lifecycle', [...at, 'x-stability'], where, `x-stability ${JSON.stringify(stability)} is not a level: experimental or beta (none means stable)`)
  return 'stable'
}

const deprecationMarkers = ['x-deprecated-at', 'x-sunset', 'x-successor', 'x-successor-parameters', 'x-successor-reason', 'x-brownouts'] as const

/** A runtime expression of OpenAPI's Link Object that names a parameter of the request. */
const parameterExpression = /^\$request\.(path|query)\.([A-Za-z0-9_.-]+)$/

/** `x-successor-parameters`: `{name: '$request.path.petId'}`, each name a query parameter of the
 * successor; undefined when absent or malformed (reported). */
function successorParametersOf(
  value: unknown,
  at: readonly (string | number)[],
  where: string,
  problems: Problems,
): Record<string, ParameterSource> | undefined {
  if (value === undefined) return undefined
  const entries = typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.entries(value) : []
  const read = entries.map(([name, expression]) => [name, typeof expression === 'string' ? parameterExpression.exec(expression) : null] as const)
  if (entries.length === 0 || read.some(([, match]) => match === null)) {
    problems.add(
      'lifecycle',
      at,
      where,
      "x-successor-parameters must map the successor's query parameters to parameters of this request, e.g. {id: $request.path.petId}",
    )
    return undefined
  }
  return Object.fromEntries(read.map(([name, match]) => [name, { in: match![1] as ParameterSource['in'], name: match![2]! }]))
}

/**
 * The lifecycle of an operation (or event) `definition`, at `at` in the document, `where` for
 * people. What is malformed is added to `problems` and read as leniently as it can be (a
 * released contract is read too, under the rules of its day). `noticeDays`, when given, is the
 * least notice a deprecation must give.
 */
export function readLifecycle(
  definition: Record<string, unknown>,
  at: readonly (string | number)[],
  where: string,
  problems: Problems,
  noticeDays?: NoticeDays,
): Lifecycle {
  const level = levelOf(definition, at, where, problems)
  if (definition.deprecated !== true) {
    // a marker the server would not act on is refused, not ignored
    for (const marker of deprecationMarkers) {
      if (definition[marker] !== undefined) problems.add('lifecycle', [...at, marker], where, `${marker} needs deprecated: true`)
    }
    return { level, ...(level !== 'stable' && { label: level }) }
  }
  const deprecatedAt = dayOf(definition['x-deprecated-at'])
  if (deprecatedAt === undefined) {
    const value = definition['x-deprecated-at']
    problems.add(
      'lifecycle',
      [...at, 'x-deprecated-at'],
      where,
      `a deprecated operation says when it was deprecated: x-deprecated-at, a date YYYY-MM-DD${value === undefined ? '' : `, not ${JSON.stringify(value)}`}`,
    )
  }
  const sunset = dayOf(definition['x-sunset'])
  if (sunset === undefined) {
    const value = definition['x-sunset']
    problems.add(
      'lifecycle',
      [...at, 'x-sunset'],
      where,
      `a deprecated operation says when it goes: x-sunset, a date YYYY-MM-DD${value === undefined ? '' : `, not ${JSON.stringify(value)}`}`,
    )
  }
  if (deprecatedAt !== undefined && sunset !== undefined) {
    if (sunset < deprecatedAt)
      problems.add(
        'lifecycle',
        [...at, 'x-sunset'],
        where,
        `x-sunset ${String(definition['x-sunset'])} is earlier than x-deprecated-at ${String(definition['x-deprecated-at'])}`,
      )
    const notice = level === 'experimental' || noticeDays === undefined ? 0 : noticeDays[level]
    if (sunset.getTime() - deprecatedAt.getTime() < notice * dayMs) {
      problems.add(
        'lifecycle',
        [...at, 'x-sunset'],
        where,
        `x-sunset ${String(definition['x-sunset'])} is less than ${notice} days (the ${level} notice period, x-service.lifecycle.noticeDays) after x-deprecated-at ${String(definition['x-deprecated-at'])}`,
      )
    }
  }
  const successor = definition['x-successor']
  const successorReason = definition['x-successor-reason']
  const successorParameters = successorParametersOf(definition['x-successor-parameters'], [...at, 'x-successor-parameters'], where, problems)
  if (successor !== undefined && typeof successor !== 'string')
    problems.add('lifecycle', [...at, 'x-successor'], where, `x-successor must be an operationId, not ${JSON.stringify(successor)}`)
  if (successorParameters !== undefined && successor === undefined)
    problems.add('lifecycle', [...at, 'x-successor-parameters'], where, 'x-successor-parameters needs x-successor')
  if (successor === undefined && (typeof successorReason !== 'string' || successorReason.trim() === '')) {
    problems.add('lifecycle', at, where, 'a deprecated operation names its x-successor (an operationId), or says in x-successor-reason why there is none')
  }
  const deprecation: Deprecation = {
    ...(deprecatedAt !== undefined && { at: deprecatedAt }),
    ...(sunset !== undefined && { sunset }),
    ...(typeof successor === 'string' && { successor }),
    ...(successorParameters !== undefined && { successorParameters }),
    ...(typeof successorReason === 'string' && { successorReason }),
    brownouts: brownoutsOf(definition['x-brownouts'], sunset, [...at, 'x-brownouts'], where, problems),
  }
  return { level, deprecation, label: 'deprecated' }
}

/** `x-brownouts`: `{start, end}` UTC date-times, each ending after it starts and by the sunset. */
function brownoutsOf(value: unknown, sunset: Date | undefined, at: readonly (string | number)[], where: string, problems: Problems): Brownout[] {
  if (value === undefined) return []
  if (!Array.isArray(value)) {
    problems.add('lifecycle', at, where, 'x-brownouts must be a list of {start, end}')
    return []
  }
  return value.flatMap((brownout: { start?: unknown; end?: unknown } | null, index) => {
    const [start, end] = [instantOf(brownout?.start), instantOf(brownout?.end)]
    for (const [field, instant] of [['start', start] as const, ['end', end] as const]) {
      if (instant === undefined) {
        problems.add(
          'lifecycle',
          [...at, index, field],
          where,
          `x-brownouts[${index}].${field} must be a UTC date-time written YYYY-MM-DDTHH:MM:SSZ, not ${JSON.stringify(brownout?.[field])}`,
        )
      }
    }
    if (start === undefined || end === undefined) return []
    if (!(start < end && (sunset === undefined || end <= sunset.getTime()))) {
      problems.add('lifecycle', [...at, index], where, `x-brownouts[${index}] must end after it starts, and by the sunset`)
      return []
    }
    return [{ start, end, endText: String(brownout!.end) }]
  })
}

/** The `Link` every answer of a deprecated operation carries (RFC 8288): its successor, at its
 * URL (`/v1/pets?id=7`, Contract's successorUrl), when it names one, and the documentation page `docs`. The server sends it,
 * and the contract model holds each response's documented Link to it. */
export function lifecycleLink(docs: string, successorUrl: string | undefined): string {
  const page = `<${docs}>; rel="deprecation"; type="text/html"`
  return successorUrl === undefined ? page : `<${successorUrl}>; rel="successor-version", ${page}`
}

/** When a deprecated operation is gone at an instant (ms since the epoch): why, in words, or
 * undefined while it still works. From its sunset (00:00 UTC) on, and within its brownouts. */
export function goneAt(operationId: string, { deprecation }: Lifecycle, now: number, successorText: () => string): string | undefined {
  if (deprecation?.sunset === undefined) return undefined
  // (asked at every request of a deprecated operation: the day is written only when it is gone)
  const sunsetDay = () => deprecation.sunset!.toISOString().slice(0, 10)
  if (now >= deprecation.sunset.getTime()) return `${operationId} was removed on ${sunsetDay()} (its sunset)${successorText()}`
  for (const { start, end, endText } of deprecation.brownouts) {
    if (now >= start && now < end) return `${operationId} is unavailable until ${endText}, a brownout before its removal on ${sunsetDay()}${successorText()}`
  }
  return undefined
}
