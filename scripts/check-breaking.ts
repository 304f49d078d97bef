/**
 * npm run check:breaking: each served document (openapi.yaml, each older major by its overlay), as served
 * (bundled with the shared parts), against the released contracts of its major version in
 * contract/released/ (1.x, 2.x); then each served major against the one before it, every
 * breaking difference held to the version changes that must cover it (src/versions/coverage.ts).
 *
 * The rule (docs/compatibility.md): a change that can break a client of a released version
 * (redocly diff rates it `major`: a removed operation or response field, a parameter made
 * required, an enum a client sends or receives that lost or gained a value, a tighter limit on
 * what a client sends...) needs a new major version, served beside the old one: a document of
 * its own, with `info.version` of that major and the servers' version segment `/v<major>`.
 * Within a major version, every change must be compatible with every release of that major. A reviewed exception, a change
 * rated major that provably breaks no client, is listed in contract/accepted-changes.yaml with
 * its reason.
 *
 * Stability levels (x-stability) temper the rule, each operation by the level it was released
 * at (stability-gate.ts): an experimental operation may change in any way, a beta or stable one
 * may go once a release deprecated it with a sunset that has passed, after the notice period
 * of x-service.lifecycle.noticeDays (openapi.yaml). A change to a component is judged by its
 * users: it passes only if each of them lets it. Demoting an operation, or moving its sunset
 * earlier, breaks. A deprecation changes the Link of its operation's answers (its lifecycle links
 * join the next page's): that change passes with it. Every problem the contract model finds in
 * the document (src/contract/: a lifecycle marker, the version segment, a role, x-service, what
 * a response documents...) is refused here with its words, as the server and the lint refuse it.
 *
 *   npm run -s check:breaking [-- --spec FILE --released DIR --accepted FILE --now YYYY-MM-DD]
 * Exit status: 0 compatible; 1 a breaking change, or a document the server would refuse (each
 * named); 2 a document that cannot be read.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { parse } from 'yaml'
import type { OpenAPIV3 } from 'openapi-types'
import type { Lifecycle, NoticeDays } from '../src/contract/lifecycle.js'
import { type Contract, readContract } from '../src/contract/model.js'
import { describe } from '../src/contract/problems.js'
import { compareVersions, parseVersion, type Version, versionText } from '../src/contract/version.js'
import { bundledSpec, loadContract, rootOf, specPaths } from '../src/contract/load.js'
import { isEntry, type Io, processIo } from '../src/core/command-io.js'
import { projectRoot, specPath } from '../src/core/paths.js'
import { type Difference, uncovered, unpairedHalves } from '../src/versions/coverage.js'
import { type Change, compareDocuments, diff, placeOf, type Verdict, whereOf } from './comparison.js'
import type { VersionChange } from '../src/versions/change.js'
import { changes } from '../src/versions/index.js'
import { componentChanged, deprecationLink, judge, lifecycleBreaks, operationsOf, type ReleasedOperation, touched } from './stability-gate.js'

export const releasedDir = join(projectRoot, 'contract', 'released')
export const acceptedFile = join(projectRoot, 'contract', 'accepted-changes.yaml')

/** A change rated major that was reviewed and breaks no client. */
export interface AcceptedChange {
  rule: string
  /** the JSON pointer redocly reports for it, in openapi.yaml or, for a removal, in the release */
  pointer: string
  reason: string
}

/** What the gate found against one release of the major version. */
export interface ReleaseFindings extends Findings {
  version: string
}

export interface GateResult {
  ok: boolean
  /** whether the server would serve the document: the contract model found no problem in it */
  servable: boolean
  /** what to print: the version checks, then every breaking change, one a line */
  lines: string[]
  /** the findings against each release of the major version, oldest first */
  releases: ReleaseFindings[]
}

/** MAJOR.MINOR.PATCH as numbers; `what` names the text in the error (a file and a field). */
function version(text: unknown, what: string): Version {
  const parsed = parseVersion(text)
  if (parsed === undefined) throw new Error(`${what} ${JSON.stringify(text)} is not a version MAJOR.MINOR.PATCH`)
  return parsed
}

/** What judges a change by the lifecycle of the operations it touches. */
export interface LifecycleContext {
  /** the operations of the release compared with */
  base: ReleasedOperation[]
  /** each operation's lifecycle as the latest release of the major version that has it describes it */
  latest: Map<string, Lifecycle>
  /** each operation's lifecycle as the revision describes it */
  revision: ReadonlyMap<string, Lifecycle>
  /** whether a component (`#/components/schemas/Pet`) differs from the release to the revision */
  changed: (component: string) => boolean
  noticeDays: NoticeDays
  now: Date
}

