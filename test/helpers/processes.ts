/**
 * Real processes for the tests that need them: the server as `npm start` runs it, and the
 * command-line scripts. Named by their sources, they run as the tests do (with the test's Node
 * arguments): as the JavaScript compiled before the tests (.taprc), their coverage counted.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import type { Test } from 'tap'
import { projectRoot } from '../../src/core/paths.js'

/** How long a process may take before it counts as hung: seconds on an idle machine,
 * minutes on a busy one (a typecheck of the project copy in the walk-throughs took more than
 * 120 s on two cores each shared with a busy loop, beside two other test files). */
export const processBound = 300_000

/** `promise`, or a failure after `ms`: no wait in the tests is unbounded. */
export async function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

export interface Finished {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface RunningProcess {
  child: ChildProcess
  stdout(): string
  stderr(): string
  /** resolves when the process has ended */
  exited: Promise<Finished>
}

/** Starts `file` (relative to the project root) with `args`, the environment given on top of ours. */
export function launch(t: Test, file: string, args: string[] = [], env: Record<string, string> = {}): RunningProcess {
  const child = spawn(process.execPath, [...process.execArgv, join(projectRoot, file), ...args], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = once(child, 'exit').then(([code, signal]): Finished => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
    stdout,
    stderr,
  }))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await exited
    }
  })
  return { child, stdout: () => stdout, stderr: () => stderr, exited }
}

/** Runs a script to its end (within `processBound`; the teardown kills it otherwise). */
export function run(t: Test, file: string, args: string[] = [], env: Record<string, string> = {}): Promise<Finished> {
  return within(processBound, launch(t, file, args, env).exited)
}

export interface ServerProcess extends RunningProcess {
  /** http://127.0.0.1:PORT */
  url: string
}

/** Starts the server on a free port and waits until it listens (it logs its URL). */
export async function startServer(t: Test, env: Record<string, string> = {}, timeoutMs = processBound): Promise<ServerProcess> {
  // (rate limits no test reaches unless it sets its own, as in build())
  const unreached = { RATE_LIMIT_PER_KEY: '1000000', RATE_LIMIT_PER_ADDRESS: '1000000' }
  const server = launch(t, 'src/server.ts', [], { HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...unreached, ...env })
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const url = /"url":"(http:\/\/[^"]+)"/.exec(server.stdout())?.[1]
    if (url !== undefined) return { ...server, url }
    if (server.child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`the server did not start:\n${server.stdout()}\n${server.stderr()}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
