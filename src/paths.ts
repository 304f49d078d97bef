import { existsSync } from 'node:fs'
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
export const specPath = join(projectRoot, 'openapi.yaml')
export const generatedDir = join(projectRoot, 'generated')
