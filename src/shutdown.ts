import { Server } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { closeAfterAnswersInFlight } from './http/connections.js'

/** After the signal, connections idle at that moment get this long to send a request already
 * on its way (it is answered) before they are closed: long enough for a server on a busy
 * machine to read it (at 0.5 s, a loaded 2-core machine reset some). */
const settleMs = 2_000

/** Requests still unfinished this long before the grace period ends are cut. */
const cutBeforeEndMs = 1_000

/** The signals that ask the server to stop: it drains. */
export const stopSignals = ['SIGTERM', 'SIGINT'] as const
export type StopSignal = (typeof stopSignals)[number]

/**
 * A stop signal this soon after the first is the same request, delivered twice: under `npm
 * start`, one Ctrl-C reaches the server from the terminal (which signals the whole foreground
 * process group) and again from npm (which forwards it to its script), a few milliseconds
 * apart. Long enough for a busy machine, short enough that a person who presses again means it.
 */
export const repeatWithinMs = 1_000

/**
 * Calls `stop` on the first SIGTERM or SIGINT, and `force` on one that comes `repeatWithinMs`
 * or more after it (someone who will not wait for the drain); a signal in between is the
 * first one again, and ignored.
 */
export function onStopSignals({ stop, force }: { stop: (signal: StopSignal) => void; force: (signal: StopSignal) => void }): void {
  let firstAt: number | undefined
  for (const signal of stopSignals) {
    process.on(signal, () => {
      if (firstAt === undefined) {
        firstAt = Date.now()
        stop(signal)
      } else if (Date.now() - firstAt >= repeatWithinMs) force(signal)
    })
  }
}

/**
 * Stops the service within `graceMs` without dropping what it accepted: no new connection is
 * accepted; every answer from now on says `Connection: close`, those of the requests in flight
 * too, so that each connection ends with its answer; connections idle after
 * `settleMs` are closed; requests in flight are answered; those that have not finished shortly
 * before the grace period ends (a client stalled mid-request) are cut. Then the app and its
 * storage close.
 */
export async function drain(app: FastifyInstance, graceMs: number): Promise<void> {
  app.draining = true
  closeAfterAnswersInFlight(app.connections)
  const server = app.server
  if (server.listening) {
    // Node's HTTP close() would also close the idle connections at once, resetting any whose
    // next request is already on its way: the listener is closed alone, first.
    const closed = new Promise<void>((resolve) => Server.prototype.close.call(server, () => resolve()))
    const settle = setTimeout(() => server.closeIdleConnections(), settleMs)
    const cut = setTimeout(
      () => {
        app.log.warn('cutting the connections whose requests did not finish in the grace period')
        server.closeAllConnections()
      },
      Math.max(graceMs - cutBeforeEndMs, settleMs),
    )
    await closed
    clearTimeout(settle)
    clearTimeout(cut)
  }
  await app.close()
}
