import type { EventEmitter } from 'node:events'
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'
import { authorization, get, type Target } from './servers.js'
import { wrk } from './wrk.js'

export interface Scenario {
  name: string
  method: 'GET' | 'POST' | 'PATCH'
  path: string
  body?: string
  /** getPet, getOrder: the path's last segment a random id from 1 to this, per request */
  randomIdUpTo?: number
  /** otherwise, how each request is made from the one above (autocannon's setupRequest) */
  setupRequest?: autocannon.Request['setupRequest']
  /** request headers beside the key's */
  headers?: Record<string, string>
  /** a revalidation: each request sends the ETag a GET of the path gave just before the load */
  revalidate?: boolean
}

export interface Measurement {
  /** 2xx (and 304) answers per second */
  rps: number
  /** milliseconds, of 2xx answers */
  p50: number
  p99: number
  /** connection errors, timeouts and non-2xx answers */
  errors: number
  /** 2xx answers in all */
  answered: number
  /** CPU time (user + system) the server spent per 2xx answer, in µs; NaN where unknown.
   * Less moved than req/s by other work on the machine: what a request costs the server. */
  cpuUs: number
}

/** Linux's clock ticks per second (USER_HZ), the unit of /proc/PID/stat's CPU times. */
const ticksPerSecond = 100

/** CPU seconds (user + system) of process `pid` so far, from /proc; NaN where there is none. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // the fields after the command name (in parentheses, which may hold spaces): utime is 14th, stime 15th
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond
  } catch {
    return Number.NaN
  }
}

/** How long, how hard and how often each scenario is driven. */
export interface LoadPlan {
  duration: number
  connections: number
  rounds: number
  /** seconds of a slice of warm-up, of each scenario on each new process (warmedUp); 0: none */
  warmUp: number
  /** what sends the load: autocannon (the default), or wrk (bench/wrk.ts), which keeps requests
   * waiting for the server where autocannon cannot (the same GET each time only) */
  driver?: Driver
}

export type Driver = 'autocannon' | 'wrk'

/** How `compare` treats its servers between rounds. */
export interface Processes {
  /** each round on new processes (Target.restart), each warmed up for `plan.warmUp` seconds
   * on each of its scenarios: a process keeps its own speed for its whole life (two starts of
   * the same server 7-34% apart in CPU per request on SQLite's reads, in two runs), which
   * rounds on one process cannot average out */
  freshEachRound: boolean
  /** called before each measurement of a target; what it returns, after it, with the figures
   * (the tracing phase counts the spans a measurement sent) */
  observe?: (target: Target, scenario: string) => (measured: Measurement) => void
}

/** Progress goes to stderr; the report to stdout. */
export const progress = (line: string) => process.stderr.write(`${line}\n`)

/** The answers a scenario is after: 2xx, and the 304s of a revalidation (no other 3xx is sent). */
const answered = (result: autocannon.Result) => result['2xx'] + result['3xx']

function requestOf(scenario: Scenario): autocannon.Request {
  const request: autocannon.Request = { method: scenario.method, path: scenario.path }
  if (scenario.body !== undefined) request.body = scenario.body
  if (scenario.setupRequest !== undefined) request.setupRequest = scenario.setupRequest
  const { headers } = scenario
  if (headers !== undefined) request.setupRequest = (req) => ({ ...req, headers: { ...req.headers, ...headers } })
  const upTo = scenario.randomIdUpTo
  if (upTo !== undefined) {
    const prefix = scenario.path.replace(/\d+$/, '')
    request.setupRequest = (req) => ({ ...req, path: `${prefix}${1 + Math.floor(Math.random() * upTo)}` })
  }
  return request
}

/** A revalidating scenario with its If-None-Match: the tag `target` gives its path now, with its key. */
async function tagged(target: Target, scenario: Scenario): Promise<Scenario> {
  if (scenario.revalidate !== true) return scenario
  const { headers } = await get(`${target.url}${scenario.path}`, { headers: authorization(target.key) })
  return { ...scenario, headers: { ...scenario.headers, 'if-none-match': String(headers.etag) } }
}

/** Drives `scenarios` (in turn, per connection) against `target` for `duration` seconds: with
 * autocannon, or (one scenario) with wrk. */
