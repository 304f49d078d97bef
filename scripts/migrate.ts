/**
 * npm run migrate: brings the schema of the database at DATABASE_URL up to date, as the server
 * does when it starts. Safe to run beside running servers and other migrate runs: migrations
 * are applied under a lock, in one transaction, each exactly once.
 */
import { loadConfig } from '../src/core/config.js'
import { reportFailure } from '../src/core/failure.js'
import { connect } from '../src/storage/index.js'
import { migrate } from '../src/storage/migrations.js'

async function main() {
  const config = loadConfig()
  const database = await connect(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE, timeoutMs: config.DATABASE_TIMEOUT_MS })
  try {
    const applied = await migrate(database)
    for (const name of applied) console.log(`applied ${name}`)
    console.log(`${database.description} is up to date${applied.length === 0 ? '; nothing to apply' : ''}`)
  } finally {
    // every pool the database holds (the requests' and the migrations'): an idle connection
    // left open would keep the process alive until it times out
    await database.close()
  }
}

main().catch((error: Error) => {
  reportFailure('petstore migrate', error)
  process.exit(1)
})
