import { type LineWriter, processIo } from './command-io.js'
import { OperatorError } from './errors.js'

/** The system calls of listening whose failures a setting causes: a port in use or not
 * allowed, an address not of this host (listen), a host name that does not resolve. */
const listenCalls = new Set(['listen', 'getaddrinfo'])

/**
 * How a command reports the failure that ends it, on `stderr` (the console's by default): a bad
 * setting or environment (configuration, database, migration, a storage that does not fit the
 * contract, a port or host that cannot be had) in one line, `<command>: <message>`;
 * anything else is a bug, reported whole, with its stack.
 */
export function reportFailure(command: string, error: Error, stderr: LineWriter = processIo.stderr): void {
  const known = error instanceof OperatorError || listenCalls.has((error as NodeJS.ErrnoException).syscall ?? '')
  stderr(known ? `${command}: ${error.message}` : error)
}
