import { ConfigError } from './config.js'
import { DatabaseConfigError } from './storage/index.js'
import { MigrationError } from './storage/migrations.js'

/**
 * How a command reports the failure that ends it: a bad setting or environment (configuration,
 * database, migration, a port that cannot be bound) in one line, `<command>: <message>`;
 * anything else is a bug, reported whole, with its stack.
 */
export function reportFailure(command: string, error: Error): void {
  const known =
    error instanceof ConfigError ||
    error instanceof DatabaseConfigError ||
    error instanceof MigrationError ||
    (error as NodeJS.ErrnoException).syscall === 'listen'
  console.error(known ? `${command}: ${error.message}` : error)
}
