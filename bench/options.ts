import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import type { Logs, LogTo } from './servers.js'

/** The main scenarios, in the order of the table; --scenarios names them by their first word. */
export const petScenarioNames = ['getPet', 'listPets limit=20, status', 'listPets@v2 limit=20, status', 'listPets 304 limit=20, status', 'createPet']
const orderWriteNames = ['placeOrder, Idempotency-Key', 'updateOrder']
export const orderScenarioNames = ['getOrder', 'listOrders limit=20, status', ...orderWriteNames]
export const scenarioNames = [...petScenarioNames, ...orderScenarioNames]
const shortName = (name: string) => name.split(/[ ,]/)[0]!
/** What --profile-scenario calls a pet scenario: its first word, `listPets-304` for the page revalidated. */
export const profileName = (name: string) => name.replace(/^listPets 304 /, 'listPets-304 ').split(/[ ,]/)[0]!

/** Phases that --skip can leave out. */
const phases = ['main', 'tracing', 'checks', 'webhooks', 'start', 'rss'] as const

export interface BenchOptions {
  /** seconds per measurement */
  duration: number
  /** interleaved rounds, each figure their median */
  rounds: number
  connections: number
  pets: number
  /** seconds of warm-up per scenario of each new server process (--warm-up; none in a smoke run) */
  warmUp: number
  coldStarts: number
  rssDuration: number
  rssConnections: number
  scale: boolean
  scalePets: number
  profile: boolean
  /** the pet scenario profiled (--profile-scenario, by its profileName) */
  profileScenario: string
  /** whether the profiled servers write their access log (--profile-logs) */
  profileLogs: Logs
  smoke: boolean
  keep: boolean
  /** load generator and servers on the same cores, as the scheduler likes (--shared-cores) */
  sharedCores: boolean
  /** sqlite or postgres; both when unset */
  only: 'sqlite' | 'postgres' | undefined
  /** LOG_LEVEL of the "logs on" measurements: unset is the service's default (info) */
  logLevel: string | undefined
  /** where each server's stdout (its access log) goes: a pipe this process drains into a file,
   * as a log collector reads it (--log-to pipe, the default), or the file itself */
  logTo: LogTo
  skipped: Set<string>
  /** whether a main scenario was asked for (--scenarios) */
  wantedScenario(name: string): boolean
  /** whether the stores need orders */
  ordersWanted: boolean
  /** whether they need pools of pets and orders for the writes (placeOrder, updateOrder) */
  orderWritesWanted: boolean
}

/** What a wrong option gets: one line, exit status 2. */
export function usage(message: string): never {
  console.error(`bench: ${message} (see the head of bench/run.ts)`)
  process.exit(2)
}

function count(name: string, text: string | undefined, fallback: number): number {
  const value = Number(text ?? fallback)
  if (!(value > 0) || !Number.isFinite(value)) usage(`--${name} must be a positive number, not ${JSON.stringify(text)}`)
  return value
}

/** Seconds that may be none: a warm-up of 0 is a run measured from each process's start. */
function nonNegative(name: string, text: string): number {
  const value = Number(text)
  if (!(value >= 0) || !Number.isFinite(value) || text.trim() === '') usage(`--${name} must be a number of seconds, 0 or more, not ${JSON.stringify(text)}`)
  return value
}

