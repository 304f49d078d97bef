/**
 * npm run bench:against -- REF [options]
 *
 * This tree's service against the same service at git revision REF (a commit, tag or branch),
 * to see what a change cost: both built (REF in a worktree of its own, removed at the end), each
 * on a SQLite file of its own seeded through its own API (10,000 pets by version 1's createPet,
 * which every revision serves), and driven in turn in short slices (this tree, REF, REF, this
 * tree, ...) so that whatever else the machine does falls on both alike. The figure is the CPU
 * time (user + system, from /proc) each server spent per answered request; each slice of this
 * tree is divided by the adjacent slice of REF, and a pair of processes gives the median of
 * those ratios. Beside it, the same for the requests answered per second at --connections (50)
 * connections: a change can cost throughput under concurrency (a request held back, work moved
 * to another thread of the process) while its CPU per request stays the same, and only the
 * throughput then shows it. A process keeps its own speed for its life (two starts of one
 * server differ by up to a third), so every pair is on new processes, and the report gives the
 * median over the pairs with their least and greatest. The requests are sent by wrk where it is
 * installed (bench/wrk.ts: their pace is the server's), else by autocannon.
 *
 * Options:
 *   --pairs N          pairs of new processes per scenario and log setting (5)
 *   --slices N         slices of each server per pair (6)
 *   --seconds S        seconds per slice (2)
 *   --scenarios LIST   getPet, listPets (both), listPets@v2 (version 2's, of a revision that has it)
 *   --logs LIST        off, on (both): LOG_LEVEL=silent, or the default (info) on both
 *   --connections N    (50)
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, openSync, rmSync, symlinkSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { projectRoot } from '../src/core/paths.js'
import { pinCores } from './cores.js'
import { type Driver, load, median, progress, warmedUp } from './load.js'
import { fmt } from './report.js'
import { petScenarios } from './scenarios.js'
import { answering, freePort, get, type Logs, logLevelOf, spawnNode, stop, type Target } from './servers.js'
import { wrkVersion } from './wrk.js'

const pets = 10_000
const key = 'bench-against-key-0001'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    pairs: { type: 'string', default: '5' },
    slices: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '2' },
    scenarios: { type: 'string', default: 'getPet,listPets' },
    logs: { type: 'string', default: 'off,on' },
    connections: { type: 'string', default: '50' },
  },
})
const [ref] = positionals
const count = (name: keyof typeof values) => {
  const value = Number(values[name])
  if (!(value > 0)) usage(`--${name} must be a positive number`)
  return value
}
function usage(message: string): never {
  console.error(`bench:against: ${message} (see the head of bench/against.ts)`)
  process.exit(2)
}
if (ref === undefined || positionals.length !== 1) usage('name one git revision to measure against, e.g. npm run bench:against -- main~3')
const plan = { pairs: count('pairs'), slices: count('slices'), seconds: count('seconds'), connections: count('connections') }
// (by the name up to its options: `listPets` is version 1's, `listPets@v2` version 2's, which a
// revision before version 2 does not serve)
const scenarios = petScenarios(pets).filter((scenario) => values.scenarios.split(',').includes(scenario.name.split(/[ ,]/)[0]!))
const logSettings = values.logs.split(',') as Logs[]
if (scenarios.length === 0 || !logSettings.every((logs) => logs === 'on' || logs === 'off'))
  usage('--scenarios takes getPet, listPets and listPets@v2, --logs off and on')

/** A server of `root` (its dist/, built) on a new SQLite file, seeded with `pets` pets. */
async function started(name: string, root: string, workDir: string, logs: Logs): Promise<Target> {
  const port = await freePort()
  const file = join(workDir, `${name}.${port}`)
  const child = spawnNode(
    [join(root, 'dist/src/server.js')],
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite:${file}.db`,
      API_KEYS: key,
      RATE_LIMIT_PER_KEY: '1000000000',
      ...logLevelOf(logs, undefined),
    },
    openSync(`${file}.log`, 'w'),
  )
  const url = `http://127.0.0.1:${port}`
  await answering(`${url}/v1/pets?limit=1`, key, child)
  let next = 0
  const create = async () => {
    while (next < pets) {
      const n = next++
      const body = JSON.stringify({ name: `Pet ${n}`, categoryId: 1 + (n % 7), status: ['available', 'pending', 'sold'][n % 3] })
      const answer = await get(`${url}/v1/pets`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body })
      if (answer.status !== 201) throw new Error(`${name}: createPet answered ${answer.status} ${answer.body}`)
    }
  }
  await Promise.all(Array.from({ length: 20 }, create))
  return { name, kind: 'project', key, url, child, log: `${file}.log`, restart: () => Promise.reject(new Error('not restarted')) }
}

/** A figure of one pair of processes: the median of this tree's over REF's, slice by adjacent
 * slice, and each one's median. */
interface Compared {
  ratio: number
  mine: number
  theirs: number
}

const compared = ([mine, theirs]: [number[], number[]]): Compared => ({
  ratio: median(mine.map((value, i) => value / theirs[i]!)),
  mine: median(mine),
  theirs: median(theirs),
})

/** What sends the requests: wrk where it is installed, whose requests wait for the server (bench/wrk.ts), else autocannon. */
const wrk = wrkVersion()
const driver: Driver = wrk === undefined ? 'autocannon' : 'wrk'

