/**
 * `npm run -s keys -- usage [--json]`: who still calls the deprecated and non-stable operations
 * (ops/usage.ts), one line per key and operation. A key of API_KEYS, which the store does
 * not hold, is shown by its principal (`env:` and 12 hex digits of its SHA-256), never the key.
 */
import { storedKeyIdOf, storedKeyPrincipal } from '../src/auth/access.js'
import { loadContracts } from '../src/contract/load.js'
import type { LineWriter } from '../src/core/command-io.js'
import type { Storage } from '../src/repositories.js'

export interface UsageLine {
  /** the key's id, or the principal of an API_KEYS key */
  key: string
  name: string
  /** the major version the calls were made through */
  version: number
  operation: string
  /** as that version's document says now: deprecated, experimental, beta, stable, or removed */
  lifecycle: string
  calls: number
  firstCallAt: string
  lastCallAt: string
}

export async function usageLines(storage: Storage): Promise<UsageLine[]> {
  const contracts = new Map(loadContracts().map((contract) => [contract.version[0], contract]))
  const names = new Map((await storage.keys.list()).map((key) => [storedKeyPrincipal(key.id), key.name]))
  // stored keys by id, then the API_KEYS ones (the store lists them by principal, as text)
  const order = (principal: string) => storedKeyIdOf(principal) ?? Number.POSITIVE_INFINITY
  const records = (await storage.usage.list()).sort((a, b) => order(a.principal) - order(b.principal) || a.principal.localeCompare(b.principal))
  return records.map((record) => {
    const operation = contracts.get(record.version)?.operations.get(record.operation)
    const id = storedKeyIdOf(record.principal)
    return {
      key: id === undefined ? record.principal : String(id),
      name: id === undefined ? '(API_KEYS)' : (names.get(record.principal) ?? '(deleted)'),
      version: record.version,
      operation: record.operation,
      lifecycle: operation === undefined ? 'removed' : (operation.lifecycle.label ?? 'stable'),
      calls: record.calls,
      firstCallAt: record.firstCallAt.toISOString(),
      lastCallAt: record.lastCallAt.toISOString(),
    }
  })
}

/** The report, on `stdout`: a table (rows made by `table`), or the lines as JSON. */
export async function usageCommand(storage: Storage, json: boolean, table: (rows: string[][]) => string, stdout: LineWriter): Promise<number> {
  const lines = await usageLines(storage)
  if (json) stdout(JSON.stringify(lines, null, 2))
  else if (lines.length === 0) stdout('No calls to deprecated, experimental or beta operations recorded yet.')
  else {
    const second = (iso: string) => iso.replace(/\.\d+Z$/, 'Z')
    stdout(
      table([
        ['key', 'name', 'version', 'operation', 'lifecycle', 'calls', 'last call'],
        ...lines.map((line) => [line.key, line.name, `v${line.version}`, line.operation, line.lifecycle, String(line.calls), second(line.lastCallAt)]),
      ]),
    )
  }
  return 0
}
