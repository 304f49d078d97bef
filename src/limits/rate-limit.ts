import { EventEmitter } from 'node:events'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import ipaddr from 'ipaddr.js'
import type { Config } from '../core/config.js'
import { ApiError } from '../core/errors.js'
import { andThen, type MaybePromise } from '../core/maybe-async.js'
import { type Count, Counter, type Policy } from './counter.js'
import { SharedStore } from './shared-store.js'

export type RateLimitSettings = Pick<
  Config,
  'RATE_LIMIT_PER_KEY' | 'RATE_LIMIT_PER_ADDRESS' | 'RATE_LIMIT_WINDOW_S' | 'REDIS_URL' | 'REDIS_TIMEOUT_MS' | 'REDIS_KEY_PREFIX'
>

/** What the rate limits tell whoever listens (metrics, for one). */
export interface RateLimitEvents {
  /** a request was refused with 429, by the policy named */
  refused: [policy: Policy['name'], request: FastifyRequest]
  /** the counters moved to this instance's memory (false) or back to Redis (true) */
  shared: [shared: boolean]
}

/** Sets request.principal or throws, at once or by a promise. It is also the shape of what
 * the rate limits give back: a request goes on when it returns (or its promise resolves). */
export type RateLimitAuthenticate = (request: FastifyRequest, reply: FastifyReply) => MaybePromise<void>

/** What the rate limits go around: authentication, and the same at once from the keys known
 * without asking a store (`known`: the keys in API_KEYS, the stored keys in use, cached). */
export interface KnownKeysFirst {
  (request: FastifyRequest, reply: FastifyReply): MaybePromise<void>
  known(request: FastifyRequest): void
}

/**
 * Rate limits around authentication, per API key and, for requests without a valid key, per
 * client address (key guessing). The address is checked before the key is looked up: an address
 * that has used up its quota of failures gets no more lookups in the key store until its window
 * ends. Its requests are checked only against the keys this instance knows without a query: a
 * key among them is let on (and counted against its own quota), any other is refused at once
 * with 429. So a client that holds a key in use is not locked out by the failures of others at
 * its address (a NAT, a docs page tried before its key was given), and a guesser gains nothing:
 * a wrong guess is answered as before, 429, at the cost of a hash and a map lookup and no query,
 * and a right one is a key of 192 random bits (API_KEYS: as strong as the operator makes them),
 * which no number of tries finds. A valid key this instance has not seen since it started (or
 * since keys last changed) cannot be told from a guess without a query: it is refused like one,
 * until the window ends. Every response of an operation carries the state of the quota that
 * counted it: `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10); a
 * refusal is a 429 with `Retry-After`.
 */
export class RateLimits extends EventEmitter<RateLimitEvents> {
  private readonly store: SharedStore | undefined
  private readonly perKey: Counter
  private readonly perAddress: Counter

  /** The rate limits of `settings`: counted in Redis when REDIS_URL is set, once it has
   * connected or failed to, or after `connectWithinMs` (a server starts whether Redis answers or
   * not); else in this instance's memory. */
  static async open(settings: RateLimitSettings, log: FastifyBaseLogger, connectWithinMs: number): Promise<RateLimits> {
    if (settings.REDIS_URL === '') return new RateLimits(settings, undefined)
    // (the store tells of its changes from its first error on, which comes after this turn)
    // eslint-disable-next-line prefer-const -- read by the store's callback, made before it (which runs after this turn)
    let limits: RateLimits | undefined
    const store = await SharedStore.open(settings.REDIS_URL, settings.REDIS_TIMEOUT_MS, log, (shared) => limits!.emit('shared', shared))
    limits = new RateLimits(settings, store)
    await store.connected(connectWithinMs)
    return limits
  }

  private constructor(settings: RateLimitSettings, store: SharedStore | undefined) {
    super()
    const window = settings.RATE_LIMIT_WINDOW_S
    this.store = store
    this.perKey = new Counter({ name: 'key', quota: settings.RATE_LIMIT_PER_KEY, windowS: window }, this.store, settings.REDIS_KEY_PREFIX)
    this.perAddress = new Counter({ name: 'address', quota: settings.RATE_LIMIT_PER_ADDRESS, windowS: window }, this.store, settings.REDIS_KEY_PREFIX)
  }

  /** `authenticate` (which sets request.principal or throws), within the limits; at once
   * when the key and the counts are known at once (a cached key, counters in memory). */
  around(authenticate: KnownKeysFirst): RateLimitAuthenticate {
    return (request, reply) => {
      // (no address has used up its quota, the usual case: no need to read this one)
      const spent = this.perAddress.anyExhausted && this.perAddress.exhausted(clientAddress(request.ip))
      if (spent) return this.knownOnly(authenticate, request, reply, spent)
      let authenticated: MaybePromise<void>
      try {
        authenticated = authenticate(request, reply)
      } catch (error) {
        return this.failed(request, reply, error)
      }
      return authenticated instanceof Promise
        ? authenticated.then(
            () => this.take(this.perKey, request.principal, request, reply),
            (error: unknown) => this.failed(request, reply, error),
          )
        : this.take(this.perKey, request.principal, request, reply)
    }
  }

