import { compareRounds, type Driver, type LoadPlan, type Measurement, medianOf, pairedRatio, progress } from './load.js'
import { otlpSink, type OtlpSink } from './otlp-sink.js'
import { fmt, ratio } from './report.js'
import { petScenarios } from './scenarios.js'
import { type Servers, stop, type Target } from './servers.js'
import type { Store } from './stores.js'

/** The service's tracing settings measured: none (no OTEL_* variable: the SDK is not loaded and
 * no hook is registered), a tenth of the traces kept, every trace kept. */
const ratio01 = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }
const settings: { name: string; env: NodeJS.ProcessEnv; nodeArgs?: string[] }[] = [
  { name: 'off', env: {} },
  { name: 'ratio 0.1', env: ratio01 },
  { name: 'always_on', env: { OTEL_TRACES_SAMPLER: 'always_on' } },
]
// Node 22's AsyncLocalStorage (the SDK's context manager) runs a hook at every promise once
// entered; Node 24 keeps the context with each frame instead, which 22 has behind this flag
if (process.versions.node.startsWith('22.'))
  settings.push({ name: 'ratio 0.1, async context frame', env: ratio01, nodeArgs: ['--experimental-async-context-frame'] })
export const tracingSettings = settings

/** The scenarios the phase measures: version 1's getPet, listPets (its 200) and createPet. */
const traced = new Set(['getPet', 'listPets limit=20, status', 'createPet'])

export interface TracingRow {
  scenario: string
  store: string
  setting: string
  measured: Measurement
  /** round by round, for ratios taken within a round */
  rounds: Measurement[]
  /** spans the sink received per answered request (NaN with tracing off) */
  spansPerAnswer: number
}

/** Every OTEL_* variable of the bench's own environment unset for the servers: the settings alone decide. */
const noOtel = (): NodeJS.ProcessEnv => Object.fromEntries(Object.keys(process.env).flatMap((name) => (name.startsWith('OTEL_') ? [[name, undefined]] : [])))

const targetName = (setting: string) => `service, tracing ${setting}`

/**
 * The service (stored key, access log off, so that the figures are tracing's alone) with each of
 * `tracingSettings`, on `store`, in interleaved rounds on new processes as the main table's;
 * each traced one exporting over OTLP/HTTP (the SDK's defaults: http/protobuf, the batch span
 * processor) to a sink of its own in this process, which takes every export. The spans a
 * measurement sent are those its sink received meanwhile: an export lags by up to a batch (512
 * spans, or 5 s), so they are near, not exact.
 */
export async function tracingCosts(
  running: Servers,
  store: Store,
  plan: LoadPlan & { driver: Driver },
  wanted: (name: string) => boolean,
): Promise<TracingRow[]> {
  const scenarios = petScenarios(10_000).filter(({ name }) => traced.has(name) && wanted(name))
  if (scenarios.length === 0) return []
  progress(`${store.name}: the service with tracing off, at ratio 0.1 and always on`)
  const sinks = new Map<string, OtlpSink>()
  const targets: Target[] = []
  const spans = new Map<string, number>()
  try {
    for (const setting of tracingSettings) {
      let env = noOtel()
      if (setting.name !== 'off') {
        const sink = await otlpSink()
        sinks.set(targetName(setting.name), sink)
        env = { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, ...setting.env }
      }
      targets.push(await running.project(targetName(setting.name), store.url, 'stored', store.storedKey, 'off', setting.nodeArgs, env))
    }
    const rounds = await compareRounds(`${store.name} tracing`, targets, () => scenarios, plan, {
      freshEachRound: true,
      observe(target, scenario) {
        const sink = sinks.get(target.name)
        const before = sink?.received().spans ?? Number.NaN
        return () => {
          const key = `${target.name}\n${scenario}`
          spans.set(key, (spans.get(key) ?? 0) + (sink?.received().spans ?? Number.NaN) - before)
        }
      },
    })
    return [...rounds].flatMap(([scenario, byTarget]) =>
      tracingSettings.map(({ name }) => {
        const list = byTarget.get(targetName(name))!
        const measured = medianOf(list)
        return {
          scenario,
          store: store.name,
          setting: name,
          measured,
          rounds: list,
          spansPerAnswer: spans.get(`${targetName(name)}\n${scenario}`)! / measured.answered,
        }
      }),
    )
  } finally {
    for (const target of targets) await stop(target)
    for (const sink of sinks.values()) await sink.close()
  }
}

/** What sampling a tenth of the traces may add to a read's CPU per request, at most. */
const readBudget = 0.05

/** The table of the phase: each setting's figures and their ratios to tracing off, with the
 * reads whose CPU per request at ratio 0.1 rose past the budget (or a line saying none did). */
export function tracingTable(rows: TracingRow[], plan: { connections: number; duration: number; rounds: number }): string {
  const lines = [
    '### What tracing costs',
    '',
    `The service, stored key, access log off; ${plan.connections} connections, ${plan.duration} s per measurement, median of ${plan.rounds} ` +
      `interleaved round${plan.rounds > 1 ? 's' : ''} on new processes; each traced server exports over OTLP/HTTP (http/protobuf, ` +
      "the SDK's batch span processor at its defaults) to a sink in the bench process that answers every export 200. Tracing off: " +
      'no OTEL_* variable, so the SDK is not loaded and no hook or statement wrapper is registered. CPU ratio: the median of ' +
      "each round's ratio to tracing off. Spans: received by the sink per answered request (an export lags up to one batch).",
    '',
    '| scenario | store | tracing | req/s | vs off | p99 ms | vs off | CPU µs/req | vs off | spans/request |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  const over: string[] = []
  for (const row of rows) {
    const off = rows.find((other) => other.scenario === row.scenario && other.store === row.store && other.setting === 'off')!
    const cpu = pairedRatio(row.rounds, off.rounds)
    const { rps, p99, cpuUs } = row.measured
    lines.push(
      `| ${row.scenario} | ${row.store} | ${row.setting} | ${fmt(rps)} | ${ratio(rps, off.measured.rps)} | ${fmt(p99, 2)} | ${ratio(p99, off.measured.p99)} | ` +
        `${fmt(cpuUs, 1)} | ${Number.isFinite(cpu) ? `${cpu.toFixed(2)}x` : 'n/a'} | ${fmt(row.spansPerAnswer, 2)} |`,
    )
    if (row.setting.startsWith('ratio 0.1') && row.scenario !== 'createPet' && !(cpu <= 1 + readBudget))
      over.push(`${row.scenario} on ${row.store} (${row.setting}): ${Number.isFinite(cpu) ? `+${((cpu - 1) * 100).toFixed(1)}%` : 'n/a'}`)
  }
  lines.push(
    '',
    over.length === 0
      ? `Every read at ratio 0.1 spent at most ${readBudget * 100}% more CPU per request than with tracing off.`
      : `Reads at ratio 0.1 above ${readBudget * 100}% more CPU per request than with tracing off: ${over.join('; ')}.`,
  )
  return lines.join('\n')
}
