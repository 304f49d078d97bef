import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'
import type { MaybePromise } from '../core/maybe-async.js'
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

/** A count as rate-limiter-flexible gives it: what is left, and for how long. */
type Tally = Pick<RateLimiterRes, 'remainingPoints' | 'msBeforeNext'>

/**
 * Fixed windows counted in this instance's memory, at once. (rate-limiter-flexible's memory
 * limiter answers by promise only, and every request of a server without Redis is counted here:
 * its promises cost more than the count.) Windows that have ended are dropped once per window
 * length, so what is kept is bounded by the clients of the last two windows.
 */
class LocalWindows {
  private readonly windows = new Map<string, { used: number; endsAt: number }>()
  private readonly sweeper: NodeJS.Timeout

  constructor(private readonly policy: Policy) {
    this.sweeper = setInterval(() => this.sweep(), policy.windowS * 1000).unref()
  }

  /** Counts one request of `client` at `now`: its window, with the request counted. */
  consume(client: string, now: number): { readonly used: number; readonly endsAt: number } {
    let window = this.windows.get(client)
    if (window === undefined || window.endsAt <= now) {
      window = { used: 0, endsAt: now + this.policy.windowS * 1000 }
      this.windows.set(client, window)
    }
    window.used++
    return window
  }

  /** Where `client` stands, without counting; null when it has no window open. */
  get(client: string): Tally | null {
    const now = Date.now()
    const window = this.windows.get(client)
    if (window === undefined || window.endsAt <= now) return null
    return { remainingPoints: this.policy.quota - window.used, msBeforeNext: window.endsAt - now }
  }

  close(): void {
    clearInterval(this.sweeper)
  }

  private sweep(): void {
    const now = Date.now()
    for (const [client, { endsAt }] of this.windows) if (endsAt <= now) this.windows.delete(client)
  }
}

/**
 * The counters of one policy (a fixed window: rate-limiter-flexible's, counted atomically in
 * Redis by a Lua script), in the shared store while it answers, else in this instance's memory.
 * A client whose quota is used up is remembered in memory until its window ends, so its further
 * requests are refused without asking Redis.
 */
export class Counter {
  private readonly local: LocalWindows
  private readonly shared: RateLimiterRedis | undefined
  /** client -> when (ms since the epoch) the window in which it used up its quota ends */
  private readonly spent = new Map<string, number>()

  constructor(
    readonly policy: Policy,
    private readonly store: SharedStore | undefined,
    keyPrefix: string,
  ) {
    const limits = { points: policy.quota, duration: policy.windowS }
    this.local = new LocalWindows(policy)
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

  /** Counts one request of `client`: at once in memory, by a promise in Redis. */
  consume(client: string): MaybePromise<Count> {
    return this.shared && this.store!.usable ? this.consumeShared(this.shared, this.store!, client) : this.consumeLocal(client)
  }

  /** The count of every request of a server without Redis: one lookup, one object. */
  private consumeLocal(client: string): Count {
    const now = Date.now()
    const { used, endsAt } = this.local.consume(client, now)
    const remaining = this.policy.quota - used
    if (remaining <= 0) this.rememberUntil(client, endsAt)
    return this.countOf(remaining, endsAt - now, remaining < 0)
  }

  private async consumeShared(shared: RateLimiterRedis, store: SharedStore, client: string): Promise<Count> {
    try {
      const counted = await settled(shared.consume(client))
      store.succeeded()
      return this.counted(client, counted)
    } catch (error) {
      store.failed(error as Error)
      return this.consumeLocal(client)
    }
  }

  /** A count Redis made. */
  private counted(client: string, [outcome, exceeded]: [Tally, boolean]): Count {
    this.remember(client, outcome)
    return this.count(outcome, exceeded)
  }

  /** Where `client` stands, without counting a request. */
  peek(client: string): MaybePromise<Count> {
    return this.shared && this.store!.usable ? this.peekShared(this.shared, this.store!, client) : this.count(this.local.get(client), false)
  }

  private async peekShared(shared: RateLimiterRedis, store: SharedStore, client: string): Promise<Count> {
    try {
      const outcome = await shared.get(client)
      store.succeeded()
      return this.count(outcome, false)
    } catch (error) {
      store.failed(error as Error)
      return this.count(this.local.get(client), false)
    }
  }

  close(): void {
    this.local.close()
  }

  /** Whether `client` has used up its quota, as far as this instance knows without asking
   * anyone (from the last count it made of that client, in Redis or alone); undefined when not. */
  exhausted(client: string): Count | undefined {
    const until = this.spent.get(client)
    if (until === undefined) return undefined
    const msLeft = until - Date.now()
    if (msLeft > 0) return this.countOf(0, msLeft, false)
    this.spent.delete(client)
    return undefined
  }

  /** Whether this instance knows of any client of this counter that used up its quota. */
  get anyExhausted(): boolean {
    return this.spent.size > 0
  }

  private count(outcome: Tally | null, exceeded: boolean): Count {
    // no request yet in this window: the whole quota, for a window that would start now
    if (outcome === null) return { policy: this.policy, remaining: this.policy.quota, resetS: this.policy.windowS, exceeded }
    return this.countOf(outcome.remainingPoints, outcome.msBeforeNext, exceeded)
  }

  /** A count with `remainingPoints` left (below 0 past the quota) for `msBeforeNext` more. */
  private countOf(remainingPoints: number, msBeforeNext: number, exceeded: boolean): Count {
    return { policy: this.policy, remaining: Math.max(0, remainingPoints), resetS: Math.max(1, Math.ceil(msBeforeNext / 1000)), exceeded }
  }

  private remember(client: string, outcome: Tally): void {
    if (outcome.remainingPoints <= 0) this.rememberUntil(client, Date.now() + outcome.msBeforeNext)
  }

  /** `client` has used up its quota until `until` (ms since the epoch). */
  private rememberUntil(client: string, until: number): void {
    if (this.spent.size >= spentBound) {
      const now = Date.now()
      for (const [other, ends] of this.spent) if (ends <= now) this.spent.delete(other)
    }
    this.spent.set(client, until)
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
