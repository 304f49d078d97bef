import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import { loadContract } from '../src/contract/load.js'
import { openStorage } from '../src/repositories.js'
import { postmasterOf } from './cores.js'
import { progress } from './load.js'

export interface Store {
  name: 'SQLite' | 'PostgreSQL'
  url: string
  /** a key issued by the service's key store, for the stored-key runs */
  storedKey: string
  /** its principal (`key:<id>`), the owner of the seeded orders */
  storedPrincipal: string
  /** the orders seeded, when the order scenarios run */
  orders?: OrderPools
}

/** Ids handed out one per request, each once, whichever target asks (they share the store). */
export interface Pool {
  ids: number[]
  next: number
}

export interface OrderPools {
  /** orders of the seeded pets (placed for the pending ones, delivered for the sold ones): ids 1 to this */
  readOrders: number
  /** available pets, for placeOrder */
  place: Pool
  /** placed orders (of pending pets), for updateOrder */
  update: Pool
}

/** The next id of a pool; past its end, its last one again (then the answers are 409s, counted as errors). */
export const take = (pool: Pool) => pool.ids[Math.min(pool.next++, pool.ids.length - 1)]!

const postgresUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

async function postgresAdmin(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 3_000 })
  await client.connect()
  return client
}

/** Whether PostgreSQL answers (at BENCH_POSTGRES_URL), and its version; or why not. When it
 * runs on this machine (a loopback address), its postmaster's process id (see pinDatabase). */
export async function postgresVersion(): Promise<{ version?: string; problem?: string; postmaster?: number }> {
  try {
    const client = await postgresAdmin()
    const { rows } = await client.query<{ server_version: string; pid: number }>('select current_setting($1) as server_version, pg_backend_pid() as pid', [
      'server_version',
    ])
    const local = ['127.0.0.1', 'localhost', '[::1]', ''].includes(new URL(postgresUrl).hostname)
    // (read while the backend that answered still runs: its parent is the postmaster)
    const postmaster = local ? postmasterOf(rows[0]!.pid) : undefined
    await client.end()
    return { version: rows[0]?.server_version, postmaster }
  } catch (error) {
    return { problem: (error as Error).message }
  }
}

export function sqliteVersion(): string {
  const db = new SQLite(':memory:')
  const version = db.prepare('select sqlite_version() as v').pluck().get() as string
  db.close()
  return version
}

/**
 * The databases of one bench run: SQLite files in `workDir`, PostgreSQL databases made anew
 * (`petstore_bench*`) and dropped by `dropAll`.
 */
export function stores(workDir: string) {
  const postgresDatabases = new Set<string>()

  /** A new SQLite file, or a new PostgreSQL database, with the service's schema (its
   * migrations, run by opening its storage), a stored key issued by its key store, `pets` pets,
   * and, given a `poolSize`, orders and pools of that size for the order writes. */
  async function make(name: Store['name'], database: string, pets: number, poolSize?: number): Promise<Store> {
    let url: string
    if (name === 'SQLite') {
      url = `sqlite:${join(workDir, `${database}.db`)}`
    } else {
      postgresDatabases.add(database)
      const admin = await postgresAdmin()
      await admin.query(`drop database if exists ${database} with (force)`)
      await admin.query(`create database ${database}`)
      await admin.end()
      const at = new URL(postgresUrl)
      at.pathname = `/${database}`
      url = at.toString()
    }
    const storage = await openStorage(url, { poolSize: 1 })
    const { key: storedKey, record } = await storage.keys.issue('bench', loadContract().roles.defaults)
    await storage.close()
    await seed(url, pets)
    // (the orders are the stored key's: it reads and moves them as their owner; the key of
    // API_KEYS is staff, see servers.ts)
    const storedPrincipal = `key:${record.id}`
    return { name, url, storedKey, storedPrincipal, ...(poolSize !== undefined && { orders: await seedOrders(url, poolSize, storedPrincipal) }) }
  }

  async function dropAll() {
    if (postgresDatabases.size === 0) return
    const admin = await postgresAdmin()
    for (const database of postgresDatabases) await admin.query(`drop database if exists ${database} with (force)`)
    await admin.end()
  }

  return { make, dropAll }
}

/**
 * Orders for the seeded pets (placed for each pending one, delivered for each sold one), then
 * `size` pending pets with a placed order each (updateOrder's pool) and `size` available pets
 * (placeOrder's pool), straight into the service's tables.
 */
