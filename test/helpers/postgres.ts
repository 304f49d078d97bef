/**
 * PostgreSQL for the tests: a database of its own per test, dropped when the test ends.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { Test } from 'tap'

/** The server and an administrative database on it; the test databases are made beside it. */
export const adminUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5_000 })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/**
 * Why the PostgreSQL tests cannot run here, or false when they can: pass it as the `skip`
 * option of each PostgreSQL test, so that an absent server shows as skipped, with the reason.
 * With REQUIRE_POSTGRES=1 (CI) nothing is skipped: the tests run and fail.
 */
export const postgresMissing: string | false = await admin((client) => client.query('select 1')).then(
  () => false,
  (error: Error) =>
    process.env.REQUIRE_POSTGRES === '1' ? false : `PostgreSQL is not reachable at ${adminUrl} (${error.message}): skipped`,
)

/** The URL of a new, empty database of this test's own. */
export async function freshPostgres(t: Test): Promise<string> {
  const name = `petstore_test_${randomBytes(6).toString('hex')}`
  await admin((client) => client.query(`create database ${name}`))
  t.teardown(() => admin((client) => client.query(`drop database if exists ${name} with (force)`)))
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

/** Runs SQL against a test database, outside the app. */
export async function query(url: string, text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await client.query(text, values)
  } finally {
    await client.end()
  }
}
