/**
 * npm run new-major: makes openapi.yaml the next major version, N+1, and writes the overlay that
 * gives version N back (contract/versions/N.overlay.yaml), so that version N is served exactly as
 * it was (docs/changing-the-api.md).
 *
 * In openapi.yaml, as written (its comments and layout kept): `info.version` becomes N+1.0.0, and
 * the version segment `/vN` becomes `/vN+1` wherever the text says it (its servers, the URLs its
 * headers document, its operations' descriptions) but in the API's description, which every
 * version shares. The overlay sets back each value that changed: one action
 * per object that holds one. The command checks that the overlay, applied to the new openapi.yaml,
 * gives version N's document value for value, and writes nothing otherwise.
 *
 * What is left to the server team, and said: the breaking change itself, in openapi.yaml; its
 * version change in src/versions/changes/ and the overlay actions that keep version N as it was;
 * and the prose that names the version by its number.
 *
 *   npm run -s new-major [-- --dir DIR]    (DIR: the project's folder, by default this one)
 * Exit status: 0 made; 1 refused (the overlay of version N is there already, or what it would
 * write does not give version N back), nothing written; 2 a usage error (an unknown argument).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { isDeepStrictEqual, parseArgs } from 'node:util'
import { isScalar, parse, parseDocument } from 'yaml'
import { applyOverlay, type OverlayAction } from '../src/contract/overlay.js'
import { bundleText, overlaysDirOf } from '../src/contract/load.js'
import { parseVersion, withVersion } from '../src/contract/version.js'
import { isEntry, type Io, processIo } from '../src/core/command-io.js'
import { projectRoot } from '../src/core/paths.js'

type Json = unknown
type Path = (string | number)[]

/** A node's place as an RFC 9535 normalized path: `$['paths']['/pets']['get']`, `$['servers'][0]`. */
export const jsonPath = (path: Path) =>
  `$${path.map((key) => (typeof key === 'number' ? `[${key}]` : `['${key.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}']`)).join('')}`

/** The actions that make `newer` into `older`, two documents of the same shape whose scalars may
 * differ: each object holding a scalar that differs is updated with its older values. A list
 * holding one is written whole (Overlay 1.0 replaces no entry of a list): removed from its
 * object, then given again. */
export function overlayActions(older: Json, newer: Json, path: Path = []): OverlayAction[] {
  if (typeof older !== 'object' || older === null || typeof newer !== 'object' || newer === null) return []
  const entries = Object.entries(older) as [string, Json][]
  const keyOf = (key: string): string | number => (Array.isArray(older) ? Number(key) : key)
  const differing = entries.filter(([key, value]) => typeof value !== 'object' && !isDeepStrictEqual(value, (newer as Record<string, Json>)[key]))
  if (Array.isArray(older) && differing.length > 0) {
    const list = path.at(-1) as string
    return [
      { target: jsonPath(path), description: `${list}, written whole`, remove: true },
      { target: jsonPath(path.slice(0, -1)), description: `${list}, as it was`, update: { [list]: older } },
    ]
  }
  const here: OverlayAction[] =
    differing.length === 0 ? [] : [{ target: jsonPath(path), update: Object.fromEntries(differing.map(([key, value]) => [key, value])) }]
  return [...here, ...entries.flatMap(([key, value]) => overlayActions(value, (newer as Record<string, Json>)[key], [...path, keyOf(key)]))]
}

/** openapi.yaml's text as major version N+1: its info.version (as a release sets it), and `/vN`
 * (a whole segment) as `/vN+1`, but in the API's description, which every version served shares
 * (docs/changing-the-api.md): the server team says there what the new major changes. */
export function nextMajorText(text: string, major: number): string {
  const versioned = withVersion(text, `${major + 1}.0.0`)
  const moved = (part: string) => part.replaceAll(new RegExp(`/v${major}(?![0-9A-Za-z_])`, 'g'), `/v${major + 1}`)
  const description = parseDocument(versioned).getIn(['info', 'description'], true)
  const [start, , end] = isScalar(description) && description.range ? description.range : [versioned.length, 0, versioned.length]
  return moved(versioned.slice(0, start)) + versioned.slice(start, end) + moved(versioned.slice(end))
}

export interface NewMajor {
  ok: boolean
  lines: string[]
}

/** openapi.yaml of the project at `root` made the next major, and the overlay that gives its
 * major back written; or, refused, why, with nothing written. */
export function newMajor(root: string = projectRoot): NewMajor {
  const spec = join(root, 'openapi.yaml')
  const text = readFileSync(spec, 'utf8')
  const older = parse(text) as { info: { title: string; version: string } }
  const major = parseVersion(older.info.version)?.[0]
  if (major === undefined) return { ok: false, lines: [`openapi.yaml: info.version ${JSON.stringify(older.info.version)} is not MAJOR.MINOR.PATCH`] }
  const overlayFile = join(overlaysDirOf(root), `${major}.overlay.yaml`)
  const shown = relative(root, overlayFile)
  if (existsSync(overlayFile)) return { ok: false, lines: [`${shown} is there already: version ${major} is an older major already`] }
  const nextText = nextMajorText(text, major)
  const newer = parse(nextText) as unknown
  const overlay = {
    overlay: '1.0.0',
    info: { title: `Version ${major} of ${older.info.title}, from version ${major + 1}`, version: older.info.version },
    extends: `../../generated/v${major + 1}/openapi.yaml`,
    actions: overlayActions(older, newer),
  }
  const { document, unmatched } = applyOverlay(newer, overlay, shown)
  if (!isDeepStrictEqual(document, older) || unmatched.length > 0)
    return {
      ok: false,
      lines: [`${shown} would not give version ${major} back: openapi.yaml holds what this command cannot tell apart; make the major by hand`],
    }
  mkdirSync(overlaysDirOf(root), { recursive: true })
  const header = [
    `# Version ${major} (its release ${older.info.version}), made from version ${major + 1} (openapi.yaml) by this Overlay`,
    `# (Overlay Specification 1.0.0), written by \`npm run new-major\`: each action sets back what`,
    `# version ${major + 1} says otherwise. A breaking change made in openapi.yaml adds the actions that`,
    `# keep version ${major} as it was, and its version change in src/versions/changes/ (docs/changing-the-api.md).`,
  ]
  writeFileSync(overlayFile, `${header.join('\n')}\n${bundleText(overlay)}`)
  writeFileSync(spec, nextText)
  const prose = nextText.split('\n').filter((line) => new RegExp(`\\bversion ${major}\\b`, 'i').test(line)).length
  return {
    ok: true,
    lines: [
      `openapi.yaml is version ${major + 1}.0.0, served at /v${major + 1}; ${shown} gives version ${major} back (${overlay.actions.length} actions)`,
      ...(prose > 0 ? [`openapi.yaml names version ${major} in ${prose} line(s) of prose: say what version ${major + 1} is there`] : []),
      `next: npm run generate; make the breaking change in openapi.yaml; npm run check:breaking names each difference and the change to write`,
    ],
  }
}

/** `npm run new-major [-- --dir DIR]`: the project at DIR (by default this one). */
export async function main(args: string[], io: Io): Promise<number> {
  let dir: string | undefined
  try {
    dir = parseArgs({ args, options: { dir: { type: 'string' } } }).values.dir
  } catch (error) {
    io.stderr(`new-major: ${(error as Error).message}`)
    return 2
  }
  const { ok, lines } = newMajor(dir)
  for (const line of lines) (ok ? io.stdout : io.stderr)(line)
  return ok ? 0 : 1
}

if (isEntry(import.meta.filename)) process.exitCode = await main(process.argv.slice(2), processIo)
