import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { projectRoot } from '../src/core/paths.js'
import { upToDate, warmUp } from '../scripts/build.js'
import { api, newest } from './helpers/app.js'
import { processBound, run, within } from './helpers/processes.js'

// `npm run build`: the server as `node dist/src/server.js` runs it, one bundle with its code
// cache. Built here into a folder of its own under dist/, and run as production runs it.

const out = join(projectRoot, 'dist', `test-build-${process.pid}`)
const entry = join(out, 'src', 'server.js')
const cache = join(out, 'src', 'server.bundle.cjs.cache')
t.teardown(() => rmSync(out, { recursive: true, force: true }))

/** The built server on a fresh SQLite file, with one API key, until it logs its URL. */
async function startBuilt(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-built-'))
  const env = { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', API_KEYS: 'built-key', DATABASE_URL: `sqlite:${join(dir, 'pets.db')}` }
  const child: ChildProcess = spawn(process.execPath, [entry], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  const exited = once(child, 'exit')
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
    rmSync(dir, { recursive: true, force: true })
  })
  const deadline = Date.now() + processBound
  let url: string | undefined
  while ((url = /"url":"(http:\/\/[^"]+)"/.exec(output)?.[1]) === undefined) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the built server did not start:\n${output}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const stop = async () => {
    child.kill('SIGTERM')
    const [code] = await within(processBound, exited)
    return code as number
  }
  return { url, stop }
}

t.test('the build: one bundle and its code cache, serving the contract', async (t) => {
  const { code, stderr } = await run(t, 'scripts/build.ts', [out])
  t.equal(code, 0, stderr)
  t.ok(existsSync(cache), 'the code cache, written by the warm-up start')
  const bundle = readFileSync(join(out, 'src', 'server.bundle.cjs'), 'utf8')
  t.match(bundle, 'openapi-schema.cjs', 'glue checks the spec with the generated meta-schema validator')

  const server = await startBuilt(t)
  const pets = await fetch(`${server.url}${api}/pets?limit=1`, { headers: { authorization: 'Bearer built-key' } })
  t.equal(pets.status, 200)
  t.strictSame(await pets.json(), [])
  const { docs, yaml } = newest.service.paths
  const spec = await fetch(`${server.url}${yaml}`)
  t.equal(
    await spec.text(),
    readFileSync(join(projectRoot, 'generated', `v${newest.version[0]}`, 'openapi.yaml'), 'utf8'),
    `${newest.file} as bundled, byte for byte`,
  )
  // the documentation page's files, from @fastify/swagger-ui's folder in node_modules
  for (const path of [docs, `${docs}static/swagger-ui.css`, `${docs}static/logo.svg`]) {
    const page = await fetch(`${server.url}${path}`)
    await page.arrayBuffer()
    t.equal(page.status, 200, path)
  }
  t.equal(await server.stop(), 0)
})

t.test('a build of the same sources does nothing; a changed or missing source, another builder, a lost record build again', async (t) => {
  // (the builder the build's process ran: this file's compiled neighbour)
  const builder = fileURLToPath(import.meta.resolve('../scripts/build.js'))
  t.ok(upToDate(out, builder), 'the build just made is up to date')
  const bundle = join(out, 'src', 'server.bundle.cjs')
  const builtAt = statSync(bundle).mtimeMs
  const again = await run(t, 'scripts/build.ts', [out])
  t.equal(again.code, 0, again.stderr)
  t.equal(statSync(bundle).mtimeMs, builtAt, 'nothing built again')
  t.notOk(upToDate(out, fileURLToPath(import.meta.url)), 'another builder')

  const record = join(out, 'build-inputs.json')
  const kept = readFileSync(record, 'utf8')
  const inputs = JSON.parse(kept) as { files: Record<string, [number, number]> }
  t.ok(Object.keys(inputs.files).includes('src/server.ts'), 'the sources esbuild read are recorded')
  writeFileSync(record, JSON.stringify({ ...inputs, files: { ...inputs.files, 'src/server.ts': [0, 0] } }))
  t.notOk(upToDate(out, builder), 'a source changed')
  writeFileSync(record, JSON.stringify({ ...inputs, files: { ...inputs.files, 'src/gone.ts': [1, 1] } }))
  t.notOk(upToDate(out, builder), 'a source gone')
  writeFileSync(record, '{')
  t.notOk(upToDate(out, builder), 'a record that cannot be read')
  writeFileSync(record, kept)
  t.ok(upToDate(out, builder), 'as it was')
})

t.test('a code cache V8 refuses is only slower: the bundle is compiled, the cache made anew', async (t) => {
  writeFileSync(cache, 'not a code cache')
  const server = await startBuilt(t)
  t.equal((await fetch(`${server.url}${api}/pets`, { headers: { authorization: 'Bearer built-key' } })).status, 200)
  t.equal(await server.stop(), 0)
  t.not(readFileSync(cache, 'utf8'), 'not a code cache', 'written again at exit')
})

t.test('a build whose server does not start, answer or stop cleanly fails, saying which', async (t) => {
  const fixture = (name: string) => join(projectRoot, 'test', 'fixtures', 'warm-up', `${name}.mjs`)
  await t.rejects(warmUp(fixture('exits-at-once')), /the built server ended before it listened:\nstarting/)
  await t.rejects(warmUp(fixture('exits-silently')), /^the built server ended before it listened \(its words above\)$/)
  await t.rejects(warmUp(fixture('answers-500')), { message: 'the built server answered 500' })
  await t.rejects(warmUp(fixture('logs-why-it-answers-500')), {
    message: 'the built server answered 500; it logged: request failed: no such column: tag; the database is unavailable',
  })
  await t.rejects(warmUp(fixture('exits-3')), /the built server exited with 3/)
})

t.test('a build that fails says so in words, without a stack', async (t) => {
  // (esbuild cannot write below /proc)
  const { code, stderr } = await run(t, 'scripts/build.ts', ['/proc/petstore-build'])
  t.equal(code, 1)
  // (after esbuild's own words about it)
  t.match(stderr, /\nbuild: Build failed with \d+ errors?:\n/)
  t.notMatch(stderr, /\n\s+at /, 'no stack trace')
})