export interface Findings {
  breaking: string[]
  /** changes rated major that the operations' lifecycle lets through, shown to the reviewer */
  allowed: string[]
}

/**
 * The changes rated major among `changes`, less the accepted ones, one line each: where (the
 * operation), what redocly says, and its rule and pointer (what an accepted entry names);
 * breaking, or allowed by the lifecycle of every operation they touch (without a `lifecycle`,
 * every operation is stable and not deprecated).
 */
export function classify(changes: Change[], accepted: AcceptedChange[], lifecycle?: LifecycleContext): Findings {
  const isAccepted = (verdict: Verdict) => acceptedFor(verdict, accepted) !== undefined
  const found: Findings = { breaking: [], allowed: [] }
  for (const change of changes) {
    if (change.impact !== 'major') continue
    const verdicts = change.verdicts.filter((verdict) => verdict.impact === 'major')
    // a major change that came without a verdict is still reported, by its place
    const findings = (
      verdicts.length > 0 ? verdicts : [{ ruleId: change.kind, impact: change.impact, message: 'rated major', location: { pointer: change.path } }]
    ).filter((finding) => !isAccepted(finding))
    if (findings.length === 0) continue
    const line = `${whereOf(change.path)}: ${findings.map((finding) => `${finding.message} (${finding.ruleId} at ${finding.location.pointer})`).join('; ')}`
    const operations = lifecycle
      ? touched(
          lifecycle.base,
          change.path,
          findings.map((finding) => finding.location.pointer),
          lifecycle.changed,
        )
      : []
    // the Link of an operation deprecated now changes at that operation's own place alone, even
    // where the header it names now is one other operations' answers name too (a getPet
    // deprecated before it)
    const owner = operations.find((operation) => change.path.startsWith(`${operation.pointer}/`))
    const ownLink = owner === undefined ? undefined : deprecationLink(owner, change.path, lifecycle!.revision)
    const judgements =
      ownLink !== undefined
        ? [ownLink]
        : operations.map((operation) =>
            // a removal takes away the operation at or under the removed place
            judge(
              lifecycle!.latest.get(operation.name)!,
              change.kind === 'removed' && operation.pointer.startsWith(change.path),
              lifecycle!.noticeDays,
              lifecycle!.now,
            ),
          )
    if (judgements.length > 0 && judgements.every((judgement) => judgement.allowed !== undefined)) {
      found.allowed.push(`  allowed (${[...new Set(judgements.map((judgement) => judgement.allowed))].join('; ')}): ${line}`)
    } else {
      const why = [...new Set(judgements.flatMap((judgement) => judgement.why ?? []))]
      found.breaking.push(`  ${line}${why.length > 0 ? ` [${why.join('; ')}]` : ''}`)
    }
  }
  return found
}

/** The entry of `accepted` that names this verdict (its rule at its pointer), if any. */
const acceptedFor = (verdict: Verdict, accepted: AcceptedChange[]) =>
  accepted.find(({ rule, pointer }) => rule === verdict.ruleId && pointer === verdict.location.pointer)

/** The reviewed changes of `file` (contract/accepted-changes.yaml); an empty file holds none. */
export const readAccepted = (file: string): AcceptedChange[] => (parse(readFileSync(file, 'utf8')) as AcceptedChange[] | null) ?? []

/** The changes rated major that `accepted` lets through, one line each: where, and why no client
 * can fail (the reason of the accepted entry, written for clients; redocly's own words can
 * mislead there: "Authentication became required" for a role named). */
export function reviewedLines(changes: Change[], accepted: AcceptedChange[]): string[] {
  const lines: string[] = []
  for (const change of changes) {
    for (const verdict of change.verdicts) {
      const reviewed = acceptedFor(verdict, accepted)
      if (verdict.impact === 'major' && reviewed !== undefined) lines.push(`${whereOf(change.path)}: ${reviewed.reason.trim().replace(/\s+/g, ' ')}`)
    }
  }
  return lines
}

export interface GateOptions {
  spec?: string
  /** the spec's own text, where it is not what its file holds (a release's candidate) */
  text?: string
  released?: string
  accepted?: string
  /** the day it is: whether a sunset has passed (by default, now) */
  now?: Date
}

