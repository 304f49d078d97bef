import type { MaybePromise } from '../core/maybe-async.js'
import type { Dialect } from './database.js'
import type { Select, Sql, Statements } from './sql.js'

/**
 * Told of each statement as it starts, with its dialect and text (placeholders, never values):
 * returns what to call when it ends (with its error, if it failed), or undefined when the
 * statement is not watched (no request's span is active).
 */
export type StatementWatcher = (dialect: Dialect, text: string) => ((error?: unknown) => void) | undefined

/** `sql` with every statement told to `watch`: the one SQL layer both engines go through, so
 * one wrapper serves SQLite and PostgreSQL alike. A statement answered at once is watched at once. */
export function watchedSql(sql: Sql, dialect: Dialect, watch: StatementWatcher): Sql {
  const watched = <Args extends [unknown, (readonly unknown[])?], R>(statement: (...args: Args) => MaybePromise<R>, textOf: (first: Args[0]) => string) =>
    ((...args: Args): MaybePromise<R> => {
      const end = watch(dialect, textOf(args[0]))
      if (end === undefined) return statement(...args)
      let result: MaybePromise<R>
      try {
        result = statement(...args)
      } catch (error) {
        end(error)
        throw error
      }
      if (!(result instanceof Promise)) {
        end()
        return result
      }
      return result.then(
        (value) => {
          end()
          return value
        },
        (error: unknown) => {
          end(error)
          throw error
        },
      )
    }) as never
  const text = (text: unknown) => text as string
  const selectText = (select: unknown) => (select as Select<unknown>).text
  const statements = (of: Statements): Statements => ({
    rows: watched(of.rows.bind(of), text),
    row: watched(of.row.bind(of), text),
    run: watched(of.run.bind(of), text),
    all: watched(of.all.bind(of), selectText),
    one: watched(of.one.bind(of), selectText),
  })
  return { ...statements(sql), transaction: (work) => sql.transaction((tx) => work(statements(tx))) }
}
