/**
 * npm run migrate: brings the schema of the database at DATABASE_URL up to date, as the server
 * does when it starts. Safe to run beside running servers and other migrate runs: migrations
 * are applied under a lock, in one transaction, each exactly once.
 */
import { isEntry, type Io, processIo } from '../src/core/command-io.js'
import { loadConfig } from '../src/core/config.js'
import { reportFailure } from '../src/core/failure.js'
import { connect } from '../src/storage/index.js'
import { migrate } from '../src/storage/migrations.js'

/** `npm run migrate` (it takes no arguments), on the database of `io.env`'s DATABASE_URL: its
 * exit status, 0 up to date, 1 failed (said on one line when it is a setting's or the database's). */
export async function main(_args: string[], io: Io): Promise<number> {
  try {
    const config = loadConfig(io.env)
    const database = await connect(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE, timeoutMs: config.DATABASE_TIMEOUT_MS })
    try {
      const applied = await migrate(database)
      for (const name of applied) io.stdout(`applied ${name}`)
      io.stdout(`${database.description} is up to date${applied.length === 0 ? '; nothing to apply' : ''}`)
    } finally {
      // every pool the database holds (the requests' and the migrations'): an idle connection
      // left open would keep the process alive until it times out
      await database.close()
    }
    return 0
  } catch (error) {
    reportFailure('petstore migrate', error as Error, io.stderr)
    return 1
  }
}

if (isEntry(import.meta.filename)) process.exitCode = await main(process.argv.slice(2), processIo)
