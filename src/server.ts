import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import { issueFirstKey } from './auth/first-key.js'
import { loadConfig } from './core/config.js'
import { reportFailure } from './core/failure.js'
import { logDestination } from './ops/log-destination.js'
import { startTracing } from './ops/tracing.js'
import { drain, onStopSignals, stopSignals } from './shutdown.js'

/**
 * Signals that close-with-grace would take for a request to shut down, and that are not: a
 * fault (SIGBUS, SIGSEGV, SIGILL, SIGFPE, SIGABRT, SIGTRAP) must end the process as the kernel
 * meant, with a non-zero status a supervisor restarts it for, never with a clean exit 0;
 * SIGHUP, SIGQUIT and SIGUSR2 keep their default meaning too. Only SIGTERM and SIGINT drain,
 * and onStopSignals, not close-with-grace, listens for them (it tells a repeat from a second
 * request).
 */
const notShutdownSignals = ['SIGHUP', 'SIGQUIT', 'SIGILL', 'SIGTRAP', 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGSEGV', 'SIGUSR2'] as const

/** What the grace period keeps after sending the last spans, for the exit itself. */
const tracingMarginMs = 500

/**
 * Listens, and returns the URL. Fastify logs a line of its own as it listens ("Server listening
 * at", one per interface for 0.0.0.0) and has no option to leave it out: the server's one line,
 * with the URL and the store, comes once the first key is shown. A port or host it cannot have
 * is said in one line that names the variables.
 */
async function listen(app: FastifyInstance, port: number, host: string): Promise<string> {
  await app.ready()
  const level = app.log.level
  app.log.level = 'silent'
  const listening = app.listen({ port, host }).finally(() => (app.log.level = level))
  return listening.catch((error: Error) => {
    throw Object.assign(error, { message: `API listener (HOST, PORT): ${error.message}` })
  })
}

/** The process: configuration, listening, first key, graceful shutdown. Nothing else. */
async function main() {
  const config = loadConfig()
  const log = logDestination(config.LOG_BUFFER_BYTES)
  // (nothing of OpenTelemetry is loaded unless an OTLP endpoint is set: docs/operating.md)
  const tracing = await startTracing()
  const app = await buildApp({ ...config, logger: { stream: log }, tracing })
  log.onDrop(() => app.metrics.logLineDropped())
  const shutdown = closeWithGrace(
    {
      delay: config.SHUTDOWN_GRACE_MS,
      skip: [...notShutdownSignals, ...stopSignals],
      // its own words (the grace period over) go to the log as JSON too
      logger: { error: (message: unknown) => app.log.error(String(message)) },
    },
    async ({ err }) => {
      const start = performance.now()
      if (err) app.log.error({ err }, 'shutting down after an error')
      await drain(app, config.SHUTDOWN_GRACE_MS)
      // the spans still queued are sent, within what is left of the grace period
      await tracing?.shutdown(Math.max(0, config.SHUTDOWN_GRACE_MS - tracingMarginMs - (performance.now() - start)))
    },
  )
  onStopSignals({
    stop(signal) {
      app.log.info({ signal }, 'shutting down')
      void shutdown.close()
    },
    force(signal) {
      app.log.error({ signal }, `second ${signal}, exiting at once`)
      process.exit(1)
    },
  })
  // First, so that a port it cannot have stops the start before the API listens. It closes
  // with the app, after the requests in flight are answered.
  if (config.METRICS_PORT !== undefined) {
    const metricsUrl = await app.metrics.listen({ port: config.METRICS_PORT, host: config.METRICS_HOST })
    app.log.info({ metricsUrl }, `metrics at ${metricsUrl}`)
  }
  const url = await listen(app, config.PORT, config.HOST)
  // After listening: the key is shown with the URL, and is not created for a server that failed to start.
  if (config.API_KEYS.length === 0) await issueFirstKey(app, url)
  app.log.info({ url, storage: app.storage.description }, `listening on ${url}`)
}

main().catch((error: Error) => {
  reportFailure('petstore', error)
  process.exit(1)
})