/** Checks `spec` against every released contract, as CI does. */
export async function checkBreaking({
  spec = specPath,
  text,
  released = releasedDir,
  accepted = acceptedFile,
  now = new Date(),
}: GateOptions = {}): Promise<GateResult> {
  // the document as it is served: bundled from its sources, and written where redocly reads it
  const { source, document } = bundledSpec(spec, false, text)
  const work = mkdtempSync(join(tmpdir(), 'petstore-gate-'))
  try {
    const bundled = join(work, basename(spec))
    writeFileSync(bundled, source)
    return await gate(spec, bundled, document, { released, accepted, now })
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** The gate, on the bundle of `spec` (written at `bundled`). */
async function gate(
  spec: string,
  bundled: string,
  document: OpenAPIV3.Document,
  { released, accepted, now }: Required<Pick<GateOptions, 'released' | 'accepted' | 'now'>>,
): Promise<GateResult> {
  const current = version(document.info.version, `${relative(projectRoot, spec)}: info.version`)
  const releases = readdirSync(released)
    .filter((name) => name.endsWith('.yaml'))
    .map((name) => ({
      file: join(released, name),
      version: version(name.slice(0, -'.yaml'.length), `${relative(projectRoot, join(released, name))}: the name`),
    }))
    .sort((a, b) => compareVersions(a.version, b.version))
  if (releases.length === 0) throw new Error(`${released} holds no released contract (MAJOR.MINOR.PATCH.yaml)`)
  const acceptedChanges = readAccepted(accepted)

  const lines: string[] = []
  let ok = true
  const fail = (line: string) => {
    ok = false
    lines.push(line)
  }
  // each major version is judged by its own releases (v1 by 1.x, v2 by 2.x): a document of an
  // older major goes on beside a newer one
  const sameMajor = releases.filter((release) => release.version[0] === current[0])
  // (a document older than every release is judged by the first, and refused as older)
  const latest = sameMajor.at(-1) ?? releases.filter((release) => release.version[0] < current[0]).at(-1) ?? releases[0]!
  const named = versionText
  if (compareVersions(current, latest.version) < 0) fail(`info.version ${named(current)} is older than the released ${named(latest.version)}`)

  // what the server would refuse to serve, refused as it refuses it
  const { contract, problems } = readContract(document, { file: relative(rootOf(spec), spec) })
  for (const problem of problems) fail(`${contract.file}: ${describe(problem)}`)

  if (current[0] > latest.version[0]) {
    lines.push(`info.version ${named(current)} starts major version ${current[0]}: breaking changes to ${named(latest.version)} are allowed`)
  }
  const documents = new Map(sameMajor.map((release) => [release, parse(readFileSync(release.file, 'utf8')) as Record<string, any>]))
  const operations = new Map(sameMajor.map((release) => [release, operationsOf(documents.get(release)!)]))
  // each operation as the latest release that has it says: its level, its deprecation
  const latestOf = new Map<string, Lifecycle>()
  for (const release of sameMajor) for (const operation of operations.get(release)!) latestOf.set(operation.name, operation.lifecycle)
  const revision = operationsOf(document)
  const revised = new Map(revision.map((operation) => [operation.name, operation.lifecycle]))
  const findings: ReleaseFindings[] = []
  // (each comparison is a redocly process of its own: they run side by side)
  const diffs = await Promise.all(sameMajor.map((release) => diff(release.file, bundled)))
  for (const [index, release] of sameMajor.entries()) {
    const base = operations.get(release)!
    const { breaking, allowed } = classify(diffs[index]!, acceptedChanges, {
      base,
      latest: latestOf,
      revision: revised,
      changed: componentChanged(documents.get(release)!, document),
      noticeDays: contract.service.noticeDays,
      now,
    })
    breaking.push(...lifecycleBreaks(base, revision))
    findings.push({ version: named(release.version), breaking, allowed })
    if (breaking.length === 0) {
      lines.push(
        `compatible with the released ${named(release.version)}${allowed.length > 0 ? `; ${allowed.length} change(s) allowed by their operations' lifecycle:` : ''}`,
        ...allowed,
      )
      continue
    }
    // the two ways on, so that the refusal says what to do
    fail(
      `${breaking.length} breaking change(s) to the released ${named(release.version)}; each needs a new major version, served beside this one (a document of its own with info.version ${current[0] + 1}.0.0 and servers ending in /v${current[0] + 1}, and the change declared in src/versions/: docs/compatibility.md), or, if it breaks no client that worked before, a reviewed entry in ${relative(projectRoot, accepted)} (its rule, its pointer and why):`,
    )
    lines.push(...breaking)
    if (allowed.length > 0) lines.push(`and ${allowed.length} change(s) allowed by their operations' lifecycle:`, ...allowed)
  }
  return { ok, servable: problems.length === 0, lines, releases: findings }
}

/**
 * The breaking differences between two neighbouring majors' documents, which their version
 * changes must cover (src/versions/coverage.ts) and the new major's changelog entry lists: every
 * verdict the comparison (scripts/comparison.ts) rates major, at every place a client meets it,
 * events and refusals (a 4xx the newer operation added) among them.
 */
export async function neighbourDifferences(older: Contract, newer: Contract): Promise<Difference[]> {
  return differencesOf(await compareDocuments(older.document as never, newer.document as never), older.document, newer.document)
}

/** The verdicts rated major of `changes` (from `older` to `newer`), one difference each. */
export function differencesOf(changes: readonly Change[], older: unknown, newer: unknown): Difference[] {
  return changes
    .filter(({ impact }) => impact === 'major')
    .flatMap(({ path, verdicts }) =>
      verdicts
        .filter(({ impact }) => impact === 'major')
        .map((verdict) => ({ where: placeOf(path, newer, older), rule: verdict.ruleId, pointer: verdict.location.pointer, path, message: verdict.message })),
    )
}

/** `--now YYYY-MM-DD`: 00:00 UTC that day. */
export function dayOption(text: string): Date {
  const day = new Date(`${text}T00:00:00Z`)
  if (Number.isNaN(day.getTime())) throw new Error(`--now ${text} is not a date YYYY-MM-DD`)
  return day
}

/** Whether the version changes cover every breaking difference between each served document and
 * the one of the major before it: a line per pair, then one per difference no change covers. */
export async function checkCoverage(contracts: readonly Contract[], declared: readonly VersionChange[] = changes): Promise<{ ok: boolean; lines: string[] }> {
  const lines: string[] = []
  let ok = true
  for (const [i, newer] of contracts.entries()) {
    const older = contracts[i - 1]
    if (older === undefined) continue
    const differences = await neighbourDifferences(older, newer)
    const missing = uncovered(differences, older, newer, declared)
    const unpaired = unpairedHalves(older, declared)
    ok &&= missing.length === 0 && unpaired.length === 0
    lines.push(...unpaired)
    lines.push(
      missing.length === 0
        ? `${newer.file} against ${older.file}: each of its ${differences.length} breaking difference(s) covered by the version changes of version ${older.version[0]}`
        : `${newer.file} against ${older.file}: ${missing.length} of its ${differences.length} breaking difference(s) covered by no version change; a client of version ${older.version[0]} would be answered in version ${newer.version[0]}'s shape (docs/compatibility.md):`,
      ...missing.map((line) => `  ${line}`),
    )
  }
  return { ok, lines }
}

/** `npm run check:breaking -- ...args`: its exit status, 0 compatible, 1 a breaking change or a
 * document the server would refuse, 2 a document or an option it cannot read. */
export async function main(args: string[], io: Io): Promise<number> {
  try {
    const { values } = parseArgs({
      args,
      options: { spec: { type: 'string' }, released: { type: 'string' }, accepted: { type: 'string' }, now: { type: 'string' } },
    })
    const now = values.now === undefined ? undefined : dayOption(values.now)
    // every served document, each against the releases of its major, unless --spec names one
    const specs = values.spec === undefined ? specPaths : [values.spec]
    let ok = true
    let servable = true
    for (const spec of specs) {
      const result = await checkBreaking({ ...values, spec, now })
      io.stdout([...(specs.length > 1 ? [`${relative(projectRoot, spec)}:`] : []), ...result.lines].join('\n'))
      ok &&= result.ok
      servable &&= result.servable
    }
    // each served major against the one before it: the changes between them cover the difference
    // (of documents the server would serve: each problem of one it would not is named above)
    if (values.spec === undefined && servable) {
      const coverage = await checkCoverage(specPaths.map((spec) => loadContract(spec, false)))
      io.stdout(coverage.lines.join('\n'))
      ok &&= coverage.ok
    }
    return ok ? 0 : 1
  } catch (error) {
    io.stderr(`check:breaking: ${(error as Error).message}`)
    return 2
  }
}

if (isEntry(import.meta.filename)) process.exitCode = await main(process.argv.slice(2), processIo)
