/**
 * The repositories of every feature, composed over one open database: what the service keeps
 * (`app.storage`). Each feature folder holds its repository, column map and types; storage/
 * opens the database (engines, SQL, migrations, the column check) and imports no feature. This
 * module, above both, is the one place that knows them all: it opens the database with the
 * features' column maps, builds each repository on it, and closes them in order.
 */
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type KeyRepository, keyRepository } from './auth/keys.js'
import { type CategoryRepository, categoryColumns, categoryRepository } from './categories/repository.js'
import { configSchema } from './core/config.js'
import { openOutbox, type TraceNow } from './events/outbox.js'
import { type UsageRepository, usageRepository } from './ops/usage.js'
import { idempotencyWindowMs } from './orders/idempotency.js'
import { type OrderRepository, orderColumns, orderRepository } from './orders/repository.js'
import { type PetRepository, petColumns, petRepository } from './pets/repository.js'
import type { DatabaseOptions } from './storage/database.js'
import type { KeepContext } from './storage/group-commit.js'
import { openMigrated, type StorageStats } from './storage/index.js'
import { registerStorageMetrics } from './storage/metrics.js'
import { foldEndedWriters, type PartRevisions, partRevisions, tagSecret } from './storage/revision.js'
import type { Stored } from './storage/schema-check.js'
import { type StatementWatcher, watchedSql } from './storage/watched-sql.js'
import { type DeliveryQueue, deliveryQueue } from './webhooks/deliveries.js'
import { type WebhookRepository, webhookColumns, webhookRepository } from './webhooks/repository.js'

declare module 'fastify' {
  interface FastifyInstance {
    storage: Storage
  }
}

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
  /** the revisions of parts of the store now: each changes with every change of what its readers see (storage/revision.ts) */
  revisions: PartRevisions
  /** the key that pages' tags are MACs with, the same for every instance on the database */
  tagSecret: string
  /** what it is and where, without credentials */
  description: string
  /** resolves when the database answers a trivial statement (readiness) */
  ping(): Promise<void>
  /** what an operator watches, read when metrics are scraped */
  stats: () => StorageStats
  close(): Promise<void>
}

/** The schemas of the served documents that the repositories store, each with its column map
 * and where that map is written: checked at start against the contract (refuseUnmapped) and
 * the database (storage/schema-check.ts). */
export const storedSchemas: readonly Stored[] = [
  { schemas: ['NewPet', 'Pet'], columns: petColumns, map: 'petColumns', file: 'src/pets/repository.ts' },
  { schemas: ['NewCategory', 'Category'], columns: categoryColumns, map: 'categoryColumns', file: 'src/categories/repository.ts' },
  { schemas: ['NewOrder', 'Order', 'OrderUpdate'], columns: orderColumns, map: 'orderColumns', file: 'src/orders/repository.ts' },
  { schemas: ['NewWebhook', 'Webhook'], columns: webhookColumns, map: 'webhookColumns', file: 'src/webhooks/repository.ts' },
]

export interface StorageOptions extends DatabaseOptions {
  /** how long an event's delivery is tried, in ms (default: WEBHOOK_RETRY_PERIOD_S's) */
  webhookRetryPeriodMs?: number
  /** how long an Idempotency-Key is remembered, in ms (the server gives the contract's; the
   * default, for tools that place no orders, is held equal to it by test/orders.test.ts) */
  idempotencyWindowMs?: number
  /** told of each statement the repositories make (tracing on: ops/statement-spans.ts) */
  watch?: StatementWatcher
  /** tracing on: the trace an event recorded now keeps, and what keeps a write queued for a
   * shared commit in its request's context (so that its events keep its own trace) */
  trace?: { now: TraceNow; keep: KeepContext }
}

const defaultRetryPeriodMs = configSchema.properties.WEBHOOK_RETRY_PERIOD_S.default * 1000

/** Opens the database named by `url`, checks it answers, brings its schema up to date, and
 * checks that it has every column the repositories name. */
export async function openStorage(url: string, options: StorageOptions): Promise<Storage> {
  const database = await openMigrated(url, options, storedSchemas)
  const { dialect, description } = database
  const sql = options.watch === undefined ? database.sql : watchedSql(database.sql, dialect, options.watch)
  const keyChanges = database.watchKeyChanges()
  const keys = keyRepository(sql, dialect, keyChanges)
  const retryPeriodMs = options.webhookRetryPeriodMs ?? defaultRetryPeriodMs
  const outbox = await openOutbox(sql, dialect, retryPeriodMs, options.trace?.now)
  const pets = petRepository(sql, dialect, outbox, options.trace?.keep)
  const orders = orderRepository(sql, dialect, outbox, options.idempotencyWindowMs ?? idempotencyWindowMs, options.trace?.keep)
  const usage = usageRepository(sql, dialect)
  if (dialect === 'postgres') {
    // (the revisions' rows of the connections that ended, before this instance's: folded now,
    // and by each connection the pool opens from now on, see storage/revision.ts)
    await sql.run(foldEndedWriters)
    database.everyNewConnection!(foldEndedWriters)
  }
  return {
    pets,
    categories: categoryRepository(sql),
    keys,
    orders,
    webhooks: webhookRepository(sql, dialect, outbox, retryPeriodMs),
    deliveries: deliveryQueue(sql, dialect),
    usage,
    revisions: partRevisions(sql, dialect),
    tagSecret: await tagSecret(sql),
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

/** What the service keeps, open already (a store that cannot open stops the start before the
 * app is built): its repositories for every concern, its metrics, and its close with the app's
 * (the last onClose to run: what writes to it stops first). */
async function storagePlugin(app: FastifyInstance, { storage }: { storage: Storage }) {
  app.decorate('storage', storage)
  registerStorageMetrics(app.metrics.registry, storage.stats)
  app.addHook('onClose', () => storage.close())
}

export default fp(storagePlugin, { name: 'storage', fastify: '5.x', dependencies: ['metrics'] })
