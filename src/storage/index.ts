import { sql } from 'kysely'
import { type Database, DatabaseConfigError, type DatabaseOptions, openDatabase, parseDatabaseUrl } from './database.js'
import { type KeyRepository, keyRepository } from './keys.js'
import { migrate } from './migrations.js'
import { type PetRepository, petRepository } from './pets.js'

export { DatabaseConfigError } from './database.js'

/** Everything the service keeps, behind repositories that hide the database. */
export interface Storage {
  pets: PetRepository
  keys: KeyRepository
  /** what it is and where, without credentials */
  description: string
  close(): Promise<void>
}

/** Opens the database named by `url`, checks it answers, and brings its schema up to date. */
export async function openStorage(url: string, options: DatabaseOptions): Promise<Storage> {
  const database: Database = openDatabase(parseDatabaseUrl(url), options)
  const { db, dialect, description } = database
  try {
    await sql`select 1`.execute(db).catch((error: Error) => {
      throw new DatabaseConfigError(`cannot reach ${description}: ${error.message}`)
    })
    await migrate(database)
  } catch (error) {
    await db.destroy()
    throw error
  }
  return {
    pets: petRepository(db),
    keys: keyRepository(db, dialect),
    description,
    close: () => db.destroy(),
  }
}
