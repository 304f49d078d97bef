import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import os from 'node:os'

/**
 * The load generator (this process, autocannon), the database and the server it measures on
 * cores of their own where there are enough: on a machine of few cores, they otherwise take
 * turns on the same ones, and a ratio of two runs moves by a third with where the scheduler put
 * them. Linux only (taskset); this process keeps core 0, the servers (and their children) get
 * the others but the database's.
 */
let serverCores: string | undefined
let databaseCore: string | undefined

/** Pins this process to core 0 and every server started later to the other cores, where it
 * can; says what was done, for the report. */
export function pinCores(): string {
  const cores = os.availableParallelism()
  if (process.platform !== 'linux' || cores < 2) return `not pinned to cores (${cores} core, or not Linux)`
  try {
    // (-a: every thread of this process, libuv's included)
    execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' })
  } catch {
    return 'not pinned to cores (taskset failed or is missing)'
  }
  // two cores: the database shares the load generator's; three or more: it has core 1
  databaseCore = cores === 2 ? '0' : '1'
  serverCores = cores === 2 ? '1' : cores === 3 ? '2' : `2-${cores - 1}`
  return `the load generator pinned to core 0, each server to core${serverCores.length === 1 ? '' : 's'} ${serverCores} (taskset)`
}

/** `command args` as spawned: under taskset, on the servers' cores, once pinCores has pinned. */
export const onServerCores = (command: string, args: string[]): [string, string[]] =>
  serverCores === undefined ? [command, args] : ['taskset', ['-c', serverCores, command, ...args]]

/**
 * Pins the PostgreSQL server of `postmaster` (postmasterOf) away from the servers' cores until
 * this process exits, once pinCores has pinned: each connection opened later is served by a
 * process forked from the postmaster, on its cores. So the server measured has its cores to
 * itself, as one whose database runs on another machine. Left to the scheduler, the database's
 * processes (30-40 µs of CPU a query) went to the server's core in some rounds and not in others,
 * and the same peer's getPet moved between 7.3k and 10.5k req/s from round to round. Says what
 * was done, for the report.
 */
export function pinDatabase(postmaster: number | undefined): string {
  if (databaseCore === undefined) return 'PostgreSQL not pinned'
  if (postmaster === undefined) return 'PostgreSQL not pinned (not a process of this machine)'
  try {
    const before = /mask: ([0-9a-f]+)/.exec(execFileSync('taskset', ['-p', String(postmaster)], { encoding: 'utf8' }))?.[1]
    if (before === undefined) return 'PostgreSQL not pinned (taskset said no mask)'
    execFileSync('taskset', ['-p', '-c', databaseCore, String(postmaster)], { stdio: 'ignore' })
    // (an exit by signal passes here too: run.ts exits on SIGINT and SIGTERM)
    process.once('exit', () => execFileSync('taskset', ['-p', before, String(postmaster)], { stdio: 'ignore' }))
  } catch {
    return 'PostgreSQL not pinned (taskset failed: not allowed?)'
  }
  return `PostgreSQL (postmaster ${postmaster}, the connections it serves from now on) pinned to core ${databaseCore} until the run ends`
}

/** The postmaster that forked `backendPid` (a PostgreSQL backend serving a connection), when
 * both are PostgreSQL processes of this machine. */
export function postmasterOf(backendPid: number): number | undefined {
  try {
    const command = (pid: number) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
    // /proc/PID/stat: pid (comm) state ppid ...; comm may hold spaces, so read after its ')'
    const stat = readFileSync(`/proc/${backendPid}/stat`, 'utf8')
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    return command(backendPid) === 'postgres' && command(parent) === 'postgres' ? parent : undefined
  } catch {
    return undefined
  }
}
