import { Writable } from 'node:stream'
import type { FastifyInstance, InjectOptions } from 'fastify'
import type { Test } from 'tap'
import { type AppOptions, buildApp } from '../../src/app.js'
import { loadContracts } from '../../src/contract/load.js'
import { loadConfig } from '../../src/core/config.js'
import { contractViolations } from './contract.js'

/** The contracts a server serves unless told otherwise, oldest first (src/contract/load.ts). */
export const servedContracts = loadContracts()
/** The newest of them, which the handlers are written against: a test of what every version
 * shares (keys, limits, errors, orders, webhooks…) runs against it, and so outlives the versions
 * before it. */
export const newest = servedContracts.at(-1)!
/** The newest version's base path (`/v2`): `${api}/pets`. */
export const api = newest.basePath

/** The API key every test app accepts. */
export const testKey = 'test-key-3f9a1c'

/** Rate limits no test reaches unless it means to (test/rate-limit.test.ts does): the tests send
 * hundreds of requests, wrong keys included, from one address. */
export const unreachedLimits = { RATE_LIMIT_PER_KEY: 1_000_000, RATE_LIMIT_PER_ADDRESS: 1_000_000 }

/** A fresh app on its own in-memory database, closed when the test ends. */
export async function build(t: Test, options: Partial<AppOptions> = {}): Promise<FastifyInstance> {
  const app = await buildApp({
    ...loadConfig({}),
    DATABASE_URL: 'sqlite::memory:',
    DATABASE_POOL_SIZE: 1,
    API_KEYS: [testKey],
    LOG_LEVEL: 'silent',
    ...unreachedLimits,
    ...options,
  })
  t.teardown(() => app.close())
  return app
}

/** The API_KEYS entry of the test key that may add categories too (`categories:write`, given to
 * no key by default): for a server a test reaches over HTTP alone, where aCategory cannot reach
 * the store (`POST ${api}/categories`). */
export const curatingTestKey = `${testKey}:${[...newest.roles.defaults, 'categories:write'].join('+')}`

/** The id of a category named `name` in the app's store, added there unless it is there already.
 * Version 2 on, createPet takes only a category that exists, and no test key may add one through
 * the API (`categories:write` is given to no key by default). */
export async function aCategory(app: FastifyInstance, name = 'Bird'): Promise<number> {
  const made = await app.storage.categories.create(name)
  return 'created' in made ? made.created.id : made.taken.id
}

/** The app's log lines, parsed: pass `logger` to build() and read `lines`. */
export function logCapture() {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({ write: (chunk, _encoding, done) => done(void lines.push(JSON.parse(String(chunk)))) })
  return { lines, logger: { stream } }
}

export interface CallOptions extends InjectOptions {
  /** the path and query (the tests write it as text) */
  url?: string
  /** the bearer key to send: the test key by default, none when null */
  key?: string | null
}

export interface CallResult {
  status: number
  headers: Record<string, string | string[] | number | undefined>
  body: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the body of a JSON response, shape checked against the contract already
  json: any
}

/**
 * Sends a request through app.inject and checks the response against the contract the app
 * serves at its path (`app.contracts`: each served document under its base path, or the edited
 * copy a test gave it) before handing it back: every response in the tests keeps the contract of
 * the version it was made through, or the test fails.
 */
export async function call(t: Test, app: FastifyInstance, { key = testKey, ...options }: CallOptions): Promise<CallResult> {
  const headers = { ...(key !== null && { authorization: `Bearer ${key}` }), ...options.headers }
  const response = await app.inject({ ...options, headers })
  const observed = {
    method: options.method ?? 'GET',
    url: String(options.url),
    status: response.statusCode,
    headers: response.headers,
    body: response.body,
  }
  t.strictSame(contractViolations(observed, app.contracts), [], `${observed.method} ${observed.url} ${observed.status} keeps the contract`)
  let json: unknown
  try {
    json = JSON.parse(response.body)
  } catch {
    json = undefined
  }
  return { ...observed, json }
}
