/**
 * npm run build [-- OUT_DIR]: the server as `node dist/src/server.js` runs it (OUT_DIR: dist).
 *
 *   dist/src/server.bundle.cjs        src/server.ts and what it imports, in one file (esbuild)
 *   dist/src/server.bundle.cjs.cache  V8's code cache of it, made by one start and one request
 *   dist/src/server.js                the entry: runs the bundle with its cache (src/code-cache.ts)
 *   dist/scripts/keys.js, migrate.js  `npm run keys` and `npm run migrate`, compiled
 *
 * It runs without tsx (a production install has none): `npm run build` compiles this file with
 * esbuild into dist/build.mjs first. A build of what the last one was made from does nothing
 * (dist/build-inputs.json: every file esbuild read, the Node and this builder), so that
 * `npm start`, `npm run keys` and `npm run migrate`, which build first, start at once.
 *
 * One bundle, because a start-up spent finding and compiling some 600 modules of node_modules
 * one by one (kysely, typebox, ajv, fastify, pg...) was most of a cold start; as one file, with
 * the code cache, it is read at once and not compiled again. Left outside, loaded from
 * node_modules as usual: better-sqlite3, whose native addon finds its own files at run time, and
 * pg's optional native driver, which is not installed; OpenTelemetry's SDK (and its core), imported
 * dynamically only when tracing is on (src/ops/tracing.ts), so that a server without it neither
 * loads nor compiles it (its API, which prom-client requires anyway, is bundled: one copy of
 * it, whose global the SDK registers its tracer in). @fastify/swagger-ui is bundled, its page
 * still served from node_modules (swaggerUiFolders).
 * generated/ is read at run time, as before.
 *
 * fastify-openapi-glue gets src/http/spec-validator.ts in place of
 * @seriousme/openapi-schema-validator: the same validator, with the meta-schema compiled by
 * `npm run generate` instead of at every start.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createInterface } from 'node:readline'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild'
import { isEntry } from '../src/core/command-io.js'
import { projectRoot } from '../src/core/paths.js'

const require = createRequire(import.meta.url)

const external = ['better-sqlite3', 'pg-native', '@opentelemetry/sdk-node', '@opentelemetry/core']

/** @fastify/swagger-ui serves its page from its own folder, found from `__dirname`: in the
 * bundle, its files that ask get the folder they have in node_modules (found at run time, from
 * `swaggerUiRoot` of the banner). */
const swaggerUiFolders: Plugin = {
  name: 'swagger-ui-folders',
  setup(builder) {
    const root = dirname(require.resolve('@fastify/swagger-ui/package.json'))
    builder.onLoad({ filter: /[\\/]node_modules[\\/]@fastify[\\/]swagger-ui[\\/].*\.js$/ }, async ({ path }) => {
      const contents = await readFile(path, 'utf8')
      if (!contents.includes('__dirname')) return undefined
      const folder = JSON.stringify(relative(root, dirname(path)).replaceAll(sep, '/'))
      return { contents: `var __dirname = require('node:path').join(swaggerUiRoot, ${folder});\n${contents}`, loader: 'js' }
    })
  },
}

/** The substitution for glue, and for glue only: the module itself imports the package. (The
 * tests' module hook, test/run/compiled-hooks.mjs, makes the same one: keep the two alike.) */
const precompiledSpecValidator: Plugin = {
  name: 'precompiled-spec-validator',
  setup(builder) {
    const replacement = join(projectRoot, 'src', 'http', 'spec-validator.ts')
    builder.onResolve({ filter: /^@seriousme\/openapi-schema-validator$/ }, ({ importer }) =>
      /[\\/]fastify-openapi-glue[\\/]/.test(importer) ? { path: replacement } : undefined,
    )
  },
}

const common: BuildOptions = { absWorkingDir: projectRoot, bundle: true, platform: 'node', target: 'node22', logLevel: 'warning' }

/** The built files, relative to the build's folder. */
const outputs = ['src/server.bundle.cjs', 'src/server.bundle.cjs.cache', 'src/server.js', 'scripts/keys.js', 'scripts/migrate.js']

/** What a build was made from: the Node that warmed it up, the builder itself (this file, as
 * compiled), and each source file's size and time of change. Kept beside the build
 * (build-inputs.json), so that the next build of the same inputs does nothing. */
interface Inputs {
  node: string
  builder: string
  files: Record<string, [size: number, modified: number]>
}

/** The inputs as they are now: `files`, relative to the project root. */
export function inputsOf(files: Iterable<string>, builder = process.argv[1]!): Inputs {
  const stated = [...files].map((file) => {
    const { size, mtimeMs } = statSync(join(projectRoot, file))
    return [file, [size, mtimeMs]] satisfies [string, [number, number]]
  })
  return { node: process.version, builder: createHash('sha256').update(readFileSync(builder)).digest('hex'), files: Object.fromEntries(stated) }
}

/** Whether the build in `outDir` is whole and was made from the inputs as they are now (a file
 * gone, changed or touched since, another Node or another builder: no). */
export function upToDate(outDir: string, builder = process.argv[1]!): boolean {
  if (!outputs.every((file) => existsSync(join(outDir, file)))) return false
  let last: Inputs
  try {
    last = JSON.parse(readFileSync(join(outDir, 'build-inputs.json'), 'utf8')) as Inputs
    return JSON.stringify(inputsOf(Object.keys(last.files), builder)) === JSON.stringify(last)
  } catch {
    // no record, an unreadable one, or one of its files gone
    return false
  }
}

