import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { issueFirstKey } from './auth/first-key.js'
import { loadConfig } from './config.js'
import { reportFailure } from './failure.js'

/** The process: configuration, listening, first key, graceful shutdown. Nothing else. */
async function main() {
  const config = loadConfig()
  const app = await buildApp(config)
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an error')
    else app.log.info({ signal }, 'shutting down')
    await app.close()
  })
  const url = await app.listen({ port: config.PORT, host: config.HOST })
  // After listening: the key is shown with the URL, and is not created for a server that failed to start.
  if (config.API_KEYS.length === 0) await issueFirstKey(app, url)
  app.log.info({ url, storage: app.storage.description }, `listening on ${url}`)
}

main().catch((error: Error) => {
  reportFailure('petstore', error)
  process.exit(1)
})
