/** The resolve hook of test/run/compiled.mjs (module hooks run in a thread of their own). */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = new URL('../../', import.meta.url).href
const built = new URL('.build/', root).href

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context)
  const { url } = resolved
  if (!url.startsWith(root) || url.startsWith(built) || !url.endsWith('.ts') || url.includes('/node_modules/')) return resolved
  const twin = `${built}${url.slice(root.length, -'.ts'.length)}.js`
  if (!existsSync(fileURLToPath(twin)))
    throw new Error(`${fileURLToPath(url)} has no compiled twin in .build/: run node test/run/compile.mjs (tap does it before its test files)`)
  return { url: twin, format: 'module', shortCircuit: true }
}
