/**
 * The production install, as docs/operating.md gives it: `npm ci --omit=dev`, `npm run build`,
 * `npm run migrate`, `npm run keys`, `npm start`. It runs in a copy of the project: the files
 * git knows, and node_modules pruned by npm itself of every dev dependency (what
 * `npm ci --omit=dev` installs, without a network install or a native build), so tsx, tap and
 * TypeScript are gone and nothing can quietly lean on them. Then `npm start` as a newcomer
 * meets it: a bad setting, Ctrl-C, a Node.js other than the one that installed node_modules.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { type AddressInfo, connect, createServer } from 'node:net'
import { delimiter, dirname, join } from 'node:path'
import t, { type Test } from 'tap'
import { projectRoot } from '../src/core/paths.js'
import { sleep } from './helpers/concurrency.js'
import { processBound, within } from './helpers/processes.js'

/** Our environment less what npm and tap put in it for this test run: the commands must
 * behave as they do in a shell on a server. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(npm_|TAP|_TAPJS|NODE_OPTIONS$|NODE_V8_COVERAGE$|INIT_CWD$|NODE$)/i.test(name)),
  )
  return { ...env, ...extra }
}

interface Command {
  child: ChildProcess
  stdout(): string
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>
}

/** `npm ...args` in `cwd`, in its own process group (so that the server under `npm start` is
 * stopped with it), killed when the test ends. */
function npm(t: Test, cwd: string, args: string[], env: Record<string, string>): Command {
  const child = spawn('npm', args, { cwd, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = once(child, 'exit').then(([code]) => ({ code: code as number | null, stdout, stderr }))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(-child.pid!, 'SIGKILL')
      await exited
    }
  })
  return { child, stdout: () => stdout, exited }
}

const npmRun = (t: Test, cwd: string, args: string[], env: Record<string, string> = {}) => within(processBound, npm(t, cwd, args, env).exited)

/** A copy of the project as `npm ci --omit=dev` leaves it. node_modules is copied as hard
 * links (seconds, not a minute; npm prune only removes files, so the project's own
 * node_modules keeps every byte), except npm's record of the tree, which prune rewrites. */
function productionCopy(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-production-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: projectRoot, encoding: 'utf8' })
  for (const file of files.split('\0').filter((file) => file !== '' && existsSync(join(projectRoot, file)))) {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    cpSync(join(projectRoot, file), join(dir, file))
  }
  // (the folder itself where node_modules is a link to it: a copy of the link would let prune
  // work on the project's own)
  const modules = realpathSync(join(projectRoot, 'node_modules'))
  try {
    execFileSync('cp', ['-al', modules, join(dir, 'node_modules')])
  } catch {
    // another file system than the project's: a real copy
    execFileSync('cp', ['-a', modules, join(dir, 'node_modules')])
  }
  const tree = join(dir, 'node_modules', '.package-lock.json')
  rmSync(tree)
  cpSync(join(modules, '.package-lock.json'), tree)
  return dir
}

// npm prune and some twenty npm processes, one after the other: more time than a test file's
// default on a busy machine
t.setTimeout(600_000)

/** The pruned copy, made once for every test of this file (they run one after the other). */
let dir = ''
let pruned: { code: number | null; stderr: string }
t.before(async () => {
  dir = productionCopy(t)
  pruned = await npmRun(t, dir, ['prune', '--omit=dev', '--offline', '--no-audit', '--no-fund'])
})

/** `npm start` in the copy until it logs its URL (or ends: the URL is then undefined). */
async function npmStart(t: Test, env: Record<string, string>) {
  const server = npm(t, dir, ['start'], { HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env })
  const url = await within(
    processBound,
    (async () => {
      for (;;) {
        const found = /"url":"(http:\/\/[^"]+)"/.exec(server.stdout())?.[1]
        if (found !== undefined || server.child.exitCode !== null) return found
        await sleep(50)
      }
    })(),
  )
  return { ...server, url }
}