  /** The limit of an operation that needs no key: each of its requests is one without a valid
   * key, counted against its address. */
  readonly anonymous: RateLimitAuthenticate = (request, reply) => this.take(this.perAddress, clientAddress(request.ip), request, reply)

  close(): void {
    this.perKey.close()
    this.perAddress.close()
    this.store?.close()
  }

  /** A request from an address that has used up its quota (`spent`): let on with a key known
   * without asking the store, else refused at once, whatever the reason (429). */
  private knownOnly(authenticate: KnownKeysFirst, request: FastifyRequest, reply: FastifyReply, spent: Count): MaybePromise<void> {
    try {
      authenticate.known(request)
    } catch {
      this.refuse(request, reply, spent)
    }
    return this.take(this.perKey, request.principal, request, reply)
  }

  /** A request authentication refused, which stays refused (`error` is thrown): a wrong key
   * counts against its address, and past the quota the answer is 429 rather than 401. (A key
   * store that could not answer counts against no one: the client did nothing wrong.) */
  private failed(request: FastifyRequest, reply: FastifyReply, error: unknown): MaybePromise<never> {
    const address = clientAddress(request.ip)
    const counted =
      error instanceof ApiError && error.code === 'unauthorized'
        ? this.take(this.perAddress, address, request, reply)
        : andThen(this.perAddress.peek(address), (count) => announce(reply, count))
    return andThen(counted, () => {
      throw error
    })
  }

  /** Counts one request of `client` against `counter`, and says where it stands; refused (429)
   * when the client is known to have used up its quota (without asking Redis) or goes past it. */
  private take(counter: Counter, client: string, request: FastifyRequest, reply: FastifyReply): MaybePromise<void> {
    const spent = counter.anyExhausted && counter.exhausted(client)
    if (spent) this.refuse(request, reply, spent)
    return andThen(counter.consume(client), (count) => {
      announce(reply, count)
      if (count.exceeded) this.refuse(request, reply, count)
    })
  }

  private refuse(request: FastifyRequest, reply: FastifyReply, count: Count): never {
    announce(reply, count)
    this.emit('refused', count.policy.name, request)
    const whose = count.policy.name === 'key' ? 'this API key' : 'requests without a valid API key from this address'
    throw new ApiError(
      'too_many_requests',
      `Rate limit reached: ${count.policy.quota} requests per ${count.policy.windowS} s for ${whose}; try again in ${count.resetS} s`,
      { 'Retry-After': String(count.resetS) },
    )
  }
}

/** The RateLimit field (a structured field, draft-ietf-httpapi-ratelimit-headers-10). */
const rateLimitField = ({ policy, remaining, resetS }: Count) => `"${policy.name}";r=${remaining};t=${resetS}`

/** RateLimit-Policy of each policy, written once (a policy never changes). */
const policyFields = new WeakMap<Policy, string>()
function policyField(policy: Policy): string {
  let field = policyFields.get(policy)
  if (field === undefined) policyFields.set(policy, (field = `"${policy.name}";q=${policy.quota};w=${policy.windowS}`))
  return field
}

/** The two fields on the answer (each request announces them: set one by one, no object made). */
function announce(reply: FastifyReply, count: Count): void {
  reply.header('RateLimit-Policy', policyField(count.policy)).header('RateLimit', rateLimitField(count))
}

/** Addresses already read (clientAddress), by IP, up to a bound past which it starts over: every
 * request asks, and a client's requests come from one address. */
const clients = new Map<string, string>()
export const clientsBound = 10_000

/**
 * The client an address stands for: an IPv4 address (IPv4-mapped IPv6 included) as itself, an
 * IPv6 address by its /64, the block a single host is usually given (else a guesser would have
 * 2^64 addresses, each with a fresh quota).
 */
export function clientAddress(ip: string): string {
  let client = clients.get(ip)
  if (client === undefined) {
    if (clients.size >= clientsBound) clients.clear()
    client = clientOf(ip)
    clients.set(ip, client)
  }
  return client
}

function clientOf(ip: string): string {
  // (behind a trusted proxy, what X-Forwarded-For says, which may be anything)
  if (!ipaddr.isValid(ip)) return ip.slice(0, 100)
  const parsed = ipaddr.process(ip)
  if (parsed.kind() === 'ipv4') return parsed.toString()
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16))
  return `${parts.join(':')}::/64`
}
