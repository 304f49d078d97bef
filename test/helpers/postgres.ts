/**
 * PostgreSQL for the tests: a database of its own per test, dropped when the test ends.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { Test } from 'tap'

/** The server and an administrative database on it; the test databases are made beside it. */
export const adminUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

async function admin<T>(work: (client: pg.Client) => Promise<T>, url = adminUrl): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
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
  (error: Error) => (process.env.REQUIRE_POSTGRES === '1' ? false : `PostgreSQL is not reachable at ${adminUrl} (${error.message}): skipped`),
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

/** A database of this test's own, owned by a login role of its own: what an operator can take
 * away from a server (its login, its privileges, its database) without touching other tests. */
export interface OwnRole {
  /** the role and its database */
  name: string
  /** the URL the server connects with, as the role */
  url: string
  /** runs SQL as the superuser, in the role's database (`inDatabase`) or the administrative one */
  asAdmin(text: string, options?: { inDatabase?: boolean }): Promise<pg.QueryResult>
}

export async function freshRole(t: Test): Promise<OwnRole> {
  const name = `petstore_role_${randomBytes(6).toString('hex')}`
  await admin(async (client) => {
    await client.query(`create role ${name} login`)
    await client.query(`create database ${name} owner ${name}`)
  })
  t.teardown(() =>
    admin(async (client) => {
      await client.query(`drop database if exists ${name} with (force)`)
      await client.query(`drop role if exists ${name}`)
    }),
  )
  const url = new URL(adminUrl)
  url.username = name
  url.password = ''
  url.pathname = `/${name}`
  const inDatabase = new URL(adminUrl)
  inDatabase.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    asAdmin: (text, options = {}) => admin((client) => client.query(text), options.inDatabase ? inDatabase.toString() : adminUrl),
  }
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
