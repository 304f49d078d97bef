import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { type AddressInfo, createServer } from 'node:net'
import { join } from 'node:path'
import { loadContract, newestSpecPath } from '../src/contract/load.js'
import { projectRoot } from '../src/core/paths.js'
import { onServerCores } from './cores.js'

/** A server under measurement: the service, a peer, or plain Fastify answering a revalidation (plain-304.mjs). */
export interface Target {
  name: string
  kind: 'project' | 'peer' | 'plain'
  /** the key its requests carry */
  key: string
  url: string
  child: ChildProcess
  log: string
  /** stops it and starts it again, the same server as a new process (url, child and log change) */
  restart(): Promise<void>
}

/** Whether a server writes its access log: at the level the bench was given, or not at all. */
export type Logs = 'on' | 'off'

/**
 * Where a server's stdout goes. `pipe`: a pipe that a process of its own (`cat`, on the load
 * generator's core) drains into the log file, as a deployment's log collector (journald, a
 * container runtime) reads it, on a core other than the server's. `file`: the file itself, written by the server:
 * its writes (the service's are asynchronous, on libuv's threads, pinned with it) and the
 * kernel's copying of them are then on the server's own core, which no deployment that ships
 * its logs elsewhere pays.
 */
export type LogTo = 'pipe' | 'file'

/** Every server measured with its access log and without. */
export const logSettings: Logs[] = ['on', 'off']

/** The service with a key of API_KEYS and with a stored key (its `project` servers, below). */
export const keyKinds = ['env', 'stored'] as const

/** Every child still running: killed if the bench ends early. */
const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL')
})

/** A port nobody listens on now. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  return port
}

export interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** One HTTP request with node:http (no connection reuse); resolves with status, headers, body. */
export function get(url: string, init: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {}) {
  return new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(url, { method: init.method ?? 'GET', headers: init.headers, agent: false, timeout: init.timeoutMs ?? 5_000 }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }))
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(init.body)
  })
}

export const authorization = (key: string) => ({ authorization: `Bearer ${key}` })

/** Resolves once `url` answers at all (any status), within `limitMs`. */
export async function answering(url: string, key: string, child: ChildProcess, limitMs = 30_000, pollMs = 10) {
  const deadline = performance.now() + limitMs
  for (;;) {
    const answered = await get(url, { headers: authorization(key), timeoutMs: 1_000 }).then(
      () => true,
      () => false,
    )
    if (answered) return
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited (${child.exitCode ?? child.signalCode}) before answering`)
    if (performance.now() > deadline) throw new Error(`did not answer within ${limitMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, pollMs))
  }
}

/** SIGTERM, then SIGKILL if it has not exited within 15 s. */
export async function stop({ child }: { child: ChildProcess }) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(timer)
}

/** `node ...args` from the project's folder, with `env` over ours; a child of the bench. */
export function spawnNode(args: string[], env: NodeJS.ProcessEnv, stdio: 'ignore' | number, stdout?: number): ChildProcess {
  const child = spawn(...onServerCores(process.execPath, args), {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', stdout ?? stdio, stdio],
  })
  children.add(child)
  child.on('exit', () => children.delete(child))
  return child
}

/**
 * A pipe (a FIFO beside `log`) that a process of its own, `cat`, drains into `log`, appending:
 * the write end, for a server's stdout. The reader runs where this process may (on the load
 * generator's core, once pinCores has pinned), as a log collector runs beside the server.
 */
function drainedPipe(log: string): number {
  const fifo = `${log}.fifo`
  execFileSync('mkfifo', [fifo])
  const reader = spawn('sh', ['-c', 'exec cat "$0" >> "$1"', fifo, log], { stdio: 'ignore' })
  children.add(reader)
  reader.on('exit', () => children.delete(reader))
  // (opening a FIFO to write waits for its reader: cat opens it at once)
  return openSync(fifo, 'w')
}

