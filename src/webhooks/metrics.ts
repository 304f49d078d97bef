import { Counter, Gauge, type Registry } from 'prom-client'
import type { Backlog } from './deliveries.js'
import type { DispatcherMetrics } from './dispatcher.js'
import { attemptResults } from './outcome.js'

/**
 * The webhooks' metrics, added to the app's registry: petstore_webhook_attempts_total{result},
 * petstore_webhook_deliveries_total{result}, petstore_webhook_disabled_subscriptions_total{reason},
 * and the lag of event deliveries as the dispatcher last found it (a scrape asks the database
 * nothing): petstore_webhook_oldest_pending_seconds and petstore_webhook_oldest_due_seconds.
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
  // the age of what waits, as the dispatcher last found it
  let backlog: Backlog = {}
  const ageOf = (since: number | undefined) => (since === undefined ? 0 : Math.max(0, (Date.now() - since) / 1000))
  new Gauge({
    name: 'petstore_webhook_oldest_pending_seconds',
    help: 'Age of the oldest webhook delivery not yet made (0 when none waits), retries of failing receivers included; every instance reports the same store',
    registers,
    collect() {
      this.set(ageOf(backlog.oldestPendingAt))
    },
  })
  new Gauge({
    name: 'petstore_webhook_oldest_due_seconds',
    help: 'How long the oldest webhook delivery that is due (its receiver not backed off) has waited for its attempt (0 when none): the dispatchers falling behind; every instance reports the same store',
    registers,
    collect() {
      this.set(ageOf(backlog.oldestDueAt))
    },
  })
  const disabled = new Counter({
    name: 'petstore_webhook_disabled_subscriptions_total',
    help: 'Webhook subscriptions this instance disabled, by why: gone (the endpoint answered 410), failing (every attempt failed for WEBHOOK_DISABLE_AFTER_S)',
    labelNames: ['reason'] as const,
    registers,
  })
  for (const reason of ['gone', 'failing'] as const) disabled.inc({ reason }, 0)
  return {
    attempted: (result) => attempts.inc({ result }),
    finished: (result) => deliveries.inc({ result }),
    backlog: (found) => {
      backlog = found
    },
    disabled: (reason) => disabled.inc({ reason }),
  }
}
