/**
 * npm run release -- VERSION: makes a release of the served document of VERSION's major
 * (openapi.yaml, the newest, or an older major's overlay, contract/versions/N.overlay.yaml;
 * docs/compatibility.md).
 *
 * It refuses a version that is not above the last release, sets `info.version` (the one line,
 * the file otherwise as written), runs the breaking-change gate on the result (a major bump
 * needs servers ending in /v<major>, as the gate says), and only then writes the document,
 * contract/released/VERSION.yaml (the document as served: bundled with the shared parts) and
 * VERSION's entry at the top of contract/CHANGELOG.md, and
 * makes generated/ (beside the spec) anew, as `npm run generate` does.
 *
 * Its entry is made of the comparison the gate makes (scripts/comparison.ts). `--dry-run` says what
 * would be released, the entry in full, and writes nothing; `--correct NOTE` writes the published
 * entry of a released VERSION anew from the released contracts, NOTE (one line: what it missed)
 * under its heading, and touches nothing else.
 *
 *   npm run -s release -- VERSION [--dry-run --spec FILE --released DIR --changelog FILE --accepted FILE --now YYYY-MM-DD]
 *   npm run -s release -- VERSION --correct NOTE [--dry-run --released DIR --changelog FILE --accepted FILE]
 * Exit status: 0 released; 1 refused (each reason printed), nothing written; 2 a usage error
 * (no VERSION, or one that is not MAJOR.MINOR.PATCH, an unknown option, a --now that is not a
 * date) or a file it cannot read.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { parse } from 'yaml'
import { keysOf, resolvePointer } from '../src/contract/pointer.js'
import { compareVersions, parseVersion, withVersion } from '../src/contract/version.js'
import { bundledSpec, bundleText, majorOfSource, rootOf, specPaths } from '../src/contract/load.js'
import { isEntry, type Io, processIo } from '../src/core/command-io.js'
import { changelogPath, projectRoot } from '../src/core/paths.js'
import { entry, withEntry } from './changelog.js'
import { type AcceptedChange, acceptedFile, checkBreaking, dayOption, differencesOf, readAccepted, releasedDir, reviewedLines } from './check-breaking.js'
import { type Change, compareDocuments, partOf, placeOf, whereOf, writtenAt } from './comparison.js'
import { generate } from './generate.js'
import { narrowedValues, newUniqueness, onlyThroughNewRequests } from './refusals.js'
import { saidOnce } from './said-once.js'
import { operationsOf } from './stability-gate.js'
import { sendsHeader } from '../src/contract/model.js'

const compare = (a: string, b: string) => compareVersions(parseVersion(a)!, parseVersion(b)!)

export interface ReleaseOptions {
  version: string
  spec?: string
  released?: string
  changelog?: string
  accepted?: string
  now?: Date
  /** say what would be released, the entry in full, and write nothing */
  dryRun?: boolean
}

export interface ReleaseResult {
  ok: boolean
  lines: string[]
}

export async function release({
  version,
  spec,
  released = releasedDir,
  changelog = changelogPath,
  accepted = acceptedFile,
  now = new Date(),
  dryRun = false,
}: ReleaseOptions): Promise<ReleaseResult> {
  const major = majorOf(version)
  spec ??= documentOf(major)
  // each major version has releases of its own: the first of a major comes after the older ones'
  // (and a version older than every release is compared with the first)
  const releases = releasesIn(released)
  const last = releases.filter((name) => parseVersion(name)![0] <= major).at(-1) ?? releases[0]
  if (last === undefined) return { ok: false, lines: [`${released} holds no released contract to release after`] }
  if (compare(version, last) <= 0) return { ok: false, lines: [`${version} is not above the last release, ${last}`] }

  // the document's own text with its version set, and the bundle of it that is released
  const own = withVersion(readFileSync(spec, 'utf8'), version)
  const { document: current } = bundledSpec(spec, false, own)
  const gate = await checkBreaking({ spec, text: own, released, accepted, now })
  if (!gate.ok) return { ok: false, lines: [`release ${version} refused by the breaking-change gate:`, ...gate.lines] }

  const text = await releaseEntry({
    version,
    date: now.toISOString().slice(0, 10),
    previous: parse(readFileSync(join(released, `${last}.yaml`), 'utf8')),
    current,
    // the changes the lifecycle allowed, against the last release
    allowed: gate.releases.find((findings) => findings.version === last)?.allowed ?? [],
    accepted: readAccepted(accepted),
  })
  if (dryRun) return { ok: true, lines: [...gate.lines, `would release ${version} (--dry-run: nothing written); its entry:`, '', text] }
  const releasedFile = join(released, `${version}.yaml`)
  writeFileSync(spec, own)
  writeFileSync(releasedFile, bundleText(current))
  const beside = servedBeside(spec)
    .filter((path) => path !== spec && existsSync(path))
    .map((path) => bundledSpec(path).document as Record<string, any>)
  writeFileSync(
    changelog,
    withEntry(
      readFileSync(changelog, 'utf8'),
      text,
      [...beside, current].sort((a, b) => compare(a.info.version, b.info.version)),
    ),
  )
  const shown = (file: string) => relative(projectRoot, file)
  return {
    ok: true,
    lines: [
      ...gate.lines,
      `released ${version}: ${shown(releasedFile)}, info.version of ${shown(spec)}, its entry in ${shown(changelog)}, ${await regenerated(spec)}`,
    ],
  }
}

