import { Counter, type Registry } from 'prom-client'
import type { TraceApi } from './tracing.js'

/** Tracing on: the spans dropped because the export queue was full, as a Prometheus counter
 * as the SDK reported them (tracing.ts), read when scraped. */
export function registerTraceMetrics(registry: Registry, api: TraceApi) {
  let counted = 0
  new Counter({
    name: 'petstore_trace_dropped_spans_total',
    help: 'Spans dropped, not exported, because OTEL_BSP_MAX_QUEUE_SIZE spans already waited for the collector (down or slow)',
    registers: [registry],
    collect() {
      const dropped = api.droppedSpans()
      this.inc(dropped - counted)
      counted = dropped
    },
  })
}
