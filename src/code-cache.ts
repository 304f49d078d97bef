/**
 * The entry point of the built server (`node dist/src/server.js`; scripts/build.ts): it runs
 * the bundle of src/server.ts (dist/src/server.bundle.cjs) with V8's code cache, so that a
 * start does not parse and compile the same 2 MB of JavaScript again (about a quarter of the
 * start-up's CPU time).
 *
 * The cache (server.bundle.cjs.cache) holds the code compiled during a whole run: the build
 * makes it with one start and one request. Should V8 refuse it (another Node or V8 version), or
 * should it be missing, the bundle is compiled as usual and the cache written anew at exit, for
 * the next start; a folder that cannot be written is no error, only slower starts.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { constants, Script } from 'node:vm'

const bundle = fileURLToPath(new URL('./server.bundle.cjs', import.meta.url))
const cacheFile = `${bundle}.cache`

function readCache(): Buffer | undefined {
  try {
    return readFileSync(cacheFile)
  } catch {
    return undefined
  }
}

function writeCache(script: Script) {
  const partial = `${cacheFile}.${process.pid}`
  try {
    writeFileSync(partial, script.createCachedData())
    // (whole or not at all, should two instances write it at once)
    renameSync(partial, cacheFile)
  } catch {
    rmSync(partial, { force: true })
  }
}

/** The bundle, compiled with the cache when V8 takes it (the cache's buffer is not kept). */
function compile(): Script {
  const cachedData = readCache()
  // CommonJS's own wrapper: the bundle sees require, module and __filename as under Node's loader
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, 'utf8')}\n})`, {
    filename: bundle,
    cachedData,
    // the packages the bundle imports dynamically (OpenTelemetry's, tracing on) load as any
    // import() of the process does, found from the bundle's folder
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  })
  if (cachedData === undefined || script.cachedDataRejected) process.once('exit', () => writeCache(script))
  return script
}

const module = { exports: {} }
const wrapper = compile().runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void
wrapper(module.exports, createRequire(bundle), module, bundle, dirname(bundle))
