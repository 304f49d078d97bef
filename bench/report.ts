import { type Measurement, pairedRatio } from './load.js'
import { scenarioNames } from './options.js'
import type { Logs } from './servers.js'

export const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a'
export const ratio = (a: number, b: number) => (b > 0 && Number.isFinite(a) ? `${(a / b).toFixed(2)}x` : 'n/a')

/** One scenario on one store with one kind of key: the service and the peer, with logs and without. */
export interface Row {
  scenario: string
  store: string
  key: string
  measured: Record<Logs, { project: Measurement; peer: Measurement }>
  /** the service's measurements, round by round (for ratios taken within a round) */
  projectRounds: Record<Logs, Measurement[]>
}

/** req/s, p99 and CPU per request of service and peer, and their ratios: the cells of one log setting. */
function cells({ project, peer }: { project: Measurement; peer: Measurement }): string {
  return (
    `${fmt(project.rps)} / ${fmt(peer.rps)} | ${ratio(project.rps, peer.rps)} | ` +
    `${fmt(project.p99, 2)} / ${fmt(peer.p99, 2)} | ${ratio(project.p99, peer.p99)} | ` +
    `${fmt(project.cpuUs, 1)} / ${fmt(peer.cpuUs, 1)} | ${ratio(project.cpuUs, peer.cpuUs)}`
  )
}

