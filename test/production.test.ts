/**
 * The production install, as docs/operating.md gives it: `npm ci --omit=dev`, `npm run build`,
 * `npm run migrate`, `npm run keys`, `npm start`. It runs in a copy of the project: the files
 * git knows, and node_modules pruned by npm itself of every dev dependency (what
 * `npm ci --omit=dev` installs, without a network install or a native build), so tsx, tap and
 * TypeScript are gone and nothing can quietly lean on them.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import t, { type Test } from 'tap'
import { projectRoot } from '../src/paths.js'
import { within } from './helpers/processes.js'

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
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = once(child, 'exit').then(([code]) => ({ code: code as number | null, stdout, stderr }))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(-child.pid!, 'SIGKILL')
      await exited
    }
  })
  return { child, stdout: () => stdout, exited }
}

const npmRun = (t: Test, cwd: string, args: string[], env: Record<string, string> = {}) => within(120_000, npm(t, cwd, args, env).exited)

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
  try {
    execFileSync('cp', ['-al', join(projectRoot, 'node_modules'), dir])
  } catch {
    // another file system than the project's: a real copy
    execFileSync('cp', ['-a', join(projectRoot, 'node_modules'), dir])
  }
  const tree = join(dir, 'node_modules', '.package-lock.json')
  rmSync(tree)
  cpSync(join(projectRoot, 'node_modules', '.package-lock.json'), tree)
  return dir
}

// npm prune and eight npm processes: more time than a test file's default on a busy machine
t.setTimeout(360_000)

t.test('npm ci --omit=dev, then build, migrate, keys and start: a real authenticated answer, no tsx', async (t) => {
  const dir = productionCopy(t)
  const pruned = await npmRun(t, dir, ['prune', '--omit=dev', '--offline', '--no-audit', '--no-fund'])
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

  const server = npm(t, dir, ['start'], { ...database, HOST: '127.0.0.1', PORT: '0', API_KEYS: '', LOG_LEVEL: 'info' })
  const url = await within(120_000, (async () => {
    for (;;) {
      const found = /"url":"(http:\/\/[^"]+)"/.exec(server.stdout())?.[1]
      if (found !== undefined) return found
      if (server.child.exitCode !== null) throw new Error(`npm start ended:\n${server.stdout()}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })())
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
