/**
 * The revisions of the parts of the store that pages show: numbers that grow in the transaction
 * of every change of a part, kept by database triggers (migration 0017, which says on which
 * tables), whatever makes the change. A read that asks its part's revision before reading its
 * page knows a validator of the page before the page is read (src/http/conditional.ts); a part
 * moves with what its readers can see and nothing else, so that no key learns of another's
 * changes. On PostgreSQL a part's revision is the sum of its rows (one per connection that wrote
 * it, and one that the rows of ended connections are folded into), on SQLite its one row.
 */
import { andThen, type MaybePromise } from '../core/maybe-async.js'
import type { Dialect } from './database.js'
import { type Statements, select } from './sql.js'

/** The parts, as migration 0017's triggers name them. */
export const storeParts = {
  /** pets and categories: what every key sees alike */
  catalogue: 'catalogue',
  /** every order, whoever placed it: store staff's view */
  everyOrder: 'orders',
  /** the orders a key placed (its principal) */
  ordersOf: (owner: string) => `orders:${owner}`,
}

/** The revisions of `parts` now, each as text (a sum past 2^53 stays exact; '0' for a part never
 * changed): one statement, outside any transaction. */
export type PartRevisions = (parts: readonly string[]) => MaybePromise<ReadonlyMap<string, string>>

export function partRevisions(statements: Statements, dialect: Dialect): PartRevisions {
  const read = select(
    dialect === 'postgres'
      ? 'select part, sum(revision)::text from page_revisions where part = any($1) group by part'
      : 'select part, revision from page_revisions where part in (select value from json_each($1))',
    ([part, revision]: [string, number | string]) => [part, String(revision)] as const,
  )
  return (parts) =>
    andThen(statements.all(read, [dialect === 'postgres' ? parts : JSON.stringify(parts)]), (rows) => {
      const revisions = new Map(rows)
      for (const part of parts) if (!revisions.has(part)) revisions.set(part, '0')
      return revisions
    })
}

/**
 * PostgreSQL: folds the rows of connections that ended into their part's writer-0 row, in one
 * statement, so that a part's rows stay as many as the connections alive that wrote it, and
 * its sum the same for every reader (the statement's transaction deletes and adds at once). A
 * row whose connection is in a transaction now is skipped, never waited for; folds at once
 * lock writer-0 rows in one order, and no writer takes those. Run as the storage opens and by
 * every connection its pool opens (postgres.ts): a new instance, a pool's new connection.
 */
export const foldEndedWriters = `with ended as (
    delete from page_revisions where (part, writer) in (
      select part, writer from page_revisions
        where writer <> 0 and writer not in (select pid from pg_stat_activity where pid is not null)
        for update skip locked)
    returning part, revision)
  insert into page_revisions (part, writer, revision)
    select part, 0, sum(revision) from ended group by part order by part
    on conflict (part, writer) do update set revision = page_revisions.revision + excluded.revision`

/** The key pages are tagged with (migration 0017 made it): one per database, so that every
 * instance on it tags a page alike. */
export const tagSecret = async (statements: Statements): Promise<string> => (await statements.row<{ secret: string }>('select secret from tag_secret'))!.secret
