import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'
import type { SharedStore } from './shared-store.js'

/** A quota of requests per fixed window, counted per client of one kind. */
export interface Policy {
  /** `key`: per API key; `address`: requests without a valid key, per client address */
  name: 'key' | 'address'
  quota: number
  windowS: number
}

/** Where a client stands in its window, after (or without) counting a request. */
export interface Count {
  policy: Policy
  /** requests left in this window */
  remaining: number
  /** seconds until the window ends and the quota is whole again */
  resetS: number
  /** the request counted went past the quota */
  exceeded: boolean
}

/** Clients remembered as having used up their quota, beyond which expired ones are dropped. */
const spentBound = 10_000

/**
 * The counters of one policy (rate-limiter-flexible: a fixed window, counted atomically in Redis
 * by a Lua script), in the shared store while it answers, else in this instance's memory.
 * A client whose quota is used up is remembered in memory until its window ends, so its further
 * requests are refused without asking Redis.
 */
export class Counter {
  private readonly local: RateLimiterMemory
  private readonly shared: RateLimiterRedis | undefined
  /** client -> when (ms since the epoch) the window in which it used up its quota ends */
  private readonly spent = new Map<string, number>()

  constructor(
    readonly policy: Policy,
    private readonly store: SharedStore | undefined,
    keyPrefix: string,
  ) {
    const limits = { points: policy.quota, duration: policy.windowS }
    this.local = new RateLimiterMemory({ ...limits, keyPrefix: policy.name })
    this.shared =
      store &&
      new RateLimiterRedis({
        ...limits,
        storeClient: store.client,
        keyPrefix: `${keyPrefix}:${policy.name}`,
        // not connected: straight to this instance's counters, no wait
        rejectIfRedisNotReady: true,
      })
  }

  /** Counts one request of `client`. */
  async consume(client: string): Promise<Count> {
    if (this.shared && this.store!.usable) {
      try {
        return this.counted(client, await settled(this.shared.consume(client)), this.store)
      } catch (error) {
        this.store!.failed(error as Error)
      }
    }
    return this.counted(client, await settled(this.local.consume(client)))
  }

  /** A count made, in Redis (`store` then answered) or alone. */
  private counted(client: string, [outcome, exceeded]: [RateLimiterRes, boolean], store?: SharedStore): Count {
    store?.succeeded()
    this.remember(client, outcome)
    return this.count(outcome, exceeded)
  }

  /** Where `client` stands, without counting a request. */
  async peek(client: string): Promise<Count> {
    if (this.shared && this.store!.usable) {
      try {
        const outcome = await this.shared.get(client)
        this.store!.succeeded()
        return this.count(outcome, false)
      } catch (error) {
        this.store!.failed(error as Error)
      }
    }
    return this.count(await this.local.get(client), false)
  }

  /** Whether `client` has used up its quota, as far as this instance knows without asking
   * anyone (from the last count it made of that client, in Redis or alone); undefined when not. */
  exhausted(client: string): Count | undefined {
    const msLeft = (this.spent.get(client) ?? 0) - Date.now()
    if (msLeft > 0) return this.count(new RateLimiterRes(0, msLeft), false)
    this.spent.delete(client)
    return undefined
  }

  private count(outcome: RateLimiterRes | null, exceeded: boolean): Count {
    // no request yet in this window: the whole quota, for a window that would start now
    if (outcome === null) return { policy: this.policy, remaining: this.policy.quota, resetS: this.policy.windowS, exceeded }
    const remaining = Math.max(0, outcome.remainingPoints)
    const resetS = Math.max(1, Math.ceil(outcome.msBeforeNext / 1000))
    return { policy: this.policy, remaining, resetS, exceeded }
  }

  private remember(client: string, outcome: RateLimiterRes): void {
    if (outcome.remainingPoints > 0) return
    if (this.spent.size >= spentBound) {
      const now = Date.now()
      for (const [other, until] of this.spent) if (until <= now) this.spent.delete(other)
    }
    this.spent.set(client, Date.now() + outcome.msBeforeNext)
  }
}

/** rate-limiter-flexible rejects a request over the quota with its count: both outcomes as
 * [count, exceeded]; a failure (of Redis) stays one. */
async function settled(consumed: Promise<RateLimiterRes>): Promise<[RateLimiterRes, boolean]> {
  try {
    return [await consumed, false]
  } catch (outcome) {
    if (outcome instanceof RateLimiterRes) return [outcome, true]
    throw outcome
  }
}
