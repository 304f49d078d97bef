import { compareRounds, type LoadPlan, type Measurement, medianOf, pairedRatio, progress } from './load.js'
import { petScenarios } from './scenarios.js'
import { keyKinds, type Logs, logSettings, type Servers, stop, type Target } from './servers.js'
import type { Store } from './stores.js'
import { wrkVersion } from './wrk.js'

/** listPets' page answered 200 and revalidated (304) by the service with one kind of key, at
 * full load (wrk), beside plain Fastify's 304 measured in the same rounds. The ratios are the
 * median of each round's (its 304 against the 200 and the plain 304 of the same round): the
 * machine's pace moves from one minute to the next (by half, on a shared machine), and a ratio
 * of two medians would mix the minutes of one with those of the other. */
export interface FullLoadRow {
  store: string
  key: string
  logs: Logs
  ok: Measurement
  notModified: Measurement
  plain: Measurement
  /** median of the rounds' 304 / 200, in CPU per answer */
  notModifiedPerOk: number
  /** median of the rounds' 304 / plain Fastify's 304 */
  notModifiedPerPlain: number
}

/** The revalidation at full load, with wrk's version; or why it was not measured. */
export type FullLoad = { rows: FullLoadRow[]; wrk: string } | { missing: string }

/**
 * listPets' page answered 200 and revalidated (304), on each store, by the service with each kind
 * of key, and the 304 by plain Fastify (bench/plain-304.mjs), logs on and off, all in one set of
 * rounds, driven by wrk so that requests wait for the server (bench/wrk.ts): what each answer
 * costs a server that is not waiting for requests. Rounds on new processes, warmed up, as the
 * main measurements. Where the 304 scenario ran in them (`rows`); undefined otherwise.
 */
export async function fullLoadRevalidation(plan: LoadPlan & { pets: number }, running: Servers, stores: Store[], rows: { scenario: string }[]): Promise<FullLoad | undefined> {
  const scenarios = petScenarios(plan.pets)
  const revalidation = scenarios.find((scenario) => scenario.revalidate === true)!
  const page = scenarios.find((scenario) => scenario.path === revalidation.path && scenario.revalidate !== true)!
  if (!rows.some((row) => row.scenario === revalidation.name)) return undefined
  const wrk = wrkVersion()
  if (wrk === undefined) return { missing: 'wrk is not installed (Debian: apt-get install wrk)' }
  const atFullLoad = { ...plan, driver: 'wrk' as const }
  const project = (key: string, logs: Logs) => `project, ${key} key, logs ${logs}, wrk`
  const plain = (logs: Logs) => `plain Fastify, logs ${logs}, wrk`
  const measured: FullLoadRow[] = []
  const targets: Target[] = []
  try {
    for (const store of stores) {
      progress(`${store.name}: the revalidation at full load (wrk), and plain Fastify's`)
      for (const logs of logSettings) {
        for (const key of keyKinds) targets.push(await running.project(project(key, logs), store.url, key, store.storedKey, logs))
        targets.push(await running.plain304(plain(logs), logs))
      }
      // (plain Fastify answers the 304 only: its page is not the service's)
      const scenariosOf = (target: Target) => (target.kind === 'plain' ? [undefined, revalidation] : [page, revalidation])
      const rounds = await compareRounds(`${store.name} at full load`, targets, scenariosOf, atFullLoad, { freshEachRound: true })
      const [pages, revalidations] = [rounds.get(page.name)!, rounds.get(revalidation.name)!]
      for (const key of keyKinds) {
        for (const logs of logSettings) {
          const [ok, notModified, plain304] = [pages.get(project(key, logs))!, revalidations.get(project(key, logs))!, revalidations.get(plain(logs))!]
          measured.push({
            store: store.name,
            key: `${key} key`,
            logs,
            ok: medianOf(ok),
            notModified: medianOf(notModified),
            plain: medianOf(plain304),
            notModifiedPerOk: pairedRatio(notModified, ok),
            notModifiedPerPlain: pairedRatio(notModified, plain304),
          })
        }
      }
      for (const target of targets.splice(0)) await stop(target)
    }
    return { rows: measured, wrk }
  } finally {
    for (const target of targets) await stop(target)
  }
}
