import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The nearest folder at or above `start` that holds a package.json. Found rather than
 * hard-coded, so the same code runs from src/ (tsx, tap) and from dist/src/ (npm start). */
export function findProjectRoot(start: string): string {
  let dir = start
  while (!existsSync(join(dir, 'package.json'))) {
    if (dir === dirname(dir)) throw new Error(`no package.json at or above ${start}`)
    dir = dirname(dir)
  }
  return dir
}

export const projectRoot = findProjectRoot(dirname(fileURLToPath(import.meta.url)))
/** The newest major version's document, openapi.yaml (every served document: src/contract/load.ts's specPaths) */
export const specPath = join(projectRoot, 'openapi.yaml')
export const generatedDir = join(projectRoot, 'generated')
/** The consumers' changelog, written by `npm run release` and served under every version (`x-service.published.changelog`). */
export const changelogPath = join(projectRoot, 'contract', 'CHANGELOG.md')

const requireHere = createRequire(import.meta.url)

/** A CommonJS module made by `npm run generate` (at `file`, in generated/ or a test's folder),
 * or undefined when there is none. */
export function loadGenerated<T>(file: string): T | undefined {
  return existsSync(file) ? (requireHere(file) as T) : undefined
}
