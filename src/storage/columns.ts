import { type Select, select } from './sql.js'

/**
 * A property of an API type, as its table stores it: by the name of its column, when the column
 * holds the value as it is; or with the conversions, when it holds it in another form (an ISO
 * date kept as Unix milliseconds).
 */
export type Column<Value> =
  | string
  | {
      name: string
      // (methods: each conversion may take the narrower stored type it knows)
      read(stored: unknown): Value
      write(value: Value): unknown
    }

/**
 * Every property of `T`, optional ones included, with its column. A property the spec adds to a
 * generated type and the map lacks is a compile error where the map is written: the storage code
 * to change (and, with it, the migration that adds the column). Columns of the table that the
 * API does not show are simply not in the map.
 */
export type Columns<T> = { [K in keyof T]-?: Column<Exclude<T[K], undefined>> }

/** What a row is written from: every property of T but the id, which the database numbers. */
export type Written<T> = Omit<T, 'id'>

/** The columns of a table that hold the properties of an API type, by property. A start
 * checks them against the spec and the database (schema-check.ts). */
export interface ColumnNames {
  table: string
  /** each property's column */
  byProperty: Readonly<Record<string, string>>
  /** the properties read from other tables (a pet's category name), not columns of this one */
  computed: ReadonlySet<string>
  /** the properties an API shows made of stored ones (a pet's `category`, of its id and name) */
  shown: ReadonlySet<string>
  /** the columns, in the order of the map, then the computed ones: a select list */
  list: string
  /** `list` with a NULL in place of each computed property: rows of the same shape, read
   * without the other tables */
  ownList: string
}

/** The columns of `table` that hold T: for a table whose rows are made into T by hand. */
export function columnNames<T>(table: string, columns: Columns<T>): ColumnNames {
  const byProperty = Object.fromEntries(Object.entries(columns as Record<string, Column<unknown>>).map(([key, column]) => [key, nameOf(column)]))
  const list = Object.values(byProperty).join(', ')
  return { table, byProperty, computed: new Set(), shown: new Set(), list, ownList: list }
}

/** What a table's rows hold beyond its own columns: properties read by a select expression of
 * their own (`computed`: a subquery on another table), and those an API shows made of stored
 * ones (`shown`, by the handlers). */
export interface Beyond<Computed extends PropertyKey> {
  computed?: Record<Computed, string>
  shown?: readonly string[]
}

const nameOf = (column: Column<unknown>) => (typeof column === 'string' ? column : column.name)

/** The SQL of a table that stores T, derived from its Columns, and T from its rows and back. */
export interface Mapping<T> extends ColumnNames {
  /** T from the values of a row selected with `list`; a NULL leaves its (optional) property out */
  read: (values: unknown[]) => T
  /** `insert ... returning list`, as a Select: the written properties are $1, $2…, and
   * `extra` columns the API does not show (an owner, say) follow them; with `onlyIf`, a
   * condition, the row is inserted (and returned) only when it holds */
  insert(extra?: readonly string[], onlyIf?: string): Select<T>
  /** the parameters of `insert` for `row`, before those of the extra columns */
  values(row: Written<T>): unknown[]
  /** `row` as its table holds it, by column (a computed property by its own name): a form that
   * no new major version of the API changes, as an event waiting in the outbox is kept */
  stored(row: T): StoredRow
  /** T from its stored form */
  fromStored(stored: StoredRow): T
}

/** A row as its table holds it, by column name: JSON. */
export type StoredRow = Record<string, unknown>

export function mapping<T extends { id: number }, Computed extends keyof T = never>(
  table: string,
  columns: Columns<Omit<T, Computed>>,
  { computed, shown = [] }: Beyond<Computed> = {},
): Mapping<T> {
  const entries: [string, Column<unknown>][] = Object.entries(columns)
  const expressions = Object.entries<string>(computed ?? {})
  const keys = [...entries.map(([key]) => key), ...expressions.map(([key]) => key)]
  const readers = [...entries.map(([, column]) => (typeof column === 'string' ? undefined : column)), ...expressions.map(() => undefined)]
  const written = entries.filter(([key]) => key !== 'id')
  // (in read's order: the columns, then each computed property, stored by its own name)
  const storedAs: [string, Column<unknown>][] = [...entries, ...expressions.map(([key]): [string, Column<unknown>] => [key, key])]
  const own = columnNames(table, columns)
  const names: ColumnNames = {
    ...own,
    computed: new Set(expressions.map(([key]) => key)),
    shown: new Set(shown),
    list: [own.list, ...expressions.map(([, expression]) => expression)].join(', '),
    ownList: [own.list, ...expressions.map(() => 'null')].join(', '),
  }
  const { list } = names
  const read = reader<T>(keys, readers)
  return {
    ...names,
    read,
    insert(extra = [], onlyIf) {
      const into = [...written.map(([, column]) => nameOf(column)), ...extra]
      const values = into.map((_, i) => `$${i + 1}`).join(', ')
      const rows = onlyIf === undefined ? `values (${values})` : `select ${values} where ${onlyIf}`
      return select(`insert into ${table} (${into.join(', ')}) ${rows} returning ${list}`, read)
    },
    values: (row) =>
      written.map(([key, column]) => {
        const value = (row as Record<string, unknown>)[key]
        if (value === undefined) return null
        return typeof column === 'string' ? value : column.write(value)
      }),
    stored(row) {
      const stored: StoredRow = {}
      for (const [key, column] of storedAs) {
        const value = (row as Record<string, unknown>)[key]
        if (value !== undefined) stored[nameOf(column)] = typeof column === 'string' ? value : column.write(value)
      }
      return stored
    },
    fromStored: (stored) => read(storedAs.map(([, column]) => stored[nameOf(column)] ?? null)),
  }
}

/**
 * T from the values of a row, as a function written for the map: `row.name = values[1]` for
 * each property, in order, so that every row of a table gets the same shape by the same stores.
 * (A loop storing by computed names costs several times more per row: a page of 20 rows is
 * read at each listPets.) The names are those of the map in this source, as JSON strings.
 */
function reader<T>(keys: readonly string[], readers: readonly ({ read(stored: unknown): unknown } | undefined)[]): (values: unknown[]) => T {
  const stores = keys.map((key, i) => {
    const value = readers[i] === undefined ? `values[${i}]` : `readers[${i}].read(values[${i}])`
    return `if (values[${i}] !== null) row[${JSON.stringify(key)}] = ${value}`
  })
  // a NULL leaves its (optional) property out
  const body = `const row = {}\n${stores.join('\n')}\nreturn row`
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the reader is written as code on purpose (see above); its text is made of the map in this source alone
  const made = new Function('readers', `return function read(values) {\n${body}\n}`) as (of: typeof readers) => (values: unknown[]) => T
  return made(readers)
}