export function mainTable(rows: Row[], plan: { connections: number; pets: number; duration: number; rounds: number; logLevel: string | undefined }): string {
  const level = plan.logLevel ?? 'info'
  const lines = [
    '### Service vs hand-written peer',
    '',
    `${plan.connections} connections, ${plan.pets.toLocaleString('en-US')} pets, ${plan.duration} s per measurement, ` +
      `median of ${plan.rounds} interleaved round${plan.rounds > 1 ? 's' : ''}; ratio = project / peer ` +
      '(req/s: higher is better; p99 and CPU: lower is better; CPU = µs of CPU time, user + system, the server ' +
      'process spent per answered request, which other work on the machine moves less than req/s). ' +
      `Logs on: the access log at level ${level} on both sides; ` +
      'logs off: LOG_LEVEL=silent on both sides.',
    '',
    '| scenario | store | key | logs on: req/s project / peer | ratio | p99 ms project / peer | p99 ratio | CPU µs/req project / peer | CPU ratio ' +
      '| logs off: req/s project / peer | ratio | p99 ms project / peer | p99 ratio | CPU µs/req project / peer | CPU ratio | errors project/peer (on; off) |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  const sorted = [...rows].sort((a, b) => scenarioNames.indexOf(a.scenario) - scenarioNames.indexOf(b.scenario))
  for (const { scenario, store, key, measured } of sorted) {
    const errors = (logs: Logs) => `${measured[logs].project.errors}/${measured[logs].peer.errors}`
    lines.push(`| ${scenario} | ${store} | ${key} | ${cells(measured.on)} | ${cells(measured.off)} | ${errors('on')}; ${errors('off')} |`)
  }
  return lines.join('\n')
}

/** The reads whose answers per second the service must match (the team's bar: at least the
 * peer's, with either key, logs on and off): version 1's getPet and listPets, version 2's listPets. */
const matchedReads = ['getPet', 'listPets limit=20, status', 'listPets@v2 limit=20, status']

/** One line per read of the table below the peer's req/s, or one line saying none is. */
export function readsBelowPeer(rows: Row[]): string {
  const below: string[] = []
  for (const { scenario, store, key, measured } of rows) {
    if (!matchedReads.includes(scenario)) continue
    for (const logs of ['on', 'off'] as const) {
      const { project, peer } = measured[logs]
      if (!(project.rps >= peer.rps)) below.push(`- ${scenario}, ${store}, ${key}, logs ${logs}: ${ratio(project.rps, peer.rps)} of the peer's req/s`)
    }
  }
  const measuredReads = rows.filter(({ scenario }) => matchedReads.includes(scenario)).length
  if (measuredReads === 0) return ''
  return below.length === 0
    ? `Every read measured (${matchedReads.join('; ')}) answered at least the peer's req/s.`
    : `Reads below the peer's req/s (the bar: 1.00x):\n\n${below.join('\n')}`
}

/** One scale scenario on one store: the service at the small store and at the big one. */
export interface ScaleRow {
  scenario: string
  store: string
  small: Measurement
  big: Measurement
}

export function scaleTable(rows: ScaleRow[], plan: { pets: number; scalePets: number }): string {
  const lines = [
    `### Scale: the service (stored key) at ${plan.scalePets.toLocaleString('en-US')} pets vs ${plan.pets.toLocaleString('en-US')}`,
    '',
    'deep after = after at 90% of the ids; ratio = big / small',
    '',
    '| scenario | store | small req/s | big req/s | ratio | small p99 ms | big p99 ms | p99 ratio | errors (small/big) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const { scenario, store, small: a, big: b } of rows) {
    lines.push(
      `| ${scenario} | ${store} | ${fmt(a.rps)} | ${fmt(b.rps)} | ${ratio(b.rps, a.rps)} | ${fmt(a.p99, 2)} | ${fmt(b.p99, 2)} | ${ratio(b.p99, a.p99)} | ${a.errors}/${b.errors} |`,
    )
  }
  return lines.join('\n')
}

/** Each revalidated page's row (its 304s) with the row of its 200s: where both ran. */
function revalidations(rows: Row[]): { revalidated: Row; read: Row }[] {
  return rows.flatMap((revalidated) => {
    if (!revalidated.scenario.startsWith('listPets 304')) return []
    const read = rows.find((row) => row.scenario === revalidated.scenario.replace('304 ', '') && row.store === revalidated.store && row.key === revalidated.key)
    return read === undefined ? [] : [{ revalidated, read }]
  })
}

/**
 * listPets' page revalidated (304) against its 200, in the service's CPU per answer: where both
 * ran. With `plain` (the same revalidation answered by plain Fastify, bench/plain-304.mjs), also
 * what a Fastify server pays for a 304 before any work of its own, and the service's 304 against it.
 */
export function revalidationTable(rows: Row[], plain?: Record<Logs, Measurement>): string | undefined {
  const lines: string[] = []
  for (const { revalidated, read } of revalidations(rows)) {
    for (const logs of ['on', 'off'] as const) {
      const [ok, notModified] = [read.measured[logs].project.cpuUs, revalidated.measured[logs].project.cpuUs]
      const plainCells = plain === undefined ? '' : ` ${fmt(plain[logs].cpuUs, 1)} | ${fmt(notModified / plain[logs].cpuUs, 2)} |`
      const perOk = pairedRatio(revalidated.projectRounds[logs], read.projectRounds[logs])
      lines.push(
        `| ${read.store} | ${read.key} | ${logs} | ${fmt(ok, 1)} | ${fmt(notModified, 1)} | ${fmt(perOk, 2)} | ${busy(revalidated.measured[logs].project)} |${plainCells}`,
      )
    }
  }
  if (lines.length === 0) return undefined
  const [plainHead, plainRule, plainNote] =
    plain === undefined
      ? ['', '', '']
      : [
          ' plain Fastify 304 | 304 / plain |',
          '---:|---:|',
          ' Plain Fastify: the same requests answered by one route that checks and reads nothing (bench/plain-304.mjs, ' +
            `${fmt(plain.on.rps)} / ${fmt(plain.off.rps)} req/s logs on / off): what a Fastify server pays to answer a 304 before any work of its own.`,
        ]
  return [
    '### Revalidating a page: a 304 against its 200',
    '',
    `CPU µs per answer of the service, listPets limit=20 with status (the main table's measurements); 304 / 200: the median of each round's. "304: core busy": the share of its core the server used while its 304s were measured (near 100%: the server, not the load generator, set the pace).${plainNote}`,
    '',
    `| store | key | logs | 200 | 304 | 304 / 200 | 304: core busy |${plainHead}`,
    `|---|---|---|---:|---:|---:|---:|${plainRule}`,
    ...lines,
  ].join('\n')
}

/** The share of its core a server used while measured: answers per second times CPU per answer. */
const busy = (measured: Measurement) => `${fmt((measured.rps * measured.cpuUs) / 1e4)}%`

/** The revalidation's bar (a 304 costs at most half its 200's CPU per answer): one line per
 * cell above it, or one line saying none is. */
export function revalidationsAboveHalf(rows: Row[]): string {
  const above: string[] = []
  for (const { revalidated, read } of revalidations(rows)) {
    for (const logs of ['on', 'off'] as const) {
      const perOk = pairedRatio(revalidated.projectRounds[logs], read.projectRounds[logs])
      if (!(perOk <= 0.5)) above.push(`- ${read.store}, ${read.key}, logs ${logs}: ${fmt(perOk, 2)} of its 200's CPU`)
    }
  }
  return above.length === 0
    ? "Every 304 cost at most half its 200's CPU per answer."
    : `304s above half their 200's CPU per answer (the bar: 0.50):\n\n${above.join('\n')}`
}