export async function load(target: Target, scenarios: Scenario[], duration: number, connections: number, driver: Driver = 'autocannon'): Promise<Measurement> {
  const ready = await Promise.all(scenarios.map((scenario) => tagged(target, scenario)))
  if (driver === 'wrk' && ready.length === 1 && wrkDrives(ready[0]!)) return wrkLoad(target, ready[0]!, duration, connections)
  const requests = ready.map(requestOf)
  return new Promise((resolve, reject) => {
    const latencies: number[] = []
    const cpuBefore = cpuSeconds(target.child.pid)
    const instance = autocannon(
      {
        url: target.url,
        connections,
        duration,
        headers: { ...authorization(target.key), 'content-type': 'application/json' },
        requests,
      },
      (error, result) => {
        if (error) return reject(error)
        latencies.sort((a, b) => a - b)
        const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN
        resolve({
          rps: answered(result) / result.duration,
          p50: at(0.5),
          p99: at(0.99),
          errors: result.errors + result.non2xx - result['3xx'],
          answered: answered(result),
          cpuUs: ((cpuSeconds(target.child.pid) - cpuBefore) * 1e6) / answered(result),
        })
      },
    )
    // autocannon's own histogram has whole milliseconds: the latencies are kept here exactly
    ;(instance as unknown as EventEmitter).on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status < 400) latencies.push(ms)
    })
  })
}

/** Whether wrk can send a scenario's requests: GETs without a body, of one path or of random ids
 * (wrk.ts); not the writes, each with a body or key of its own (autocannon's setupRequest). */
export const wrkDrives = (scenario: Scenario) => scenario.method === 'GET' && scenario.body === undefined && scenario.setupRequest === undefined

/** load's measure with wrk: its count, errors and latencies, the server's CPU read around it. */
async function wrkLoad(target: Target, scenario: Scenario, duration: number, connections: number): Promise<Measurement> {
  const cpuBefore = cpuSeconds(target.child.pid)
  const headers = { ...authorization(target.key), 'content-type': 'application/json', ...scenario.headers }
  const requests = { path: scenario.path, ...(scenario.randomIdUpTo !== undefined && { randomIdUpTo: scenario.randomIdUpTo }) }
  const counted = await wrk(target.url, requests, headers, duration, connections)
  return {
    rps: counted.answered / counted.seconds,
    p50: counted.p50,
    p99: counted.p99,
    errors: counted.errors,
    answered: counted.answered,
    cpuUs: ((cpuSeconds(target.child.pid) - cpuBefore) * 1e6) / counted.answered,
  }
}

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** The median of each figure of several measurements; errors and answers added up. */
export const medianOf = (list: Measurement[]): Measurement => ({
  rps: median(list.map((m) => m.rps)),
  p50: median(list.map((m) => m.p50)),
  p99: median(list.map((m) => m.p99)),
  errors: list.reduce((sum, m) => sum + m.errors, 0),
  answered: list.reduce((sum, m) => sum + m.answered, 0),
  cpuUs: median(list.map((m) => m.cpuUs)),
})

/** The median of the ratios of two lists' CPU per answer, taken place by place (round by round):
 * what the machine's pace, which moves between rounds, moves less than a ratio of two medians. */
export const pairedRatio = (over: Measurement[], under: Measurement[]) => median(over.map((measured, round) => measured.cpuUs / under[round]!.cpuUs))

/** At most this many slices of warm-up for a read (warmedUp). */
const maxWarmUpSlices = 8

/** A slice of warm-up whose CPU per request is below the one before's by more than this share
 * is followed by another (warmedUp). */
const stillFalling = 0.05

/**
 * Loads `scenario` on `target` until its CPU per request stops falling: a read, in slices of
 * `plan.warmUp` seconds, until a slice costs no less than 95% of the one before (two slices at
 * least, `maxWarmUpSlices` at most); a write, one slice (each write takes a pet or an order of
 * a pool sized for one). A new process pays V8's compiling of its hot code on its own core for
 * its first seconds (docs/benchmarks.md, "Warm-up"), and more code takes longer: a fixed warm-up
 * short enough for the peer measures the start of the service. Returns the slices' CPU µs per
 * request, for the progress line.
 */
