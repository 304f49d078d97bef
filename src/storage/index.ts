import { configSchema } from '../core/config.js'
import { type CategoryRepository, categoryRepository } from './categories.js'
import { type Database, DatabaseConfigError, type DatabaseOptions, type DatabaseTarget, databaseReadConnections, databaseTimeoutMs, type PoolStats, parseDatabaseUrl } from './database.js'
import { type DeliveryQueue, deliveryQueue } from './deliveries.js'
import type { GroupCommitStats } from './group-commit.js'
import { type KeyRepository, keyRepository } from './keys.js'
import { idempotencyWindowMs } from './idempotency.js'
import { migrate } from './migrations.js'
import { type OrderRepository, orderRepository } from './orders.js'
import { openOutbox } from './outbox.js'
import { type PetRepository, petRepository } from './pets.js'
import { refuseMissingColumns } from './schema-check.js'
import { openSqlite } from './sqlite.js'
import { type UsageRepository, usageRepository } from './usage.js'
import { type WebhookRepository, webhookRepository } from './webhooks.js'

export { DatabaseConfigError } from './database.js'

/** Everything the service keeps, behind repositories that hide the database. */
export interface Storage {
  pets: PetRepository
  /** the categories pets are grouped under (version 2) */
  categories: CategoryRepository
  keys: KeyRepository
  orders: OrderRepository
  /** webhook subscriptions (the changes above record their events for them) */
  webhooks: WebhookRepository
  /** the deliveries of those events still to make */
  deliveries: DeliveryQueue
  /** who calls the deprecated and non-stable operations */
  usage: UsageRepository
  /** what it is and where, without credentials */
  description: string
  /** resolves when the database answers a trivial statement (readiness) */
  ping(): Promise<void>
  /** what an operator watches, read when metrics are scraped */
  stats(): StorageStats
  close(): Promise<void>
}

export interface StorageStats {
  /** PostgreSQL: its connection pool */
  pool?: PoolStats
  /** SQLite: creates grouped into commits (one connection, used synchronously: no pool) */
  commits?: GroupCommitStats
}

/** The database of `target`, open: SQLite in this process, or a PostgreSQL pool. */
export async function openDatabase(target: DatabaseTarget, options: DatabaseOptions): Promise<Database> {
  const timeoutMs = options.timeoutMs ?? databaseTimeoutMs
  if (target.dialect === 'sqlite') return openSqlite(target.file, timeoutMs)
  // pg, and what it loads as it loads (Node's fetch), only for a server that uses it
  const { openPostgres } = await import('./postgres.js')
  return openPostgres(target.url, { poolSize: options.poolSize, readConnections: options.readConnections ?? databaseReadConnections }, timeoutMs)
}

/** Opens the database named by `url` and checks that it answers: a wrong host, role or
 * database name is reported here, at startup, not at the first request. */
export async function connect(url: string, options: DatabaseOptions): Promise<Database> {
  const database = await openDatabase(parseDatabaseUrl(url), options)
  try {
    await database.sql.row('select 1')
  } catch (error) {
    await database.close()
    const cause = (error as Error).cause ?? error
    throw new DatabaseConfigError(`cannot connect to ${database.description}: ${(cause as Error).message}`)
  }
  return database
}

export interface StorageOptions extends DatabaseOptions {
  /** how long an event's delivery is tried, in ms (default: WEBHOOK_RETRY_PERIOD_S's) */
  webhookRetryPeriodMs?: number
  /** how long an Idempotency-Key is remembered, in ms (the server gives the contract's; the
   * default, for tools that place no orders, is held equal to it by test/orders.test.ts) */
  idempotencyWindowMs?: number
}

const defaultRetryPeriodMs = configSchema.properties.WEBHOOK_RETRY_PERIOD_S.default * 1000

/** Opens the database named by `url`, checks it answers, brings its schema up to date, and
 * checks that it has every column the repositories name. */
export async function openStorage(url: string, options: StorageOptions): Promise<Storage> {
  const database = await connect(url, options)
  try {
    await migrate(database)
    await refuseMissingColumns(database.sql, database.dialect)
  } catch (error) {
    await database.close()
    throw error
  }
  const { sql, dialect, description } = database
  const keyChanges = database.watchKeyChanges()
  const keys = keyRepository(sql, dialect, keyChanges)
  const retryPeriodMs = options.webhookRetryPeriodMs ?? defaultRetryPeriodMs
  const outbox = await openOutbox(sql, dialect, retryPeriodMs)
  const pets = petRepository(sql, dialect, outbox)
  const orders = orderRepository(sql, dialect, outbox, options.idempotencyWindowMs ?? idempotencyWindowMs)
  const usage = usageRepository(sql, dialect)
  return {
    pets,
    categories: categoryRepository(sql),
    keys,
    orders,
    webhooks: webhookRepository(sql, dialect, outbox, retryPeriodMs),
    deliveries: deliveryQueue(sql, dialect),
    usage,
    description,
    ping: async () => void (await sql.row('select 1')),
    stats: () => ({ pool: database.poolStats?.(), commits: pets.commitStats?.() }),
    async close() {
      orders.close()
      await keys.close()
      await usage.close()
      await keyChanges.close()
      await database.close()
    },
  }
}
