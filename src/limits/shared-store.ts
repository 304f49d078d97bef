import type { FastifyBaseLogger } from 'fastify'
import type { Redis } from 'ioredis'

/** After a Redis failure, how long the instance counts alone before it asks Redis again: a
 * frozen Redis costs one timeout a second, not one per request. */
export const retryAfterFailureMs = 1_000

/**
 * The Redis that instances share their rate-limit counters in, and whether to use it now. Redis
 * is never on the critical path: every call is bounded by `timeoutMs` (the client queues
 * nothing while disconnected), and after a failure the counters are kept in this instance's
 * memory until Redis answers again. The change each way is logged once.
 */
export class SharedStore {
  readonly client: Redis
  private suspendedUntil = 0
  private down = false

  /** A store on the Redis at `url`, connecting. ioredis is loaded here, not with the server: a
   * server without REDIS_URL never needs it, and loading it is a tenth of a start. */
  static async open(url: string, timeoutMs: number, log: FastifyBaseLogger, onChange: (shared: boolean) => void): Promise<SharedStore> {
    const { Redis } = await import('ioredis')
    return new SharedStore(Redis, url, timeoutMs, log, onChange)
  }

  private constructor(
    Client: typeof Redis,
    url: string,
    timeoutMs: number,
    private readonly log: FastifyBaseLogger,
    private readonly onChange: (shared: boolean) => void,
  ) {
    this.client = new Client(url, {
      commandTimeout: timeoutMs,
      connectTimeout: Math.max(timeoutMs, 1_000),
      // a command while disconnected fails at once rather than waiting for a connection
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // reconnect for ever, at most every 2 s
      retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
    })
    // connection errors arrive here (else ioredis prints them); the first is logged
    this.client.on('error', (error: Error) => this.failed(error))
  }

  /** Resolves once Redis is connected, or has failed to connect, or after `withinMs`: a
   * server starts whether Redis answers or not, but does not call it down for being slow to
   * connect at startup. */
  async connected(withinMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await new Promise<void>((resolve) => {
      timer = setTimeout(resolve, withinMs)
      this.client.once('ready', resolve).once('error', () => resolve())
    })
    clearTimeout(timer)
  }

  /** Whether to ask Redis now. */
  get usable(): boolean {
    return Date.now() >= this.suspendedUntil
  }

  failed(error: Error): void {
    this.suspendedUntil = Date.now() + retryAfterFailureMs
    if (this.down) return
    this.down = true
    this.log.warn({ err: error }, 'Redis is unavailable: rate limits are counted by each instance alone until it answers again')
    this.onChange(false)
  }

  succeeded(): void {
    if (!this.down) return
    this.down = false
    this.log.info('Redis answers again: rate limits are shared by the instances again')
    this.onChange(true)
  }

  close(): void {
    // at once, without waiting for answers a frozen Redis would never give
    this.client.disconnect()
  }
}
