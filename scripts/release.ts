/**
 * npm run release -- VERSION: makes a release of the served document of VERSION's major
 * (openapi.yaml, openapi-vN.yaml; docs/compatibility.md).
 *
 * It refuses a version that is not above the last release, sets `info.version` (the one line,
 * the file otherwise as written), runs the breaking-change gate on the result (a major bump
 * needs servers ending in /v<major>, as the gate says), and only then writes the document,
 * contract/released/VERSION.yaml (the document as served: bundled with the shared parts) and
 * VERSION's entry at the top of contract/CHANGELOG.md, and
 * makes generated/ (beside the spec) anew, as `npm run generate` does.
 *
 *   npm run -s release -- VERSION [--spec FILE --released DIR --changelog FILE --accepted FILE --now YYYY-MM-DD]
 * Exit status: 0 released; 1 refused (each reason printed), nothing written; 2 a usage error
 * (no VERSION, or one that is not MAJOR.MINOR.PATCH, an unknown option, a --now that is not a
 * date) or a file it cannot read.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { parse } from 'yaml'
import { keysOf } from '../src/contract/pointer.js'
import { compareVersions, majorOfSpecFile, parseVersion } from '../src/contract/version.js'
import { bundledSpec, bundleText, specPaths } from '../src/contract/load.js'
import { changelogPath, projectRoot } from '../src/core/paths.js'
import { entry, withEntry } from './changelog.js'
import { acceptedFile, type Change, checkBreaking, classify, dayOption, diff, readAccepted, releasedDir, reviewedLines, whereOf } from './check-breaking.js'
import { generate } from './generate.js'

const compare = (a: string, b: string) => compareVersions(parseVersion(a)!, parseVersion(b)!)

export interface ReleaseOptions {
  version: string
  spec?: string
  released?: string
  changelog?: string
  accepted?: string
  now?: Date
}

export interface ReleaseResult {
  ok: boolean
  lines: string[]
}

/** openapi.yaml's text with `info.version` set: the first `version:` line under `info:`. */
export function withVersion(source: string, version: string): string {
  const info = /^info:\n((?:[ \t].*\n|\n)*?)([ \t]+)version:[^\n]*\n/m
  if (!info.test(source)) throw new Error('openapi.yaml has no info.version line to set')
  return source.replace(info, (_, before: string, indent: string) => `info:\n${before}${indent}version: ${version}\n`)
}

