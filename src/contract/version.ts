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
