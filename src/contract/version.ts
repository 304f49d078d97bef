/** Versions of the contract: `info.version`, MAJOR.MINOR.PATCH (Semantic Versioning). */

export type Version = readonly [major: number, minor: number, patch: number]

const pattern = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/

/** MAJOR.MINOR.PATCH as numbers, or undefined when `text` is not one. */
export function parseVersion(text: unknown): Version | undefined {
  const match = typeof text === 'string' ? pattern.exec(text) : null
  return match === null ? undefined : [Number(match[1]), Number(match[2]), Number(match[3])]
}

/** Negative, zero or positive as `a` comes before, with or after `b`. */
export const compareVersions = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]

export const versionText = (version: Version) => version.join('.')

/** openapi.yaml's text with `info.version` set: the first `version:` line under `info:`. An
 * overlay's `info` is its own (its version: the one it gives); the version of the document it
 * gives is set by its action on `$.info`, the first `version:` line under that action's `update:`. */
export function withVersion(source: string, version: string): string {
  const info = /^info:\n((?:[ \t].*\n|\n)*?)([ \t]+)version:[^\n]*\n/m
  if (!info.test(source)) throw new Error('openapi.yaml has no info.version line to set')
  const set = source.replace(info, (_, before: string, indent: string) => `info:\n${before}${indent}version: ${version}\n`)
  if (!/^overlay:/m.test(source)) return set
  const action = /^( *- target: \$\.info\n(?: {4}.*\n|\n)*? {6}version:)[^\n]*\n/m
  if (!action.test(set)) throw new Error('the overlay has no action on $.info that sets version under its update')
  return set.replace(action, (_, before: string) => `${before} ${version}\n`)
}
