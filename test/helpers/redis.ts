/**
 * Redis for the tests: a key prefix of each test's own, its keys deleted when the test ends.
 */
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import type { Test } from 'tap'

export const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

/** A client that gives up at once rather than retrying for ever. */
function client(): Redis {
  return new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2_000 })
}

/**
 * Why the Redis tests cannot run here, or false when they can (pass it as `skip`). With
 * REQUIRE_REDIS=1 (CI) nothing is skipped: the tests run and fail.
 */
export const redisMissing: string | false = await (async () => {
  const redis = client()
  try {
    await redis.connect()
    await redis.ping()
    return false
  } catch (error) {
    return process.env.REQUIRE_REDIS === '1' ? false : `Redis is not reachable at ${redisUrl} (${(error as Error).message}): skipped`
  } finally {
    redis.disconnect()
  }
})()

/** A Redis client for the test, closed when it ends. */
export async function redisClient(t: Test): Promise<Redis> {
  const redis = client()
  await redis.connect()
  t.teardown(() => redis.disconnect())
  return redis
}

/** A key prefix no other test run uses; every key under it is deleted when the test ends. */
export async function freshPrefix(t: Test): Promise<{ prefix: string; keys: () => Promise<string[]> }> {
  const prefix = `petstore-test:${randomBytes(6).toString('hex')}`
  const redis = await redisClient(t)
  const keys = () => redis.keys(`${prefix}:*`)
  t.teardown(async () => {
    const left = await keys()
    if (left.length > 0) await redis.del(...left)
  })
  return { prefix, keys }
}