export async function warmedUp(target: Target, scenario: Scenario, plan: Pick<LoadPlan, 'warmUp' | 'connections' | 'driver'>): Promise<number[]> {
  const slices = scenario.method === 'GET' ? maxWarmUpSlices : 1
  const costs: number[] = []
  for (let slice = 0; slice < slices; slice++) {
    const { cpuUs } = await load(target, [scenario], plan.warmUp, plan.connections, plan.driver)
    const before = costs.at(-1)
    costs.push(cpuUs)
    // (NaN, where /proc has no figure, stops it too)
    if (before !== undefined && !(cpuUs < before * (1 - stillFalling))) break
  }
  return costs
}

/** Measurements by scenario name, then by target name. */
export type Medians = Map<string, Map<string, Measurement>>

/** Measurements by scenario name, then by target name: one per round, in the order of the rounds. */
export type Rounds = Map<string, Map<string, Measurement[]>>

/**
 * Each scenario against each target, `plan.rounds` times, interleaved (round by round, scenario
 * by scenario, the targets in an order that turns each round), each measurement right after its
 * target's warm-up on its scenario.
 * `scenariosOf` gives a target its scenarios: the same names for all, in the same order (their
 * paths may differ), or none at a place where a target has nothing to measure. Returns the
 * medians, by scenario name and target name.
 */
export async function compare(label: string, targets: Target[], scenariosOf: ScenariosOf, plan: LoadPlan, processes?: Processes): Promise<Medians> {
  const rounds = await compareRounds(label, targets, scenariosOf, plan, processes)
  return new Map([...rounds].map(([name, byTarget]) => [name, new Map([...byTarget].map(([target, list]) => [target, medianOf(list)]))]))
}

/** A target's scenarios, for compare: `undefined` at a place where it has none. */
export type ScenariosOf = (target: Target) => (Scenario | undefined)[]

/** compare's measurements, each round's: for figures of two measurements of one round (a
 * ratio), which the machine's pace at that moment moves less than two medians. */
export async function compareRounds(
  label: string,
  targets: Target[],
  scenariosOf: ScenariosOf,
  plan: LoadPlan,
  { freshEachRound, observe }: Processes = { freshEachRound: false },
): Promise<Rounds> {
  const names = scenariosOf(targets[0]!).map((scenario) => scenario!.name)
  const runs: Rounds = new Map(names.map((name) => [name, new Map<string, Measurement[]>()]))
  // (every process measured is warmed up alike, by the same rule: warmedUp's, right before each
  // measurement: a process left idle while the others are warmed up and measured, minutes on
  // end, has had V8 give back its memory and its compiled code, and answers its next seconds as
  // a new process would: a p99 of 114 ms for its next 3 s against 3-5 ms warm,
  // docs/benchmarks.md, "The tail as a deployment sees it")
  const warmUp = async (target: Target, scenario: Scenario) => {
    if (plan.warmUp === 0) return
    const costs = await warmedUp(target, scenario, plan)
    progress(
      `  ${label} warm-up ${scenario.name} ${target.name}: ${costs.length} × ${plan.warmUp} s, CPU ${costs.map((cost) => cost.toFixed(1)).join(', ')} µs/req`,
    )
  }
  for (let round = 0; round < plan.rounds; round++) {
    if (freshEachRound && round > 0) for (const target of targets) await target.restart()
    for (const [s, name] of names.entries()) {
      const order = targets.map((_, i) => targets[(i + round) % targets.length]!)
      for (const target of order) {
        const scenario = scenariosOf(target)[s]
        if (scenario === undefined) continue
        await warmUp(target, scenario)
        const observed = observe?.(target, name)
        const measured = await load(target, [scenario], plan.duration, plan.connections, plan.driver)
        observed?.(measured)
        const byTarget = runs.get(name)!
        byTarget.set(target.name, [...(byTarget.get(target.name) ?? []), measured])
        progress(
          `  ${label} round ${round + 1}/${plan.rounds} ${name} ${target.name}: ${Math.round(measured.rps)} req/s, p99 ${measured.p99.toFixed(2)} ms, CPU ${measured.cpuUs.toFixed(1)} µs/req${measured.errors ? `, ${measured.errors} errors` : ''}`,
        )
      }
    }
  }
  return runs
}
