import { execFileSync } from 'node:child_process'
import { mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot } from '../src/core/paths.js'
import { load, type Measurement, progress } from './load.js'
import { profileName } from './options.js'
import { fmt } from './report.js'
import { petScenarios } from './scenarios.js'
import { type Logs, type Servers, stop } from './servers.js'
import type { Store } from './stores.js'

/** CPU profiles of a pet scenario (getPet unless --profile-scenario names another) on `store`:
 * service (env key, stored key) and peer, all without logs unless --profile-logs on (the access
 * log would be much of either profile), each under load for the duration of a measurement (at
 * least 5 s), summarised by bench/profile-summary.mjs. */
export async function profiles(
  servers: Servers,
  store: Store,
  workDir: string,
  plan: { pets: number; duration: number; connections: number; profileScenario: string; profileLogs: Logs },
): Promise<string> {
  const dir = join(workDir, 'profiles', store.name)
  const sections: string[] = []
  const scenario = petScenarios(plan.pets).find(({ name }) => profileName(name) === plan.profileScenario)!
  for (const which of ['env', 'stored', 'peer'] as const) {
    const out = join(dir, which)
    mkdirSync(out, { recursive: true })
    const nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${out}`]
    const target =
      which === 'peer'
        ? await servers.peer('profile peer', store.url, plan.profileLogs, nodeArgs)
        : await servers.project(`profile project, ${which} key`, store.url, which, store.storedKey, plan.profileLogs, nodeArgs)
    progress(`profile: ${target.name}, ${scenario.name}`)
    let measured: Measurement
    // the samples taken under load only, without the start-up (the profile's clock is this one)
    const micros = () => String(process.hrtime.bigint() / 1000n)
    let from: string
    let to: string
    try {
      from = micros()
      measured = await load(target, [scenario], Math.max(plan.duration, 5), plan.connections)
      to = micros()
    } finally {
      await stop(target)
    }
    const file = readdirSync(out).find((name) => name.endsWith('.cpuprofile'))
    if (file === undefined) {
      sections.push(`(no profile written for the ${which})`)
      continue
    }
    const summary = execFileSync(
      process.execPath,
      ['bench/profile-summary.mjs', join(out, file), '--top', '20', '--from', from, '--to', to, '--requests', String(measured.answered)],
      { cwd: projectRoot, encoding: 'utf8' },
    )
    sections.push(`#### ${which === 'peer' ? 'peer' : `service, ${which} key`}: ${fmt(measured.rps)} req/s while profiled (${join(out, file)})\n\n${summary}`)
  }
  return sections.join('\n')
}