async function seedOrders(url: string, size: number, owner: string): Promise<OrderPools> {
  const began = performance.now()
  const now = Date.now()
  const readOrders = `insert into orders (pet_id, status, placed_at, owner)
    select id, case status when 'pending' then 'placed' else 'delivered' end, ${now}, '${owner}' from pets where status <> 'available' order by id`
  const poolOrders = (from: number) =>
    `insert into orders (pet_id, status, placed_at, owner) select id, 'placed', ${now}, '${owner}' from pets where id >= ${from} order by id`
  let pools: { readOrders: number; update: number[]; place: number[] }
  if (url.startsWith('sqlite:')) {
    const db = new SQLite(url.slice('sqlite:'.length))
    const pets = (count: number, status: string) =>
      db
        .prepare(
          `with recursive n(i) as (select 0 union all select i + 1 from n where i + 1 < ?)
           insert into pets (name, category_id, status) select 'Pool ' || i, 1, '${status}' from n`,
        )
        .run(count)
    const ids = (sql: string, ...params: number[]) =>
      db
        .prepare(sql)
        .pluck()
        .all(...params) as number[]
    pools = db.transaction(() => {
      const read = db.prepare(readOrders).run().changes
      const from = (db.prepare('select max(id) from pets').pluck().get() as number) + 1
      pets(size, 'pending')
      db.prepare(poolOrders(from)).run()
      pets(size, 'available')
      return {
        readOrders: read,
        update: ids('select id from orders where pet_id >= ? order by id', from),
        place: ids("select id from pets where id >= ? and status = 'available' order by id", from),
      }
    })()
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.close()
  } else {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    const pets = (count: number, status: string) =>
      client.query(`insert into pets (name, category_id, status) select 'Pool ' || i, 1, $2 from generate_series(0, $1::int - 1) i`, [count, status])
    const ids = async (sql: string, from: number) => (await client.query<{ id: number }>(sql, [from])).rows.map((row) => Number(row.id))
    await client.query('begin')
    const read = (await client.query(readOrders)).rowCount ?? 0
    const from = Number((await client.query<{ max: string }>('select max(id) from pets')).rows[0]!.max) + 1
    await pets(size, 'pending')
    await client.query(poolOrders(from))
    await pets(size, 'available')
    pools = {
      readOrders: read,
      update: await ids('select id from orders where pet_id >= $1 order by id', from),
      place: await ids("select id from pets where id >= $1 and status = 'available' order by id", from),
    }
    await client.query('commit')
    await client.query('vacuum analyze pets')
    await client.query('vacuum analyze orders')
    await client.end()
  }
  progress(`  seeded ${pools.readOrders} orders, and pools of ${size} for placeOrder and updateOrder, in ${Math.round(performance.now() - began)} ms`)
  return { readOrders: pools.readOrders, update: { ids: pools.update, next: 0 }, place: { ids: pools.place, next: 0 } }
}

/** `pets` pets in bulk, straight into the service's table, a third of each status. */
/** Of the 50 categories the seeded pets name, those created (version 2 shows their names); the
 * rest were named by version 1 only. */
const createdCategories = 40

async function seed(url: string, pets: number) {
  const began = performance.now()
  if (url.startsWith('sqlite:')) {
    const db = new SQLite(url.slice('sqlite:'.length))
    db.pragma('journal_mode = WAL')
    db.transaction(() => {
      // (the ids the other pets name are kept without a name, as createPet keeps them)
      db.prepare(
        `with recursive n(i) as (select 1 union all select i + 1 from n where i < 50)
         insert into categories (id, name, name_fold, created_at)
         select i, case when i <= @created then 'Category ' || i end, case when i <= @created then 'category ' || i end, 0 from n`,
      ).run({ created: createdCategories })
      db.prepare(
        `with recursive n(i) as (select 0 union all select i + 1 from n where i + 1 < ?)
         insert into pets (name, category_id, status)
         select 'Pet ' || i, 1 + i % 50, case i % 3 when 0 then 'available' when 1 then 'pending' else 'sold' end from n`,
      ).run(pets)
    })()
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.close()
  } else {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(
      `insert into categories (id, name, name_fold, created_at)
       select i, case when i <= $1 then 'Category ' || i end, case when i <= $1 then 'category ' || i end, 0 from generate_series(1, 50) i`,
      [createdCategories],
    )
    await client.query(
      `insert into pets (name, category_id, status)
       select 'Pet ' || i, 1 + i % 50, (array['available','pending','sold'])[1 + i % 3] from generate_series(0, $1::int - 1) i`,
      [pets],
    )
    await client.query('vacuum analyze pets')
    await client.end()
  }
  progress(`  seeded ${pets} pets in ${Math.round(performance.now() - began)} ms`)
}
