/**
 * contract/CHANGELOG.md, the consumers' changelog, derived from the contracts: a release's entry
 * says what changed from the release before (operations added, retired, deprecated, changed in
 * stability, the compatible changes, and the incompatible ones the operations' lifecycle
 * allowed), and the head of the file lists every deprecation in force, with its dates.
 */
import { operationsOf, type ReleasedOperation } from './stability-gate.js'

type Node = Record<string, any>

const title = '# Changelog of the Pet Store Service API'
const preamble = `${title}

What each release of the API (its contract, \`openapi.yaml\`) changed, for its clients. Every entry is
written by \`npm run release\` from the contracts in \`contract/released/\`; none is edited by hand. An
entry written anew after its release says so under its heading (\`npm run release -- VERSION --correct\`).
An experimental operation may change or go within the major version; a beta or stable one goes
only after a deprecation and its sunset (docs/compatibility.md).`

/** `getPet (GET /pets/{petId})` */
const named = (operation: ReleasedOperation) => `\`${operation.id}\` (${operation.name})`

const day = (date: Date | undefined) => date?.toISOString().slice(0, 10)
const instant = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z')

function deprecation(operation: ReleasedOperation): string {
  // (called for deprecated operations only)
  const { at, sunset, successor, brownouts } = operation.lifecycle.deprecation!
  const parts = [`deprecated on ${day(at)}`]
  if (sunset !== undefined) parts.push(`removed on ${day(sunset)} (requests answer 410 from 00:00 UTC that day)`)
  parts.push(successor === undefined ? 'no successor' : `use \`${successor}\` instead`)
  if (brownouts.length > 0) parts.push(`brownouts (410 already): ${brownouts.map(({ start, end }) => `${instant(start)} to ${instant(end)}`).join(', ')}`)
  return `${named(operation)}: ${parts.join('; ')}`
}

export interface EntryInput {
  version: string
  /** the day of the release, YYYY-MM-DD */
  date: string
  /** the release before (the first release's entry: an empty document) */
  previous: Node
  current: Node
  /** the compatible changes (redocly's minor ones), one line each */
  compatible: string[]
  /** the incompatible changes the lifecycle let through, as the gate lists them */
  allowed: string[]
  /** the changes rated incompatible that were reviewed as breaking no client, each with why
   * (contract/accepted-changes.yaml) */
  reviewed?: string[]
  /** the first release of a major version: its breaking changes to the release before, which
   * goes on being served beside it */
  breaking?: string[]
  /** a later release of a major: the 4xx answers its operations gained, a request the release
   * before took being refused now (the gate lets them through within the major) */
  refusals?: string[]
  /** why an entry already published was written anew: one line, shown under its heading */
  correction?: string
}

/** One release's entry. */
export function entry({ version, date, previous, current, compatible, allowed, reviewed = [], breaking = [], refusals = [], correction }: EntryInput): string {
  const before = new Map(operationsOf(previous).map((operation) => [operation.name, operation]))
  const now = operationsOf(current)
  const after = new Map(now.map((operation) => [operation.name, operation]))
  const level = (operation: ReleasedOperation) => operation.lifecycle.level
  const deprecated = (operation: ReleasedOperation | undefined) => operation?.lifecycle.deprecation !== undefined
  const sections: [string, string[]][] = [
    [breaking.length === 0 ? '' : `Breaking changes (a new major version: ${previous.info.version} is served beside it)`, breaking.map((line) => line.trim())],
    ['Added', now.filter((operation) => !before.has(operation.name)).map((operation) => `${named(operation)}, ${level(operation)}`)],
    [
      'Removed',
      [...before.values()]
        .filter((operation) => !after.has(operation.name))
        .map((operation) => {
          const sunset = operation.lifecycle.deprecation?.sunset
          return `${named(operation)}${sunset !== undefined && sunset.getTime() <= Date.parse(date) ? `, its sunset ${day(sunset)} passed` : ''}`
        }),
    ],
    ['Deprecated', now.filter((operation) => deprecated(operation) && !deprecated(before.get(operation.name))).map(deprecation)],
    [
      'Stability',
      now.flatMap((operation) => {
        const was = before.get(operation.name)
        return was !== undefined && level(was) !== level(operation) ? [`${named(operation)}: ${level(was)} to ${level(operation)}`] : []
      }),
    ],
    ['New refusals (a request the release before took may be refused now)', refusals],
    ['Compatible changes', compatible],
    ['Incompatible changes allowed by their lifecycle', allowed.map((line) => line.trim())],
    ['Changes a diff rates incompatible, which break no client', reviewed],
  ]
  const body = sections
    .filter(([, lines]) => lines.length > 0)
    .map(([heading, lines]) => `### ${heading}\n\n${lines.map((line) => `- ${line}`).join('\n')}`)
    .join('\n\n')
  const note = correction === undefined ? '' : `*Corrected: ${correction}*\n\n`
  return `## ${version} (${date})\n\n${note}${body || 'No change a client can see.'}\n`
}

/** Every deprecation of the served documents (`served`, one per major version), by sunset;
 * each named with its version when there are several. */
export function inForce(served: readonly Node[]): string {
  const deprecated = served
    .flatMap((current) => operationsOf(current).map((operation) => ({ operation, version: String(current.info?.version ?? '').split('.')[0] })))
    .filter(({ operation }) => operation.lifecycle.deprecation !== undefined)
    .map((found) => ({ ...found, sunset: found.operation.lifecycle.deprecation!.sunset?.getTime() ?? Infinity }))
    .sort((a, b) => a.sunset - b.sunset)
  const line = ({ operation, version }: (typeof deprecated)[number]) => `- ${served.length > 1 ? `version ${version}: ` : ''}${deprecation(operation)}`
  return `## Deprecations and sunsets in force\n\n${deprecated.length === 0 ? 'None.' : deprecated.map(line).join('\n')}\n`
}

/** The changelog with `newEntry` on top of the entries of `existing` (of every major version,
 * newest first), and the deprecations in force as the served documents say. */
export function withEntry(existing: string, newEntry: string, served: readonly Node[]): string {
  const first = existing.search(/^## \d+\.\d+\.\d+ /m)
  const entries = first === -1 ? '' : `\n${existing.slice(first)}`
  return `${preamble}\n\n${inForce(served)}\n${newEntry}${entries}`
}
