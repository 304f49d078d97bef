import type { OpenAPIV3 } from 'openapi-types'
import { OperatorError } from '../core/errors.js'
import type { ColumnNames } from './columns.js'
import type { Dialect } from './database.js'
import type { Statements } from './sql.js'

/**
 * What a start checks before it serves: that the storage keeps every field of the contract, and
 * that the database has every column the storage names. The typecheck says the first, but
 * `npm start` builds without one (esbuild), and would take a field only to drop it; the second,
 * a column mapped before the migration that adds it, would fail every request that reads it.
 * The repositories' maps are given (src/repositories.ts's storedSchemas): storage/ imports no feature.
 */

/** The schemas of a served document that a repository stores, and the map that says where. */
export interface Stored {
  schemas: readonly string[]
  columns: ColumnNames
  /** the map's name and file, as the server team edits them */
  map: string
  file: string
}

/** The contract asks for what the storage does not keep, or the database lacks a column the
 * storage names: the process reports it in one line and exits. */
export class StorageMismatch extends OperatorError {}

/** A served document, as the check names it; `derived`: its schemas that version changes make of
 * the newest version's (an older version's Pet), whose fields come from those changes, not
 * from a column of their own. */
type Served = { file: string; document: OpenAPIV3.Document; derived?: ReadonlySet<string> }

/** Refuses contracts with a field the storage does not keep. */
export function refuseUnmapped(contracts: readonly Served[], stored: readonly Stored[]): void {
  const unmapped = contracts.flatMap((served) => unmappedFields(served, stored))
  if (unmapped.length > 0) throw new StorageMismatch(unmapped.join('\n'))
}

/** Each property of a stored schema that its map lacks, as a line naming the map to add it to. */
export function unmappedFields({ file, document, derived }: Served, stored: readonly Stored[]): string[] {
  const schemas = document.components?.schemas ?? {}
  return stored.flatMap(({ schemas: names, columns, map, file: source }) =>
    names
      .filter((name) => !derived?.has(name))
      .flatMap((name) =>
        Object.keys((schemas[name] as OpenAPIV3.SchemaObject | undefined)?.properties ?? {})
          .filter((property) => !Object.hasOwn(columns.byProperty, property) && !columns.computed.has(property) && !columns.shown.has(property))
          .map((property) => `${file}: ${name}.${property} has no column: map it in ${map} (${source})`),
      ),
  )
}

/** Refuses a database that lacks a column the storage names. */
export async function refuseMissingColumns(sql: Statements, dialect: Dialect, stored: readonly Stored[]): Promise<void> {
  const missing = await missingColumns(sql, dialect, stored)
  if (missing.length > 0) throw new StorageMismatch(missing.join('\n'))
}

/** The columns of the database's tables, `table.column`, on either store. */
const columnsQuery: Record<Dialect, string> = {
  sqlite: "select m.name || '.' || c.name as name from sqlite_master m join pragma_table_info(m.name) c where m.type = 'table'",
  postgres: "select table_name || '.' || column_name as name from information_schema.columns where table_schema = current_schema()",
}

/** Each column that a map names and the database lacks, as a line saying how to add it. */
async function missingColumns(sql: Statements, dialect: Dialect, stored: readonly Stored[]): Promise<string[]> {
  const present = new Set((await sql.rows<{ name: string }>(columnsQuery[dialect])).map(({ name }) => name))
  return stored.flatMap(({ columns: { table, byProperty }, map, file }) =>
    Object.values(byProperty)
      .filter((column) => !present.has(`${table}.${column}`))
      .map(
        (column) =>
          `the database has no column ${table}.${column}, which ${map} (${file}) maps: add it by a migration at the end of migrations() in src/storage/migrations.ts (a start applies it, as npm run migrate does)`,
      ),
  )
}