export async function release({ version, spec, released = releasedDir, changelog = changelogPath, accepted = acceptedFile, now = new Date() }: ReleaseOptions): Promise<ReleaseResult> {
  // (a usage error, not a refusal)
  const major = parseVersion(version)?.[0]
  if (major === undefined) throw new Error(`${JSON.stringify(version)} is not a version MAJOR.MINOR.PATCH`)
  spec ??= documentOf(major)
  // each major version has releases of its own: the first of a major comes after the older ones'
  // (and a version older than every release is compared with the first)
  const releases = readdirSync(released)
    .map((name) => name.slice(0, -'.yaml'.length))
    .filter((name) => parseVersion(name) !== undefined)
    .sort(compare)
  const last = releases.filter((name) => parseVersion(name)![0] <= major).at(-1) ?? releases[0]
  if (last === undefined) return { ok: false, lines: [`${released} holds no released contract to release after`] }
  if (compare(version, last) <= 0) return { ok: false, lines: [`${version} is not above the last release, ${last}`] }

  // the document's own text with its version set, and the bundle of it that is released
  const own = withVersion(readFileSync(spec, 'utf8'), version)
  const { document: current } = bundledSpec(spec, false, own)
  const source = bundleText(current)
  const work = mkdtempSync(join(tmpdir(), 'petstore-release-'))
  try {
    const candidate = join(work, 'openapi.yaml')
    writeFileSync(candidate, source)
    const gate = await checkBreaking({ spec, text: own, released, accepted, now })
    if (!gate.ok) return { ok: false, lines: [`release ${version} refused by the breaking-change gate:`, ...gate.lines] }

    const previousFile = join(released, `${last}.yaml`)
    const changes = await diff(previousFile, candidate)
    // the changes the lifecycle allowed, against the last release
    const allowed = gate.releases.find((findings) => findings.version === last)?.allowed ?? []
    const text = entry({
      version,
      date: now.toISOString().slice(0, 10),
      previous: parse(readFileSync(previousFile, 'utf8')),
      current,
      compatible: compatibleLines(changes, current),
      allowed,
      reviewed: reviewedLines(changes, readAccepted(accepted)),
      ...(parseVersion(version)![0] > parseVersion(last)![0] && { breaking: classify(changes, readAccepted(accepted)).breaking }),
    })
    const releasedFile = join(released, `${version}.yaml`)
    writeFileSync(spec, own)
    writeFileSync(releasedFile, source)
    const beside = servedBeside(spec).filter((path) => path !== spec && existsSync(path)).map((path) => bundledSpec(path).document as Record<string, any>)
    writeFileSync(changelog, withEntry(readFileSync(changelog, 'utf8'), text, [...beside, current].sort((a, b) => compare(a.info.version, b.info.version))))
    const shown = (file: string) => relative(projectRoot, file)
    return {
      ok: true,
      lines: [...gate.lines, `released ${version}: ${shown(releasedFile)}, info.version of ${shown(spec)}, its entry in ${shown(changelog)}, ${await regenerated(spec)}`],
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** generated/ beside `spec`, made anew from it and the documents served beside it (those of
 * contract/load.ts's specPaths of other names): it carries info.version, and CI refuses it stale.
 * Says so, or, when it cannot be made, what to run. */
async function regenerated(spec: string): Promise<string> {
  const dir = join(dirname(spec), 'generated')
  const shown = `${relative(projectRoot, dir)}/`
  try {
    await generate(dir, servedBeside(spec))
    return `and ${shown} made anew from it`
  } catch (error) {
    return `but ${shown} could not be made anew (${(error as Error).message}): run npm run generate`
  }
}

/** The served document of major version `major` (openapi-v2.yaml for 2), or the error that
 * says there is none yet. */
function documentOf(major: number): string {
  const found = specPaths.find((path) => majorOfSpecFile(basename(path)) === major)
  if (found === undefined) throw new Error(`no served document is of major version ${major}: write it first (docs/compatibility.md), beside ${specPaths.map((path) => basename(path)).join(', ')}`)
  return found
}

/** The documents served with `spec`: the served ones, `spec` in place of the one of its name. */
export const servedBeside = (spec: string) => specPaths.map((path) => (basename(path) === basename(spec) ? spec : path))

/**
 * The compatible changes (rated minor), one line per place and kind: `GET /pets: added response
 * 429; headers RateLimit, RateLimit-Policy`. A path or operation added is the entry's "Added".
 */
export function compatibleLines(changes: Change[], current?: Record<string, any>): string[] {
  const grouped = new Map<string, Set<string>>()
  for (const change of changes) {
    if (change.impact !== 'minor') continue
    const parts = keysOf(change.path)
    const inOperation = parts[0] === 'paths' || parts[0] === 'webhooks'
    if (inOperation && parts.length <= 3) continue
    const rest = inOperation ? parts.slice(3) : parts.slice(1)
    const what =
      rest[0] === 'responses' && rest.length === 2
        ? `response ${rest[1]}`
        : rest.at(-2) === 'headers'
          ? `header ${rest.at(-1)}`
          : rest.at(-2) === 'properties'
            ? `property ${rest.at(-1)}`
            : (namedItem(current, parts) ?? (rest.join('/') || parts[0]!))
    const key = `${whereOf(change.path)}: ${change.kind}`
    grouped.set(key, (grouped.get(key) ?? new Set()).add(what))
  }
  return [...grouped].map(([key, whats]) => `${key} ${[...whats].join(', ')}`)
}

/** An item of a list that has a name (a tag, a parameter), by its name: `tag orders`, not `tags/1`. */
function namedItem(document: Record<string, any> | undefined, parts: string[]): string | undefined {
  if (document === undefined || !/^\d+$/.test(parts.at(-1)!)) return undefined
  const item = parts.reduce<any>((node, part) => node?.[part], document)
  return typeof item?.name === 'string' ? `${parts.at(-2)!.replace(/s$/, '')} ${item.name}` : undefined
}

if (process.argv[1] === import.meta.filename) {
  const options = { spec: { type: 'string' }, released: { type: 'string' }, changelog: { type: 'string' }, accepted: { type: 'string' }, now: { type: 'string' } } as const
  let parsed
  try {
    parsed = parseArgs({ options, allowPositionals: true })
    if (parsed.positionals.length !== 1) throw new Error('give one VERSION')
  } catch (error) {
    console.error(`release: ${(error as Error).message}\nUsage: npm run -s release -- VERSION`)
    process.exit(2)
  }
  const { now, ...files } = parsed.values
  try {
    const result = await release({ version: parsed.positionals[0]!, ...files, ...(now !== undefined && { now: dayOption(now) }) })
    console.log(result.lines.join('\n'))
    process.exitCode = result.ok ? 0 : 1
  } catch (error) {
    console.error(`release: ${(error as Error).message}`)
    process.exitCode = 2
  }
}
