/**
 * The store's revision: a number that grows in the transaction of every change an API read
 * shows, kept by database triggers (migration 0013, which says on which tables and columns),
 * whatever makes the change. A read that asks it before reading its page knows a validator of
 * the page before the page is read (src/http/conditional.ts). On PostgreSQL it is the sum of
 * the counter's rows (one per database connection that wrote), on SQLite its one row.
 */
import { andThen, type MaybePromise } from '../core/maybe-async.js'
import type { Dialect } from './database.js'
import { type Statements, select } from './sql.js'

/** The revision now, as text (a sum past 2^53 stays exact): one statement, outside any transaction. */
export function storeRevision(statements: Statements, dialect: Dialect): () => MaybePromise<string> {
  const text = dialect === 'postgres' ? 'select coalesce(sum(revision), 0)::text from store_revision' : 'select revision from store_revision'
  const read = select(text, ([revision]: [number | string]) => String(revision))
  // (the migration wrote its rows: there is always one)
  return () => andThen(statements.one(read), (revision) => revision!)
}