/** LOG_LEVEL for a server: silent without logs, else the bench's level (unset: the default). */
export const logLevelOf = (logs: Logs, logLevel: string | undefined): NodeJS.ProcessEnv => ({
  LOG_LEVEL: logs === 'off' ? 'silent' : logLevel,
})

/**
 * The servers of one bench run: each started on a free port, its stdout (the access log) and
 * stderr going to a file in `workDir`, as a log collector would take them.
 */
/** Every role of openapi.yaml, staff's included, joined as API_KEYS writes them. */
const staffRoles = [...loadContract(newestSpecPath).roles.roles.keys()].join('+')

export function servers({ workDir, envKey, logLevel, logTo = 'pipe' }: { workDir: string; envKey: string; logLevel: string | undefined; logTo?: LogTo }) {
  async function start(name: string, kind: Target['kind'], args: string[], env: NodeJS.ProcessEnv, key: string): Promise<Target> {
    const launch = async () => {
      const port = await freePort()
      const log = join(workDir, `${name.replace(/[^\w.-]+/g, '_')}.${port}.log`)
      // (stderr to the file itself, appended to as the pipe's reader appends stdout)
      const stdout = logTo === 'pipe' ? drainedPipe(log) : undefined
      const child = spawnNode(args, { PORT: String(port), HOST: '127.0.0.1', ...env }, openSync(log, 'a'), stdout)
      if (stdout !== undefined) closeSync(stdout) // (the server's copy is the only writer: its exit ends the reader)
      const url = `http://127.0.0.1:${port}`
      try {
        await answering(`${url}/v1/pets?limit=1`, key, child)
      } catch (error) {
        await stop({ child })
        throw new Error(`${name} did not start: ${(error as Error).message}\n${readFileSync(log, 'utf8').slice(-2_000)}`)
      }
      return { url, child, log }
    }
    const target: Target = {
      name,
      kind,
      key,
      ...(await launch()),
      async restart() {
        await stop(target)
        Object.assign(target, await launch())
      },
    }
    return target
  }

  return {
    /** The service, with a key of API_KEYS (`env`) or its stored key only (`stored`). */
    project: (
      name: string,
      databaseUrl: string,
      key: 'env' | 'stored',
      storedKey: string,
      logs: Logs = 'on',
      nodeArgs: string[] = [],
      env: NodeJS.ProcessEnv = {},
    ) =>
      start(
        name,
        'project',
        [...nodeArgs, 'dist/src/server.js'],
        // a stored key is the production mode: no API_KEYS at all. The rate limit is set out of
        // reach: the bench measures serving, not refusing (counting is still done on every request).
        // (the key of API_KEYS is staff, orders:admin: it reads and moves the orders the stored key owns)
        {
          DATABASE_URL: databaseUrl,
          API_KEYS: key === 'env' ? `${envKey}:${staffRoles}` : '',
          RATE_LIMIT_PER_KEY: '1000000000',
          ...logLevelOf(logs, logLevel),
          ...env,
        },
        key === 'env' ? envKey : storedKey,
      ),

    /** The hand-written peer of the store. */
    peer: (name: string, databaseUrl: string, logs: Logs = 'on', nodeArgs: string[] = []) =>
      start(
        name,
        'peer',
        [...nodeArgs, databaseUrl.startsWith('sqlite:') ? 'bench/peer-sqlite.mjs' : 'bench/peer-postgres.mjs'],
        { DATABASE_URL: databaseUrl, API_KEYS: envKey, ...logLevelOf(logs, logLevel) },
        envKey,
      ),

    /** Plain Fastify answering a revalidation of a constant page (bench/plain-304.mjs): no store, no key checked. */
    plain304: (name: string, logs: Logs) => start(name, 'plain', ['bench/plain-304.mjs'], logLevelOf(logs, logLevel), envKey),
  }
}

export type Servers = ReturnType<typeof servers>