t.test('npm ci --omit=dev, then build, migrate, keys and start: a real authenticated answer, no tsx', async (t) => {
  t.equal(pruned.code, 0, pruned.stderr)
  const installed = (name: string) => existsSync(join(dir, 'node_modules', name, 'package.json'))
  const { devDependencies } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
  for (const name of ['tsx', 'tap', 'typescript', '@redocly/cli']) {
    t.ok(name in devDependencies, `${name} is a dev dependency`)
    t.notOk(installed(name), `${name} is not installed`)
  }
  t.notOk(existsSync(join(dir, 'node_modules', '.bin', 'tsx')), 'no tsx command')
  t.ok(installed('esbuild') && installed('better-sqlite3'), 'the runtime dependencies are')

  const built = await npmRun(t, dir, ['run', '-s', 'build'])
  t.equal(built.code, 0, built.stderr)
  for (const file of ['dist/src/server.js', 'dist/scripts/keys.js', 'dist/scripts/migrate.js']) t.ok(existsSync(join(dir, file)), `${file} built`)

  const database = { DATABASE_URL: `sqlite:${join(dir, 'data', 'prod.db')}` }
  const migrated = await npmRun(t, dir, ['run', '-s', 'migrate'], database)
  t.equal(migrated.code, 0, migrated.stderr)
  t.match(migrated.stdout, /^applied 0001_pets\n(applied \S+\n)*SQLite \S+prod\.db is up to date\n$/)

  const created = await npmRun(t, dir, ['run', '-s', 'keys', '--', 'create', '--name', 'production'], database)
  t.equal(created.code, 0, created.stderr)
  const key = created.stdout.trimEnd().split('\n').at(-1)!
  t.match(key, /^pet_[0-9a-f]{8}_[A-Za-z0-9_-]{32}$/, 'the key, alone on the last line')
  const listed = await npmRun(t, dir, ['run', '-s', 'keys', '--', 'list'], database)
  t.equal(listed.code, 0, listed.stderr)
  t.match(listed.stdout, new RegExp(`^id +name +prefix .*\\n1 +production +${key.slice(0, 12)} `))

  const server = await npmStart(t, { ...database, API_KEYS: '' })
  const url = server.url!
  t.match(server.stdout(), /> exec node dist\/src\/server\.js\n/, 'npm start runs the compiled server')
  const call = (path: string, init: RequestInit = {}) => fetch(`${url}${path}`, { ...init, signal: AbortSignal.timeout(10_000) })
  const auth = { authorization: `Bearer ${key}` }

  const added = await call('/v1/pets', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"name":"Rex","categoryId":1}' })
  t.equal(added.status, 201)
  t.strictSame(await added.json(), { id: 1, name: 'Rex', categoryId: 1, status: 'available' })
  const page = await call('/v1/pets', { headers: auth })
  t.equal(page.status, 200, 'the issued key is accepted')
  t.strictSame(await page.json(), [{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }])
  t.equal((await call('/v1/pets', { headers: { authorization: 'Bearer pet_00000000_wrong' } })).status, 401, 'another key is not')

  // npm passes the signal on to the server, and ends with its exit status
  server.child.kill('SIGTERM')
  const stopped = await within(30_000, server.exited)
  t.equal(stopped.code, 0, 'SIGTERM drains the server and ends it, exit 0')
  t.match(server.stdout(), /"signal":"SIGTERM","msg":"shutting down"/)
})

t.test('npm run build reads nothing of the environment: not a bad setting, not REDIS_URL, not a METRICS_PORT in use', async (t) => {
  const held = createServer().listen(0, '127.0.0.1')
  await within(5_000, once(held, 'listening'))
  t.teardown(() => held.close())
  const env = { RATE_LIMIT_PER_KEY: '-1', REDIS_URL: 'redis://127.0.0.1:1', METRICS_PORT: String((held.address() as AddressInfo).port) }
  const built = await npmRun(t, dir, ['run', '-s', 'build'], env)
  t.equal(built.code, 0, built.stderr)
  t.equal(built.stderr, '', 'not a word on stderr')
})