/** One pair of new processes: CPU per request and requests per second, each compared. */
async function pair(refRoot: string, workDir: string, scenario: (typeof scenarios)[number], logs: Logs): Promise<{ cpu: Compared; rps: Compared }> {
  const targets = [await started('this tree', projectRoot, workDir, logs), await started(ref!, refRoot, workDir, logs)]
  try {
    // (warmed up as npm run bench warms up its servers, in slices of a second)
    for (const target of targets) await warmedUp(target, scenario, { warmUp: 1, connections: plan.connections, driver })
    const cpu: [number[], number[]] = [[], []]
    const rps: [number[], number[]] = [[], []]
    for (let slice = 0; slice < plan.slices; slice++) {
      // this tree first, then REF first: neither is always the one after the other
      const order = slice % 2 === 0 ? [0, 1] : [1, 0]
      for (const i of order) {
        const measured = await load(targets[i]!, [scenario], plan.seconds, plan.connections, driver)
        if (measured.errors > 0) throw new Error(`${targets[i]!.name}: ${measured.errors} errors on ${scenario.name}`)
        cpu[i]!.push(measured.cpuUs)
        rps[i]!.push(measured.rps)
      }
    }
    return { cpu: compared(cpu), rps: compared(rps) }
  } finally {
    for (const target of targets) await stop(target)
  }
}

/** The cells of one figure over the pairs: each tree's median, the median ratio, the least and greatest pair. */
function summary(pairs: Compared[], digits: number): string {
  const ratios = pairs.map(({ ratio }) => ratio)
  return (
    `${fmt(median(pairs.map(({ mine }) => mine)), digits)} | ${fmt(median(pairs.map(({ theirs }) => theirs)), digits)} | ` +
    `${median(ratios).toFixed(3)}x | ${Math.min(...ratios).toFixed(3)}x, ${Math.max(...ratios).toFixed(3)}x`
  )
}

async function main() {
  const workDir = mkdtempSync(join(os.tmpdir(), 'petstore-against-'))
  const refRoot = join(workDir, 'ref')
  try {
    progress(`building this tree and ${ref} (a worktree in ${refRoot})`)
    execFileSync('npm', ['run', '-s', 'build'], { cwd: projectRoot, stdio: 'inherit' })
    execFileSync('git', ['worktree', 'add', '--detach', refRoot, ref!], { cwd: projectRoot, stdio: 'ignore' })
    // (the same packages: a revision whose lock differs is measured on this tree's)
    if (!existsSync(join(refRoot, 'node_modules'))) symlinkSync(join(projectRoot, 'node_modules'), join(refRoot, 'node_modules'))
    execFileSync('npm', ['run', '-s', 'build'], { cwd: refRoot, stdio: 'inherit' })
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: refRoot, encoding: 'utf8' }).trim()
    const pinned = pinCores()
    console.log(`## This tree against ${ref} (${commit})\n`)
    console.log(
      `Node ${process.version}, ${os.cpus().length} cores; ${pinned}. CPU µs of the server per answered request (user + system) ` +
        `and answered requests per second, ${plan.connections} connections, ${fmt(pets)} pets on SQLite, ${plan.pairs} pairs of new processes, ` +
        `each ${plan.slices} slices of ${plan.seconds} s per server, taken in turn; each ratio is this tree's over ${ref}'s ` +
        `(CPU: lower is better; req/s: higher is better); the requests sent by ${wrk ?? 'autocannon (wrk is not installed)'}.\n`,
    )
    console.log(
      `| scenario | logs | CPU µs/req, this tree | CPU µs/req, ${ref} | CPU ratio, median of the pairs | least, greatest pair ` +
        `| req/s, this tree | req/s, ${ref} | req/s ratio, median of the pairs | least, greatest pair |`,
    )
    console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|')
    for (const scenario of scenarios) {
      for (const logs of logSettings) {
        const pairs = []
        for (let i = 0; i < plan.pairs; i++) {
          const { cpu, rps } = await pair(refRoot, workDir, scenario, logs)
          progress(
            `  ${scenario.name}, logs ${logs}, pair ${i + 1}/${plan.pairs}: ${fmt(cpu.mine, 1)} / ${fmt(cpu.theirs, 1)} µs, ratio ${cpu.ratio.toFixed(3)}; ` +
              `${fmt(rps.mine)} / ${fmt(rps.theirs)} req/s, ratio ${rps.ratio.toFixed(3)}`,
          )
          pairs.push({ cpu, rps })
        }
        console.log(
          `| ${scenario.name} | ${logs} | ${summary(
            pairs.map(({ cpu }) => cpu),
            1,
          )} | ${summary(
            pairs.map(({ rps }) => rps),
            0,
          )} |`,
        )
      }
    }
  } finally {
    // (the link first, alone: the worktree's removal must not reach this tree's packages)
    rmSync(join(refRoot, 'node_modules'), { force: true })
    if (existsSync(refRoot)) execFileSync('git', ['worktree', 'remove', '--force', refRoot], { cwd: projectRoot, stdio: 'ignore' })
    rmSync(workDir, { recursive: true, force: true })
  }
}

await main()