/** MAJOR of a version, or the usage error that says it is none. */
function majorOf(version: string): number {
  const major = parseVersion(version)?.[0]
  if (major === undefined) throw new Error(`${JSON.stringify(version)} is not a version MAJOR.MINOR.PATCH`)
  return major
}

/** The versions released in `released`, oldest first. */
const releasesIn = (released: string) =>
  readdirSync(released)
    .map((name) => name.slice(0, -'.yaml'.length))
    .filter((name) => parseVersion(name) !== undefined)
    .sort(compare)

/** The releases made before a released `version`, of those in `released`: the entries below its
 * own in `changelog` (newest first), as a later release of an older major (1.3.0 after 2.0.0) came
 * after it though its number is lower. */
const releasedBefore = (version: string, released: string, changelog: string): string[] => {
  const listed = [...changelog.matchAll(/^## (\d+\.\d+\.\d+) \(/gm)].map((heading) => heading[1]!)
  const below = new Set(listed.slice(listed.indexOf(version) + 1))
  return releasesIn(released).filter((name) => below.has(name))
}

/** The release a released `version` came after: the last of its major before it, or for the first
 * of a major the last of an older one, as `release` chose it; none for the first release. */
const releaseBefore = (version: string, before: readonly string[]): string | undefined =>
  before.filter((name) => parseVersion(name)![0] <= majorOf(version)).at(-1)

export interface EntryOptions {
  version: string
  date: string
  /** the release before, and the document released */
  previous: Record<string, any>
  current: Record<string, any>
  /** the incompatible changes the gate let through by their operations' lifecycle */
  allowed: string[]
  accepted: AcceptedChange[]
  /** why an entry already published is written anew (a correction) */
  correction?: string
  /** the newest document of the major, whose `x-unique` says since which release each rule
   * holds, for the documents released before they said it (by default, `current`) */
  stated?: Record<string, any>
}

/**
 * A release's changelog entry, from the comparison the gate makes (scripts/comparison.ts): the
 * first release of a major lists every breaking difference from the release before it, at every
 * place a client meets it; a later release lists its new refusals (a 4xx an operation gained)
 * apart from its compatible changes.
 */
export async function releaseEntry({ version, date, previous, current, allowed, accepted, correction, stated = current }: EntryOptions): Promise<string> {
  // (the first release of all is compared with nothing: its operations are its entry)
  const compared = previous.openapi === undefined ? [] : await compareDocuments(previous, current)
  // a 4xx HTTP answers only to a request with a header the release before did not take refuses
  // no request it took: said with what was added
  const changes = compared.map((change) => (onlyThroughNewRequests(change, previous) ? { ...change, impact: 'minor' as const } : change))
  // a reviewed change that refuses values the release before took is a refusal, said by them
  const narrowed = changes.flatMap((change) => {
    const reviewed = reviewedLines([change], accepted).length > 0
    const values = reviewed ? narrowedValues(change, previous, current) : undefined
    return values === undefined ? [] : [{ change, line: `${placeOf(change.path, current, previous)}: ${values}` }]
  })
  const kept = changes.filter((change) => !narrowed.some((found) => found.change === change))
  const differences = differencesOf(kept, previous, current)
  const before = previous.info?.version as string | undefined
  const firstOfMajor = before !== undefined && majorOf(version) > majorOf(before)
  const refusals = [
    ...(firstOfMajor ? [] : saidOnce(differences.filter((found) => found.rule === 'response-added'))),
    ...narrowed.map(({ line }) => line),
    ...(previous.openapi === undefined ? [] : newUniqueness(previous, current, stated)),
  ]
  return entry({
    version,
    date,
    previous,
    current,
    compatible: compatibleLines(kept, current, previous),
    allowed,
    reviewed: byReason(reviewedLines(kept, accepted)),
    // (within a major, the gate lets a new refusal through: listed apart, never as compatible)
    ...(firstOfMajor && { breaking: saidOnce(differences) }),
    refusals,
    ...(correction !== undefined && { correction }),
  })
}

/** `GET /a: why` and `GET /b: why`, as one line `GET /a, GET /b: why`. */
function byReason(lines: readonly string[]): string[] {
  const wheres = new Map<string, Set<string>>()
  for (const line of lines) {
    const at = line.indexOf(': ')
    const reason = line.slice(at + 2)
    wheres.set(reason, (wheres.get(reason) ?? new Set()).add(line.slice(0, at)))
  }
  return [...wheres].map(([reason, where]) => `${[...where].join(', ')}: ${reason}`)
}

export interface CorrectionOptions {
  version: string
  /** one line for readers: what the entry missed before */
  note: string
  released?: string
  changelog?: string
  accepted?: string
  dryRun?: boolean
}

/**
 * The changelog entry of a published release written anew from the released contracts, with the
 * engine of today, its date kept, and `note` saying what it missed before (docs/compatibility.md:
 * Correcting a published entry). The released contracts are not touched.
 */
export async function correct({
  version,
  note,
  released = releasedDir,
  changelog = changelogPath,
  accepted = acceptedFile,
  dryRun = false,
}: CorrectionOptions): Promise<ReleaseResult> {
  const releasedFile = join(released, `${version}.yaml`)
  if (!existsSync(releasedFile)) return { ok: false, lines: [`${version} was not released: ${relative(projectRoot, releasedFile)} does not exist`] }
  const text = readFileSync(changelog, 'utf8')
  const heading = new RegExp(`^## ${version.replaceAll('.', '\\.')} \\((\\d{4}-\\d{2}-\\d{2})\\)$`, 'm').exec(text)
  if (heading === null) return { ok: false, lines: [`${relative(projectRoot, changelog)} has no entry of ${version} to correct`] }
  if (note.trim() === '' || note.includes('\n')) return { ok: false, lines: ['--correct takes one line: what the entry missed before'] }
  const date = heading[1]!
  const before = releasedBefore(version, released, text)
  const last = releaseBefore(version, before)
  const previous = last === undefined ? {} : parse(readFileSync(join(released, `${last}.yaml`), 'utf8'))
  // what the gate let through when it was released: the releases before it, on its day
  const then = mkdtempSync(join(tmpdir(), 'petstore-correct-'))
  try {
    for (const name of before) writeFileSync(join(then, `${name}.yaml`), readFileSync(join(released, `${name}.yaml`)))
    // (the first release had nothing to be judged against)
    const gate = last === undefined ? undefined : await checkBreaking({ spec: releasedFile, released: then, accepted, now: new Date(`${date}T00:00:00Z`) })
    const written = await releaseEntry({
      version,
      date,
      previous,
      current: parse(readFileSync(releasedFile, 'utf8')),
      allowed: gate?.releases.find((findings) => findings.version === last)?.allowed ?? [],
      accepted: readAccepted(accepted),
      correction: note.trim(),
      // (a major no longer served: its own documents say what they say)
      stated: servedOf(majorOf(version)),
    })
    if (dryRun) return { ok: true, lines: [`would correct the entry of ${version} (--dry-run: nothing written):`, '', written] }
    const start = heading.index
    const next = text.slice(start + heading[0].length).search(/^## /m)
    const end = next === -1 ? text.length : start + heading[0].length + next
    writeFileSync(changelog, `${text.slice(0, start)}${written}${end === text.length ? '' : '\n'}${text.slice(end)}`)
    return {
      ok: true,
      lines: [
        `corrected the entry of ${version} in ${relative(projectRoot, changelog)}, from ${[...(last === undefined ? [] : [join(released, `${last}.yaml`)]), releasedFile].map((file) => relative(projectRoot, file)).join(' and ')}`,
      ],
    }
  } finally {
    rmSync(then, { recursive: true, force: true })
  }
}

/** generated/ beside `spec`, made anew from it and the documents served beside it (those of
 * contract/load.ts's specPaths of other names): it carries info.version, and CI refuses it stale.
 * Says so, or, when it cannot be made, what to run. */
async function regenerated(spec: string): Promise<string> {
  const dir = join(rootOf(spec), 'generated')
  const shown = `${relative(projectRoot, dir)}/`
  try {
    await generate(dir, servedBeside(spec))
    return `and ${shown} made anew from it`
  } catch (error) {
    return `but ${shown} could not be made anew (${(error as Error).message}): run npm run generate`
  }
}

/** The served document of major version `major` (bundled), if one is served. */
const servedOf = (major: number): Record<string, any> | undefined =>
  specPaths.filter((path) => majorOfSource(path) === major).map((path) => bundledSpec(path).document)[0]

/** The source of the served document of major version `major` (contract/versions/1.overlay.yaml
 * for 1, openapi.yaml for the newest), or the error that says there is none yet. */
function documentOf(major: number): string {
  const found = specPaths.find((path) => majorOfSource(path) === major)
  if (found === undefined)
    throw new Error(
      `no served document is of major version ${major}: make it first (docs/changing-the-api.md), beside ${specPaths.map((path) => relative(projectRoot, path)).join(', ')}`,
    )
  return found
}

/** The documents served with `spec`: the served ones, `spec` in place of the one of its major. */
export function servedBeside(spec: string): string[] {
  const major = majorOfSource(spec)
  return specPaths.map((path) => (majorOfSource(path) === major ? spec : path))
}

/** What a client never sees change: an example, and the order the examples run in (the docs
 * page's and the examples test's). The changelog leaves them out. */
const documentationOnly = (parts: readonly string[]) =>
  parts[0] === 'x-examples-order' || parts.some((key, i) => (key === 'example' || key === 'examples') && parts[i - 1] !== 'properties')

/** A uniqueness rule (`x-unique`): said in words among the refusals (scripts/refusals.ts), never as
 * a place where something was added. */
const saidAsRefusal = (parts: readonly string[]) => parts.at(-1) === 'x-unique'

/**
 * The compatible changes (rated minor), one line per kind and operation, each place by its part:
 * `GET /pets: added parameter \`id\` (query), response 200 header ETag`. A header added to several
 * answers is named once with their statuses, and operations that changed alike share a line. An
 * operation or event added is the entry's "Added"; examples are left out. `current` and
 * `previous` name the parameters and the items of named lists (tags).
 */
export function compatibleLines(changes: readonly Change[], current?: Record<string, any>, previous?: Record<string, any>): string[] {
  type Group = { where: string; kind: string; whats: Set<string>; headers: Map<string, string[]> }
  const grouped = new Map<string, Group>()
  for (const change of changes) {
    if (change.impact !== 'minor') continue
    const parts = keysOf(change.path)
    const inOperation = parts[0] === 'paths' || parts[0] === 'webhooks'
    if ((inOperation && parts.length <= 3) || documentationOnly(parts) || saidAsRefusal(parts)) continue
    const key = `${whereOf(change.path)}\0${change.kind}`
    const group = grouped.get(key) ?? { where: whereOf(change.path), kind: change.kind, whats: new Set(), headers: new Map() }
    grouped.set(key, group)
    // (a header of an answer: kept by name, its statuses gathered, to be named once; one that the
    // operation never sends, as a shared answer's lifecycle headers, not named)
    const [, , , section, status, headers, header] = parts
    if (inOperation && section === 'responses' && headers === 'headers' && parts.length === 7) {
      if (!sent(change, header!, status!, change.kind === 'removed' ? previous : current)) continue
      group.headers.set(header!, [...(group.headers.get(header!) ?? []), status!])
    } else
      for (const what of inOperation ? partsOf(change, current, previous) : [namedItem(current, parts) ?? (parts.slice(1).join('/') || parts[0]!)])
        group.whats.add(what)
  }
  // operations that changed alike, one line
  const alike = new Map<string, string[]>()
  for (const { where, kind, whats, headers } of grouped.values()) {
    if (whats.size === 0 && headers.size === 0) continue
    const said = `${kind} ${[...whats, ...headersOn(headers)].join(', ')}`
    alike.set(said, [...(alike.get(said) ?? []), where])
  }
  return [...alike].map(([said, wheres]) => `${wheres.join(', ')}: ${said}`)
}

/** The operations of a document, read once however many of its headers are asked about. */
const operationsRead = new WeakMap<object, ReturnType<typeof operationsOf>>()
function operationsIn(document: Record<string, any>) {
  const read = operationsRead.get(document) ?? operationsOf(document)
  operationsRead.set(document, read)
  return read
}

/** Whether the operation of a header of an answer (`change.path`, in `document`) sends it: the
 * lifecycle headers of a shared answer are sent by a deprecated operation alone. */
function sent(change: Change, header: string, status: string, document: Record<string, any> | undefined): boolean {
  if (document === undefined) return true
  const pointer = writtenAt(document, change.path)
  const written = pointer === undefined ? undefined : (resolvePointer(document, pointer) as { $ref?: string } | undefined)
  const component = (written?.$ref ?? pointer)?.match(/^#\/components\/headers\/([^/]+)$/)?.[1]
  const operation = operationsIn(document).find(({ pointer }) => change.path.startsWith(`${pointer}/`))
  const lifecycle = operation?.lifecycle
  return sendsHeader(header, component, status, {
    deprecated: lifecycle?.deprecation !== undefined,
    marked: lifecycle !== undefined && lifecycle.level !== 'stable',
  })
}

/** The parts a change names: a list of parameters added at once, each parameter by its name. */
function partsOf(change: Change, current?: Record<string, any>, previous?: Record<string, any>): string[] {
  const list = keysOf(change.path).at(-1) === 'parameters' ? resolvePointer(change.kind === 'removed' ? previous : current, change.path) : undefined
  if (!Array.isArray(list) || list.length === 0) return [partOf(change.path, current, previous)!]
  return list.map((_, i) => partOf(`${change.path}/${i}`, current, previous)!)
}

/** Headers by the statuses of the answers they were added to: `header Link on responses 400,
 * 401`, headers on the same answers named together. */
function headersOn(statuses: ReadonlyMap<string, string[]>): string[] {
  const headers = new Map<string, string[]>()
  for (const [header, on] of statuses) {
    const answers = on.length === 1 ? `response ${on[0]}` : `responses ${on.join(', ')}`
    headers.set(answers, [...(headers.get(answers) ?? []), header])
  }
  return [...headers].map(([answers, names]) => `${names.length === 1 ? 'header' : 'headers'} ${names.join(', ')} on ${answers}`)
}

/** An item of a list that has a name (a tag, a parameter), by its name: `tag orders`, not `tags/1`. */
function namedItem(document: Record<string, any> | undefined, parts: string[]): string | undefined {
  if (document === undefined || !/^\d+$/.test(parts.at(-1)!)) return undefined
  const item = parts.reduce<any>((node, part) => node?.[part], document)
  return typeof item?.name === 'string' ? `${parts.at(-2)!.replace(/s$/, '')} ${item.name}` : undefined
}

/** `npm run release -- ...args`: its exit status, 0 released (or corrected), 1 refused, 2 a usage
 * error or a file it cannot read. */
export async function main(args: string[], io: Io): Promise<number> {
  const options = {
    spec: { type: 'string' },
    released: { type: 'string' },
    changelog: { type: 'string' },
    accepted: { type: 'string' },
    now: { type: 'string' },
    'dry-run': { type: 'boolean' },
    correct: { type: 'string' },
  } as const
  let parsed
  try {
    parsed = parseArgs({ args, options, allowPositionals: true })
    if (parsed.positionals.length !== 1) throw new Error('give one VERSION')
  } catch (error) {
    io.stderr(
      `release: ${(error as Error).message}\nUsage: npm run -s release -- VERSION [--dry-run] | npm run -s release -- VERSION --correct 'what its entry missed'`,
    )
    return 2
  }
  const { now, 'dry-run': dryRun, correct: note, ...files } = parsed.values
  const version = parsed.positionals[0]!
  try {
    const result =
      note === undefined
        ? await release({ version, ...files, dryRun, ...(now !== undefined && { now: dayOption(now) }) })
        : await correct({ version, note, released: files.released, changelog: files.changelog, accepted: files.accepted, dryRun })
    io.stdout(result.lines.join('\n'))
    return result.ok ? 0 : 1
  } catch (error) {
    io.stderr(`release: ${(error as Error).message}`)
    return 2
  }
}

if (isEntry(import.meta.filename)) process.exitCode = await main(process.argv.slice(2), processIo)