/** Builds the server into `outDir` unless it is up to date (then it resolves to false, at once). */
export async function buildServer(outDir = join(projectRoot, 'dist')): Promise<boolean> {
  if (upToDate(outDir)) return false
  const bundle = join(outDir, 'src', 'server.bundle.cjs')
  const metafiles: Metafile[] = []
  const built = ({ metafile }: { metafile?: Metafile }) => metafiles.push(metafile!)
  rmSync(join(outDir, 'build-inputs.json'), { force: true })
  await build({
    metafile: true,
    ...common,
    entryPoints: ['src/server.ts'],
    outfile: bundle,
    // CommonJS, which V8's code cache takes (node:vm); the modules' import.meta.url is the bundle's
    format: 'cjs',
    define: { 'import.meta.url': '__bundleUrl' },
    banner: {
      js:
        "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;" +
        "const swaggerUiRoot = require('node:path').dirname(require.resolve('@fastify/swagger-ui/package.json'));",
    },
    external,
    plugins: [precompiledSpecValidator, swaggerUiFolders],
    // less to read and compile. No keepNames: it wraps every function made at run time in a call
    // (`__name`), per request too; identifiers are not minified, so stack traces keep their names.
    minifyWhitespace: true,
    minifySyntax: true,
    // beside it, not in it: for bench/profile-summary.mjs, which puts profiles back in their sources
    sourcemap: 'external',
    sourcesContent: false,
  }).then(built)
  await build({ ...common, metafile: true, entryPoints: ['src/code-cache.ts'], outfile: join(outDir, 'src', 'server.js'), format: 'esm' }).then(built)
  // the operator's commands (npm run keys, npm run migrate), runnable without tsx
  await build({
    ...common,
    metafile: true,
    entryPoints: ['scripts/keys.ts', 'scripts/migrate.ts'],
    outdir: join(outDir, 'scripts'),
    format: 'esm',
    packages: 'external',
  }).then(built)
  rmSync(`${bundle}.cache`, { force: true })
  await warmUp(join(outDir, 'src', 'server.js'))
  // (written last: a build stopped half-way is built again)
  const files = new Set(metafiles.flatMap((metafile) => Object.keys(metafile.inputs)))
  writeFileSync(join(outDir, 'build-inputs.json'), JSON.stringify(inputsOf(files)))
  return true
}

/**
 * One start of the built server (`entry`) and one request, on a scratch SQLite file: it writes
 * its code cache as it exits. Bounded: a server silent for a minute is killed. The server gets
 * these settings and no other: a build does not depend on the environment it runs in (the
 * user's REDIS_URL, METRICS_PORT or a bad setting are for the start that follows, which
 * reports them).
 */
export async function warmUp(entry: string) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-build-'))
  const key = randomBytes(16).toString('hex')
  const env = { HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', API_KEYS: key, DATABASE_URL: `sqlite:${join(dir, 'warm-up.db')}` }
  const child = spawn(process.execPath, [entry], { env, stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = once(child, 'exit')
  const bound = setTimeout(() => child.kill('SIGKILL'), 60_000)
  const log = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  try {
    const url = await listeningAt(log)
    const response = await fetch(`${url}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } })
    await response.text()
    if (response.status !== 200) {
      // what went wrong is in the server's log, which ends as it stops
      child.kill('SIGTERM')
      const errors = await errorsLogged(log)
      throw new Error(`the built server answered ${response.status}${errors.length > 0 ? `; it logged: ${errors.join('; ')}` : ''}`)
    }
    child.kill('SIGTERM')
    const [code] = (await exited) as [number | null]
    if (code !== 0) throw new Error(`the built server exited with ${code}`)
  } finally {
    clearTimeout(bound)
    child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The URL the server logs when it listens. */
async function listeningAt(log: AsyncIterator<string>): Promise<string> {
  const lines: string[] = []
  for (let next = await log.next(); !next.done; next = await log.next()) {
    const url = /"url":"(http:\/\/[^"]+)"/.exec(next.value)?.[1]
    if (url !== undefined) return url
    lines.push(next.value)
  }
  throw new Error(`the built server ended before it listened${lines.length > 0 ? `:\n${lines.join('\n')}` : ' (its words above)'}`)
}

/** The errors the server logs from now until its log ends, each `message: the error's message`. */
async function errorsLogged(log: AsyncIterator<string>): Promise<string[]> {
  const errors: string[] = []
  for (let next = await log.next(); !next.done; next = await log.next()) {
    const entry = parsedLine(next.value)
    if (entry !== undefined && entry.level >= 50) errors.push(entry.err === undefined ? entry.msg : `${entry.msg}: ${entry.err.message}`)
  }
  return errors
}

interface LogLine {
  level: number
  msg: string
  err?: { message: string }
}

/** A line of the server's JSON log, or undefined for a line that is not JSON. */
function parsedLine(line: string): LogLine | undefined {
  try {
    return JSON.parse(line) as LogLine
  } catch {
    return undefined
  }
}

// (an argument is where to build instead of dist/). A failure is said in words, without a
// stack: what the built server said, when it did not start (better-sqlite3 built for another
// Node.js, say), is what to act on.
if (isEntry(import.meta.filename)) {
  await buildServer(...process.argv.slice(2, 3).map((dir) => resolve(dir))).catch((error: Error) => {
    console.error(`build: ${error.message}`)
    process.exit(1)
  })
}