t.test('npm start with a bad setting: the one line that names it on stderr, exit 1, no stack, no word from the build', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ RATE_LIMIT_PER_KEY: '-1' }, /^petstore: invalid configuration: RATE_LIMIT_PER_KEY must be >= 1\n$/],
    [{ CORS_ORIGINS: 'foo' }, /^petstore: invalid configuration: CORS_ORIGINS must be comma-separated origins/],
    [{ TRUST_PROXY: 'x' }, /^petstore: invalid configuration: TRUST_PROXY must be comma-separated IP addresses/],
    [{ REDIS_URL: 'http://x' }, /^petstore: invalid configuration: REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL\n$/],
    [{ METRICS_PORT: 'abc' }, /^petstore: invalid configuration: METRICS_PORT must be integer\n$/],
    [{ HOST: 'not-a-host.invalid' }, /^petstore: API listener \(HOST, PORT\): getaddrinfo (ENOTFOUND|EAI_AGAIN) not-a-host\.invalid\n$/],
  ]
  for (const [env, message] of cases) {
    const started = await npmStart(t, { API_KEYS: 'bad-config-key', DATABASE_URL: 'sqlite::memory:', ...env })
    const { code, stdout, stderr } = await within(30_000, started.exited)
    t.equal(code, 1, JSON.stringify(env))
    t.match(stderr, message, JSON.stringify(env))
    t.equal(stderr.split('\n').length, 2, 'one line')
    t.notMatch(stdout, /listening/)
  }
})

t.test('Ctrl-C on npm start (the terminal signals the whole process group, and npm forwards it): one graceful stop, exit 0', async (t) => {
  const server = await npmStart(t, { API_KEYS: 'ctrl-c-key', DATABASE_URL: `sqlite:${join(dir, 'data', 'ctrl-c.db')}` })
  // a request in flight: the drain lasts until it is answered
  const stalled = connect(Number(new URL(server.url!).port), '127.0.0.1')
  let answer = ''
  stalled.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk))
  const body = JSON.stringify({ name: 'Late', categoryId: 1 })
  stalled.write(
    `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ctrl-c-key\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n{`,
  )
  await sleep(300)
  // what a terminal does on Ctrl-C: SIGINT to every process of the foreground group (npm's)
  process.kill(-server.child.pid!, 'SIGINT')
  await sleep(500)
  t.equal(server.child.exitCode, null, 'still draining: a delivery of the same Ctrl-C twice did not end it')
  stalled.end(body.slice(1))
  const stopped = await within(30_000, server.exited)
  t.equal(stopped.code, 0, 'exit 0')
  t.match(answer, /^HTTP\/1\.1 201 Created\r\n/, 'the request in flight was answered')
  t.equal(server.stdout().match(/"msg":"shutting down"/g)?.length, 1, 'one stop')
  t.notMatch(server.stdout(), /second SIGINT/)
})

/** A Node.js of another ABI than this one (OTHER_NODE, as CI sets it), or why there is none. */
function otherNode(): { node?: string; skip?: string } {
  const node = process.env.OTHER_NODE
  if (!node) return { skip: 'set OTHER_NODE to the node binary of another major version (CI does)' }
  const abi = execFileSync(node, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).trim()
  if (abi === process.versions.modules) return { skip: `OTHER_NODE has this Node.js's ABI (${abi})` }
  return { node }
}

const other = otherNode()
t.test(
  'npm start under another Node.js than the one node_modules was installed with: one line that says what to do',
  { skip: other.skip ?? false },
  async (t) => {
    const path = `${dirname(other.node!)}${delimiter}${process.env.PATH}`
    const started = await npmRun(t, dir, ['start'], { PATH: path, API_KEYS: 'other-node-key', DATABASE_URL: 'sqlite::memory:', PORT: '0' })
    t.equal(started.code, 1)
    t.match(
      started.stderr,
      /^petstore: better-sqlite3 was built for another Node\.js \(NODE_MODULE_VERSION \d+; Node\.js v[\d.]+ needs \d+\): run npm rebuild with the Node\.js that runs the server\n/,
    )
    t.notMatch(started.stderr, /\n\s+at /, 'no stack trace')
  },
)
