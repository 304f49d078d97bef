// Summarises a V8 .cpuprofile (node --cpu-prof) by self time: the top functions, and the time by
// where the code lives (the service's src/, generated/, each package of node_modules, Node's
// internals, GC, idle), as markdown tables. --from and --to keep only the samples taken between
// two moments, in microseconds of the monotonic clock (process.hrtime.bigint() / 1000n, the clock
// of the profile's timestamps): e.g. the load, without the start-up.
//
// With --requests N (the requests answered in the window), times are also shown per request.
//
//   node bench/profile-summary.mjs FILE.cpuprofile [--top 20] [--from US --to US] [--requests N]
import { existsSync, readFileSync } from 'node:fs'
import { SourceMap } from 'node:module'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '20' }, from: { type: 'string' }, to: { type: 'string' }, requests: { type: 'string' } },
  allowPositionals: true,
})
if (positionals.length !== 1) {
  console.error('usage: node bench/profile-summary.mjs FILE.cpuprofile [--top N]')
  process.exit(2)
}
const profile = JSON.parse(readFileSync(positionals[0], 'utf8'))
const top = Number(values.top)

/** The built server is one bundle (scripts/build.ts): its frames are put back where their code
 * comes from (the service's src/, a package of node_modules) with the bundle's source map. */
const sourceMaps = new Map()
function unbundled(callFrame) {
  if (!callFrame.url.startsWith('file://') && !callFrame.url.startsWith('/')) return callFrame
  const file = callFrame.url.startsWith('/') ? callFrame.url : fileURLToPath(callFrame.url)
  if (!sourceMaps.has(file)) sourceMaps.set(file, existsSync(`${file}.map`) ? new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))) : undefined)
  const entry = sourceMaps.get(file)?.findEntry(callFrame.lineNumber, callFrame.columnNumber)
  if (entry?.originalSource === undefined) return callFrame
  return { ...callFrame, url: new URL(entry.originalSource, `file://${file}`).href, lineNumber: entry.originalLine }
}
for (const node of profile.nodes) node.callFrame = unbundled(node.callFrame)
const projectRoot = fileURLToPath(new URL('..', import.meta.url))

const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
// DevTools' reading: sample i lasts until sample i + 1
const self = new Map()
const { samples, timeDeltas } = profile
const from = Number(values.from ?? -Infinity)
const to = Number(values.to ?? Infinity)
let at = profile.startTime
for (let i = 0; i < samples.length; i++) {
  at += timeDeltas[i]
  if (at < from || at > to) continue
  const lasted = timeDeltas[i + 1] ?? 0
  self.set(samples[i], (self.get(samples[i]) ?? 0) + lasted)
}
const total = [...self.values()].reduce((a, b) => a + b, 0)
if (total === 0) {
  console.error('no samples in the window asked for')
  process.exit(1)
}

/** Where a script lives, in short: `src/storage/sql.js`, `fastify/lib/reply.js`, `node:net`. */
function place(url) {
  if (url === '') return ''
  const path = url.replace(/^file:\/\//, '')
  const inModules = path.lastIndexOf('/node_modules/')
  if (inModules !== -1) return path.slice(inModules + '/node_modules/'.length)
  const inDist = path.indexOf('/dist/')
  if (inDist !== -1) return path.slice(inDist + '/dist/'.length)
  if (path.startsWith(projectRoot)) return path.slice(projectRoot.length)
  const inBench = path.lastIndexOf('/bench/')
  if (inBench !== -1) return path.slice(inBench + 1)
  return path
}

/** The area a script belongs to: a package, the service, Node, or V8's pseudo-frames. */
function area(callFrame) {
  const { url, functionName } = callFrame
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  const where = place(url)
  if (url.startsWith('node:')) return 'node internals'
  if (url.includes('/node_modules/')) {
    const parts = where.split('/')
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]
  }
  if (where.startsWith('src/')) return 'service src/'
  if (where.startsWith('generated/')) return 'service generated/'
  if (where.startsWith('bench/')) return 'bench peer'
  return where
}

const byFunction = new Map()
const byArea = new Map()
for (const [id, micros] of self) {
  const { callFrame } = nodes.get(id)
  const where = place(callFrame.url)
  const name = `${callFrame.functionName || '(anonymous)'}${where ? ` ${where}:${callFrame.lineNumber + 1}` : ''}`
  byFunction.set(name, (byFunction.get(name) ?? 0) + micros)
  const key = area(callFrame)
  byArea.set(key, (byArea.get(key) ?? 0) + micros)
}

const pct = (micros) => `${((100 * micros) / total).toFixed(1)}%`
const ms = (micros) => (micros / 1000).toFixed(0)
const requests = Number(values.requests ?? 0)
const perRequest = (micros) => (requests > 0 ? ` ${(micros / requests).toFixed(1)} |` : '')
const sorted = (map) => [...map].sort((a, b) => b[1] - a[1])

const window = values.from === undefined && values.to === undefined ? 'the whole run' : 'the window asked for'
const head = `${(total / 1e6).toFixed(1)} s sampled (${window})`
const lines = [requests > 0 ? `${head}, ${requests} requests: ${(total / requests).toFixed(1)} µs each` : head, '']
lines.push(`| self % | self ms |${requests > 0 ? ' µs/request |' : ''} function |`, `|---:|---:|${requests > 0 ? '---:|' : ''}---|`)
for (const [name, micros] of sorted(byFunction).slice(0, top)) lines.push(`| ${pct(micros)} | ${ms(micros)} |${perRequest(micros)} \`${name}\` |`)
lines.push('', `| self % |${requests > 0 ? ' µs/request |' : ''} where |`, `|---:|${requests > 0 ? '---:|' : ''}---|`)
for (const [name, micros] of sorted(byArea).slice(0, top)) lines.push(`| ${pct(micros)} |${perRequest(micros)} ${name} |`)
console.log(lines.join('\n'))
