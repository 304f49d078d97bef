/** The resolve hook of test/run/compiled.mjs (module hooks run in a thread of their own). */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = new URL('../../', import.meta.url).href
const built = new URL('.build/', root).href

/** What scripts/build.ts gives fastify-openapi-glue in place of @seriousme/openapi-schema-validator
 * (the same validator, its meta-schema compiled by `npm run generate`): the tests run glue as the
 * server runs it, not compiling the meta-schema anew for every app they build. */
const specValidator = `${built}src/http/spec-validator.js`
const glue = /[\\/]node_modules[\\/]fastify-openapi-glue[\\/]/

export async function resolve(specifier, context, nextResolve) {
  if (specifier === '@seriousme/openapi-schema-validator' && glue.test(context.parentURL ?? ''))
    return { url: specValidator, format: 'module', shortCircuit: true }
  const resolved = await nextResolve(specifier, context)
  const { url } = resolved
  if (!url.startsWith(root) || url.startsWith(built) || !url.endsWith('.ts') || url.includes('/node_modules/')) return resolved
  const twin = `${built}${url.slice(root.length, -'.ts'.length)}.js`
  if (!existsSync(fileURLToPath(twin)))
    throw new Error(`${fileURLToPath(url)} has no compiled twin in .build/: run node test/run/compile.mjs (tap does it before its test files)`)
  return { url: twin, format: 'module', shortCircuit: true }
}
