import { execFileSync } from 'node:child_process'
import os from 'node:os'

/**
 * The load generator (this process, autocannon) and the server it measures on cores of their
 * own: on a machine of few cores, the two otherwise take turns on the same ones, and a ratio of
 * two runs moves by a third with where the scheduler put them. Linux only (taskset); this
 * process keeps core 0, the servers (and their children) get every other.
 */
let serverCores: string | undefined

/** Pins this process to core 0 and every server started later to the others, where it can;
 * says what was done, for the report. */
export function pinCores(): string {
  const cores = os.availableParallelism()
  if (process.platform !== 'linux' || cores < 2) return `not pinned to cores (${cores} core, or not Linux)`
  try {
    // (-a: every thread of this process, libuv's included)
    execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' })
  } catch {
    return 'not pinned to cores (taskset failed or is missing)'
  }
  serverCores = cores === 2 ? '1' : `1-${cores - 1}`
  return `the load generator pinned to core 0, each server to core${cores === 2 ? '' : 's'} ${serverCores} (taskset)`
}

/** `command args` as spawned: under taskset, on the servers' cores, once pinCores has pinned. */
export const onServerCores = (command: string, args: string[]): [string, string[]] =>
  serverCores === undefined ? [command, args] : ['taskset', ['-c', serverCores, command, ...args]]
