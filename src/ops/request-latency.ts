/**
 * A Prometheus histogram of request latency by `operation` and `status`: the one metric that
 * every request adds to. prom-client's Histogram builds and hashes a label set at each
 * observe() (0.4 µs alone in a loop, several times that amid a request's other work); here the
 * series of an operation is found once, when its route is made, and a request costs a lookup
 * by status and one increment. The text is written only when scraped, in the exposition format
 * prom-client writes for its own histograms.
 */
export class RequestLatency {
  private readonly operations = new Map<string, { labels: string; latency: OperationLatency }>()

  constructor(
    readonly name: string,
    readonly help: string,
    /** upper bounds of the buckets, in seconds, ascending */
    private readonly buckets: readonly number[],
  ) {}

  /** The series of one `operation` label (and `version`, the major version of the API, for an
   * operation of one): what its requests are counted in. */
  of(operation: string, version?: number): OperationLatency {
    const key = version === undefined ? operation : `${operation} ${version}`
    let found = this.operations.get(key)
    if (found === undefined) {
      const labels = `operation="${escapeLabel(operation)}"${version === undefined ? '' : `,version="${version}"`}`
      this.operations.set(key, (found = { labels, latency: new OperationLatency(this.buckets) }))
    }
    return found.latency
  }

  /** The histogram in Prometheus's text exposition format (version 0.0.4). */
  exposition(): string {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} histogram`]
    for (const { labels: named, latency } of this.operations.values()) {
      for (const [status, series] of latency.series) {
        const labels = `${named},status="${status}"`
        let cumulative = 0
        this.buckets.forEach((bound, i) => {
          cumulative += series.counts[i]!
          lines.push(`${this.name}_bucket{${labels},le="${bound}"} ${cumulative}`)
        })
        lines.push(`${this.name}_bucket{${labels},le="+Inf"} ${series.count}`)
        lines.push(`${this.name}_sum{${labels}} ${series.sum}`)
        lines.push(`${this.name}_count{${labels}} ${series.count}`)
      }
    }
    return `${lines.join('\n')}\n`
  }
}

interface Series {
  /** requests per bucket, not cumulative; the last bucket (+Inf) is count minus their sum */
  counts: Float64Array
  sum: number
  count: number
}

export class OperationLatency {
  readonly series = new Map<number, Series>()

  constructor(private readonly buckets: readonly number[]) {}

  /** One answered request: its status, and the seconds it took. */
  observe(status: number, seconds: number): void {
    let series = this.series.get(status)
    if (series === undefined) this.series.set(status, (series = { counts: new Float64Array(this.buckets.length), sum: 0, count: 0 }))
    const { buckets } = this
    for (let i = 0; i < buckets.length; i++) {
      if (seconds <= buckets[i]!) {
        series.counts[i]! += 1
        break
      }
    }
    series.sum += seconds
    series.count++
  }
}

/** Escapes of the exposition format: a label value may hold `\`, `"` and line feeds, help text `\` and line feeds. */
const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
const escapeHelp = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
