import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { issueFirstKey } from './auth/first-key.js'
import { loadConfig } from './config.js'
import { reportFailure } from './failure.js'
import { logDestination } from './log-destination.js'
import { drain } from './shutdown.js'

/**
 * Signals that close-with-grace would take for a request to shut down, and that are not: a
 * fault (SIGBUS, SIGSEGV, SIGILL, SIGFPE, SIGABRT, SIGTRAP) must end the process as the kernel
 * meant, with a non-zero status a supervisor restarts it for, never with a clean exit 0;
 * SIGHUP, SIGQUIT and SIGUSR2 keep their default meaning too. Only SIGTERM and SIGINT drain.
 */
const notShutdownSignals = ['SIGHUP', 'SIGQUIT', 'SIGILL', 'SIGTRAP', 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGSEGV', 'SIGUSR2'] as const

/** The process: configuration, listening, first key, graceful shutdown. Nothing else. */
async function main() {
  const config = loadConfig()
  const log = logDestination(config.LOG_BUFFER_BYTES)
  const app = await buildApp({ ...config, logger: { stream: log } })
  log.onDrop(() => app.metrics.logLineDropped())
  closeWithGrace(
    {
      delay: config.SHUTDOWN_GRACE_MS,
      skip: [...notShutdownSignals],
      // its own words (a second signal, the grace period over) go to the log as JSON too
      logger: { error: (message: unknown) => app.log.error(String(message)) },
    },
    async ({ signal, err }) => {
      if (err) app.log.error({ err }, 'shutting down after an error')
      else app.log.info({ signal }, 'shutting down')
      await drain(app, config.SHUTDOWN_GRACE_MS)
    },
  )
  // First, so that a port it cannot have stops the start before the API listens. It closes
  // with the app, after the requests in flight are answered.
  if (config.METRICS_PORT !== undefined) {
    const metricsUrl = await app.metrics.listen({ port: config.METRICS_PORT, host: config.METRICS_HOST })
    app.log.info({ metricsUrl }, `metrics at ${metricsUrl}`)
  }
  const url = await app.listen({ port: config.PORT, host: config.HOST })
  // After listening: the key is shown with the URL, and is not created for a server that failed to start.
  if (config.API_KEYS.length === 0) await issueFirstKey(app, url)
  app.log.info({ url, storage: app.storage.description }, `listening on ${url}`)
}

main().catch((error: Error) => {
  reportFailure('petstore', error)
  process.exit(1)
})