/** The options, as parseArgs reads them. */
const flagOptions = {
  duration: { type: 'string' },
  'warm-up': { type: 'string' },
  rounds: { type: 'string' },
  connections: { type: 'string', default: '50' },
  pets: { type: 'string', default: '10000' },
  only: { type: 'string' },
  scenarios: { type: 'string' },
  'log-level': { type: 'string' },
  'log-to': { type: 'string', default: 'pipe' },
  'cold-starts': { type: 'string' },
  'rss-duration': { type: 'string' },
  'rss-connections': { type: 'string', default: '200' },
  scale: { type: 'boolean', default: false },
  'scale-pets': { type: 'string', default: '1000000' },
  profile: { type: 'boolean', default: false },
  'profile-scenario': { type: 'string', default: 'getPet' },
  'profile-logs': { type: 'string', default: 'off' },
  skip: { type: 'string', default: '' },
  smoke: { type: 'boolean', default: false },
  keep: { type: 'boolean', default: false },
  'shared-cores': { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} as const

/** The options as parsed, or the one line that answers a wrong one. */
function parse(args: string[]) {
  try {
    return parseArgs({ args, options: flagOptions }).values
  } catch (error) {
    return usage((error as Error).message)
  }
}

export function readOptions(args: string[]): BenchOptions {
  const flags = parse(args)
  if (flags.help) {
    // the head of bench/run.ts is the manual
    const manual = /^\/\*\*\n([\s\S]*?)\n \*\//.exec(readFileSync(new URL('run.ts', import.meta.url), 'utf8'))?.[1] ?? ''
    console.log(manual.replace(/^ \* ?/gm, ''))
    process.exit(0)
  }
  const smoke = flags.smoke
  if (flags.only !== undefined && flags.only !== 'sqlite' && flags.only !== 'postgres') usage('--only takes sqlite or postgres')
  if (flags['log-level'] === 'silent') usage('--log-level sets the level of the runs with logs; those without are measured anyway')
  const chosen = flags.scenarios?.split(',').filter((name) => name !== '') ?? scenarioNames.map(shortName)
  for (const name of chosen) {
    if (!scenarioNames.some((full) => shortName(full) === name)) usage(`--scenarios takes ${scenarioNames.map(shortName).join(', ')}, not ${name}`)
  }
  if (flags['log-to'] !== 'pipe' && flags['log-to'] !== 'file') usage(`--log-to takes pipe or file, not ${flags['log-to']}`)
  if (flags['profile-logs'] !== 'on' && flags['profile-logs'] !== 'off') usage(`--profile-logs takes on or off, not ${flags['profile-logs']}`)
  if (!petScenarioNames.some((name) => profileName(name) === flags['profile-scenario']))
    usage(`--profile-scenario takes ${petScenarioNames.map(profileName).join(', ')}, not ${flags['profile-scenario']}`)
  const wantedScenario = (name: string) => chosen.includes(shortName(name))
  const skipped = new Set(flags.skip.split(',').filter((phase) => phase !== ''))
  for (const phase of skipped) if (!(phases as readonly string[]).includes(phase)) usage(`--skip takes ${phases.join(', ')}, not ${phase}`)
  return {
    // a smoke run proves that every part runs: half a second per measurement is enough
    duration: count('duration', flags.duration, smoke ? 0.5 : 3),
    rounds: Math.round(count('rounds', flags.rounds, smoke ? 1 : 5)),
    connections: Math.round(count('connections', flags.connections, 50)),
    pets: Math.round(count('pets', flags.pets, 10_000)),
    warmUp: flags['warm-up'] === undefined ? (smoke ? 0 : 1) : nonNegative('warm-up', flags['warm-up']),
    coldStarts: Math.round(count('cold-starts', flags['cold-starts'], smoke ? 1 : 5)),
    rssDuration: count('rss-duration', flags['rss-duration'], smoke ? 1 : 60),
    rssConnections: Math.round(count('rss-connections', flags['rss-connections'], 200)),
    scale: flags.scale,
    scalePets: Math.round(count('scale-pets', flags['scale-pets'], 1_000_000)),
    profile: flags.profile,
    profileScenario: flags['profile-scenario'],
    profileLogs: flags['profile-logs'],
    smoke,
    keep: flags.keep,
    sharedCores: flags['shared-cores'],
    only: flags.only,
    logLevel: flags['log-level'],
    logTo: flags['log-to'],
    skipped,
    wantedScenario,
    ordersWanted: orderScenarioNames.some(wantedScenario),
    orderWritesWanted: orderWriteNames.some(wantedScenario),
  }
}
