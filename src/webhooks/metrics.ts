import { Counter, Gauge, type Registry } from 'prom-client'
import { attemptResults, type DispatcherMetrics } from './dispatcher.js'

/**
 * The webhooks' metrics, added to the app's registry: petstore_webhook_attempts_total{result},
 * petstore_webhook_deliveries_total{result}, and petstore_webhook_oldest_pending_seconds (the
 * lag of event deliveries, as the dispatcher last found it: a scrape asks the database nothing).
 */
export function webhookMetrics(registry: Registry): DispatcherMetrics {
  const registers = [registry]
  const attempts = new Counter({
    name: 'petstore_webhook_attempts_total',
    help: 'Attempts to deliver a webhook event, by result: succeeded (2xx), rejected (another status), timeout, unreachable (no connection), refused (an address the policy refuses)',
    labelNames: ['result'] as const,
    registers,
  })
  for (const result of attemptResults) attempts.inc({ result }, 0)
  const deliveries = new Counter({
    name: 'petstore_webhook_deliveries_total',
    help: 'Webhook deliveries that are over, by result: succeeded, or failed (no attempt succeeded within WEBHOOK_RETRY_PERIOD_S)',
    labelNames: ['result'] as const,
    registers,
  })
  for (const result of ['succeeded', 'failed'] as const) deliveries.inc({ result }, 0)
  // when the oldest delivery waiting was created, as the dispatcher last found it
  let oldestPendingAt: number | undefined
  new Gauge({
    name: 'petstore_webhook_oldest_pending_seconds',
    help: 'Age of the oldest webhook delivery not yet made (0 when none waits): the lag to alert on; every instance reports the same store',
    registers,
    collect() {
      this.set(oldestPendingAt === undefined ? 0 : Math.max(0, (Date.now() - oldestPendingAt) / 1000))
    },
  })
  return {
    attempted: (result) => attempts.inc({ result }),
    finished: (result) => deliveries.inc({ result }),
    pending: (since) => {
      oldestPendingAt = since
    },
  }
}
