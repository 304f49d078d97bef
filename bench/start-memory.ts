import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { openStorage } from '../src/repositories.js'
import { load, median, progress } from './load.js'
import { fmt } from './report.js'
import { petScenarios } from './scenarios.js'
import { answering, freePort, logLevelOf, type Servers, spawnNode, stop } from './servers.js'
import type { Store } from './stores.js'

/** Milliseconds from spawning `node ...args` to its first answered request. */
async function coldStartOnce(args: string[], env: NodeJS.ProcessEnv, key: string): Promise<number> {
  const port = await freePort()
  const began = performance.now()
  const child = spawnNode(args, { PORT: String(port), HOST: '127.0.0.1', ...env }, 'ignore')
  try {
    await answering(`http://127.0.0.1:${port}/v1/pets?limit=1`, key, child, 30_000, 2)
    return performance.now() - began
  } finally {
    await stop({ child })
  }
}

/** The cold start of the service on a fresh SQLite file, and of the SQLite peer, `runs` each. */
export async function coldStarts({
  runs,
  workDir,
  envKey,
  logLevel,
}: {
  runs: number
  workDir: string
  envKey: string
  logLevel: string | undefined
}): Promise<string[]> {
  progress(`cold start, ${runs} runs each`)
  // the peer needs the schema made: one migrated file, which it only reads
  const migrated = join(workDir, 'cold-peer.db')
  await (await openStorage(`sqlite:${migrated}`, { poolSize: 1 })).close()
  const env = { API_KEYS: envKey, ...logLevelOf('on', logLevel) }
  const ours: number[] = []
  const theirs: number[] = []
  for (let run = 0; run < runs; run++) {
    // a fresh file each time: the service makes its schema at start
    ours.push(await coldStartOnce(['dist/src/server.js'], { ...env, DATABASE_URL: `sqlite:${join(workDir, `cold-${run}.db`)}` }, envKey))
    theirs.push(await coldStartOnce(['bench/peer-sqlite.mjs'], { ...env, DATABASE_URL: `sqlite:${migrated}` }, envKey))
  }
  const show = (list: number[]) => `median ${Math.round(median(list))} ms (${list.map(Math.round).join(', ')})`
  return [
    `- cold start, \`node dist/src/server.js\` on a fresh SQLite file, spawn to first answered request: ${show(ours)}`,
    `- for reference, the SQLite peer (schema already made): ${show(theirs)}`,
  ]
}

/** VmRSS and VmHWM of a process, in MB. */
function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 }
}

/** The RSS of the service (stored key), then of the peer, after a sustained mixed load. */
export async function residentMemory(servers: Servers, store: Store, plan: { pets: number; duration: number; connections: number }): Promise<string[]> {
  const mix = petScenarios(plan.pets)
  const lines: string[] = []
  for (const which of ['project', 'peer'] as const) {
    const target =
      which === 'project' ? await servers.project('rss project, stored key', store.url, 'stored', store.storedKey) : await servers.peer('rss peer', store.url)
    try {
      const before = memory(target.child.pid!)
      progress(`RSS: ${target.name}, ${plan.connections} connections for ${plan.duration} s`)
      const measured = await load(target, mix, plan.duration, plan.connections)
      const after = memory(target.child.pid!)
      lines.push(
        `- RSS of the ${which === 'project' ? 'service (stored key)' : 'peer, for reference'} after ${plan.duration} s at ${plan.connections} connections ` +
          `(getPet, listPets, createPet in turn, ${store.name}): ${fmt(after.rss, 1)} MB (peak ${fmt(after.hwm, 1)} MB; ${fmt(before.rss, 1)} MB at rest before; ` +
          `${fmt(measured.rps)} req/s, p99 ${fmt(measured.p99, 1)} ms, ${measured.errors} errors)`,
      )
    } finally {
      await stop(target)
    }
  }
  return lines
}
