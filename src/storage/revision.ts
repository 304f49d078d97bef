/**
 * The store's revision: a number that grows in the transaction of every change an API read
 * shows, kept by database triggers (migration 0013), whatever makes the change. A read that asks
 * it before reading its page knows a validator of the page before the page is read
 * (src/http/conditional.ts).
 */
import { andThen, type MaybePromise } from '../core/maybe-async.js'
import type { Dialect } from './database.js'
import { type Statements, select } from './sql.js'

/** The tables whose rows API reads show, and the columns of each whose change they show (all
 * where undefined). Not the internal ones: outbox events (a delivery shows its event, written
 * with it and never changed), usage, rate limits, keys (a key's view is the tag's own part),
 * idempotency keys; nor a delivery's lease, which its reads do not show and which changes at
 * every claim. */
export const revisedTables: Readonly<Record<string, readonly string[] | undefined>> = {
  pets: undefined,
  categories: undefined,
  orders: undefined,
  webhook_subscriptions: undefined,
  webhook_deliveries: ['subscription_id', 'event_id', 'status', 'attempts', 'next_attempt_at', 'give_up_at', 'last_status', 'last_error', 'created_at', 'finished_at'],
}

/** PostgreSQL: the counter's rows. A writer bumps the row of its connection (its backend's pid
 * modulo this), so writers at once on other connections take no lock in common; the revision is
 * their sum. SQLite has one writer at a time, and one row. */
export const revisionShards = 16

/** The revision now, as text (a sum past 2^53 stays exact): one statement, outside any transaction. */
export function storeRevision(statements: Statements, dialect: Dialect): () => MaybePromise<string> {
  const text = dialect === 'postgres' ? 'select sum(revision)::text from store_revision' : 'select revision from store_revision'
  const read = select(text, ([revision]: [number | string]) => String(revision))
  // (the migration wrote its rows: there is always one)
  return () => andThen(statements.one(read), (revision) => revision!)
}
