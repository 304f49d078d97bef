import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'

/**
 * wrk (Debian's package `wrk`), a load generator in C: autocannon, on its one core, cannot send
 * requests as fast as the server answers the cheapest of them (a 304 costs the server about what
 * a request costs autocannon); wrk spends less than half autocannon's CPU per request (26 against
 * 59 µs, both driving plain Fastify's 304 on this machine), and keeps requests waiting for the
 * server: what each answer then costs is what it costs a server at full load.
 */

/** wrk's version line, or undefined when it is not installed. */
export function wrkVersion(): string | undefined {
  try {
    // (`wrk -v` prints its version and usage, and exits 1)
    execFileSync('wrk', ['-v'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (error) {
    const { stdout } = error as { stdout?: string }
    return /^wrk \S+/.exec(stdout ?? '')?.[0]
  }
  return undefined
}

/** What one run of wrk counted. */
export interface WrkResult {
  /** 2xx and 3xx responses */
  answered: number
  /** seconds the run took, as wrk measured it */
  seconds: number
  /** responses that were neither 2xx nor 3xx, and socket errors (connect, read, write, timeout) */
  errors: number
  /** milliseconds, from wrk's latency distribution */
  p50: number
  p99: number
}

/** A latency as wrk prints it (`850.00us`, `12.00ms`, `1.02s`), in milliseconds. */
function milliseconds(text: string): number {
  const [, value, unit] = /^([\d.]+)(us|ms|s)$/.exec(text) ?? []
  if (value === undefined) return Number.NaN
  return Number(value) * (unit === 'us' ? 1e-3 : unit === 's' ? 1e3 : 1)
}

/** What wrk's report (with --latency) says. */
export function wrkReport(report: string): WrkResult {
  const done = /(\d+) requests in ([\d.]+)(ms|s)/.exec(report)
  if (done === null) throw new Error(`wrk's report has no count of requests:\n${report}`)
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(report)
  const refused = Number(/Non-2xx or 3xx responses: (\d+)/.exec(report)?.[1] ?? 0)
  const at = (percent: string) => milliseconds(new RegExp(`^\\s+${percent}%\\s+(\\S+)$`, 'm').exec(report)?.[1] ?? '')
  return {
    answered: Number(done[1]) - refused,
    seconds: Number(done[2]) / (done[3] === 'ms' ? 1000 : 1),
    errors: refused + (socketErrors === null ? 0 : socketErrors.slice(1).reduce((sum, count) => sum + Number(count), 0)),
    p50: at('50'),
    p99: at('99'),
  }
}

/** What wrk asks: the same path each time, or the path's prefix followed by an id from 1 to
 * `randomIdUpTo`, a new one per request (wrk's Lua `request` hook; getPet's random ids). */
export interface WrkRequests {
  path: string
  randomIdUpTo?: number
}

/** wrk's Lua script for random ids: each request's path is `prefix` and an id from 1 to `upTo`
 * (wrk.format keeps the -H headers). */
const randomIds = (prefix: string, upTo: number) =>
  `local prefix, upTo = ${JSON.stringify(prefix)}, ${Math.floor(upTo)}\n` + 'request = function() return wrk.format(nil, prefix .. math.random(1, upTo)) end\n'

/** Runs wrk (one thread, on this process's core): GETs at `origin` with `headers`, again and
 * again on each connection, for `duration` seconds (whole seconds, at least one: wrk counts no less). */
export async function wrk(origin: string, requests: WrkRequests, headers: Record<string, string>, duration: number, connections: number): Promise<WrkResult> {
  const fields = Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`])
  const args = ['-t1', `-c${connections}`, `-d${Math.max(1, Math.round(duration))}s`, '--latency', ...fields]
  const { path, randomIdUpTo } = requests
  const dir = randomIdUpTo === undefined ? undefined : mkdtempSync(join(os.tmpdir(), 'petstore-wrk-'))
  if (dir !== undefined) {
    const script = join(dir, 'random-ids.lua')
    writeFileSync(script, randomIds(path.replace(/\d+$/, ''), randomIdUpTo!))
    args.push('-s', script)
  }
  args.push(`${origin}${path}`)
  try {
    return await new Promise((resolve, reject) => {
      // (an ExecFileException is an Error: its type, made with Omit, does not say so)
      execFile('wrk', args, { encoding: 'utf8' }, (error: Error | null, stdout) => {
        if (error) return reject(error)
        try {
          resolve(wrkReport(stdout))
        } catch (failure) {
          reject(failure)
        }
      })
    })
  } finally {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  }
}
