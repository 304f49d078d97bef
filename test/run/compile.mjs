/**
 * node test/run/compile.mjs: the TypeScript of src/, scripts/, test/, bench/ and generated/
 * compiled once into .build/ (same layout, `.ts` → `.js`), with source maps, for the tests and
 * every process they start: tap runs it before the test files (.taprc's `before`), and
 * test/run/compiled.mjs sends every `.ts` file of the project that Node is asked to load to its
 * compiled twin. Not minified: a stack trace reads as the source (and, with
 * --enable-source-maps, names its lines); V8's coverage is mapped back to the sources through
 * the maps.
 *
 * esbuild compiles file by file, without checking types (`npm run typecheck` does): the whole
 * tree in about half a second, so it is compiled whole every time, and what was compiled from a
 * file since removed is removed. Plain JavaScript, so that it runs before anything is
 * compiled.
 */
import { globSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = fileURLToPath(new URL('../../', import.meta.url))
export const outDir = join(root, '.build')

/** The project's TypeScript, relative to its root. (The SDK programs of test/fixtures/sdk/ too:
 * tsconfig.json leaves them out, as they are type-checked against the clients test/sdk.test.ts
 * generates, but the test imports what they must report, and esbuild checks no types.) */
const sources = () =>
  ['src', 'scripts', 'test', 'bench', 'generated'].flatMap((folder) => globSync(`${folder}/**/*.ts`, { cwd: root })).filter((file) => !file.endsWith('.d.ts'))

export async function compile() {
  const entryPoints = sources()
  await build({
    absWorkingDir: root,
    entryPoints,
    outdir: outDir,
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node22',
    sourcemap: 'linked',
    logLevel: 'warning',
  })
  // (not the whole folder emptied first: another run of the tests may be reading it)
  const twins = new Set(entryPoints.flatMap((file) => [file.replace(/\.ts$/, '.js'), file.replace(/\.ts$/, '.js.map')]))
  for (const file of globSync('**/*.{js,js.map}', { cwd: outDir })) if (!twins.has(file)) rmSync(join(outDir, file))
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await compile()
