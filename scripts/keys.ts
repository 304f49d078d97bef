/**
 * npm run -s keys -- create --name NAME [--role ROLE]... | list | revoke ID | set-roles ID --role ROLE... | roles | usage [--json]
 *
 * Manages the API keys kept in the database of DATABASE_URL (SQLite or PostgreSQL), whose
 * schema it brings up to date first. A key is shown once, when created: the store keeps only
 * its SHA-256. Servers cache the keys they have seen, and drop the cache when another process
 * changes the keys (PRAGMA data_version on SQLite, LISTEN/NOTIFY on PostgreSQL), so a
 * revocation, or a change of roles, holds from the next request on, on every instance. The
 * roles are those of openapi.yaml (x-roles of its bearer scheme).
 */
import { parseArgs } from 'node:util'
import { isEntry, type Io, processIo } from '../src/core/command-io.js'
import { loadConfig } from '../src/core/config.js'
import { loadContract, newestSpecPath } from '../src/contract/load.js'
import { reportFailure } from '../src/core/failure.js'
import { openStorage, type Storage } from '../src/repositories.js'
import type { ApiKeyRecord, KeyRepository } from '../src/auth/keys.js'
import { usageCommand } from './usage-report.js'

const usage = `Usage: npm run -s keys -- <command>

Commands:
  create --name NAME [--role ROLE]...
                      issue a key holding these roles (one --role each; without any,
                      every role given by default); prints it once, alone on the last line
  list                all keys: id, name, prefix, roles, created, last used, revoked
  revoke ID           refuse the key from the next request on, on every instance
  set-roles ID --role ROLE...
                      the key holds these roles instead, from the next request on, on
                      every instance
  roles               the roles a key may hold, and which are given by default
  usage [--json]      who calls the deprecated and non-stable operations: per key and
                      operation, its lifecycle, the calls and the last one
  help                this text

The keys are kept in the database of DATABASE_URL (default sqlite:./data/petstore.db).

Exit status: 0 done; 1 failed, including revoke or set-roles of an unknown or a revoked
key; 2 a usage error (an unknown role among them).`

/** A command line this script cannot follow: it answers with the usage and exit status 2. */
class UsageError extends Error {}

/** A command, ready to run against the store, writing where `io` says; it resolves to the exit status. */
type Command = (keys: KeyRepository, storage: Storage, io: Io) => Promise<number>

/** The roles of openapi.yaml: what --role may name. */
// (the newest version's catalogue: an older one's roles are among them)
const roles = loadContract(newestSpecPath).roles

function parseCommand(args: string[]): Command | 'help' | 'roles' {
  let parsed
  try {
    parsed = parseArgs({
      args,
      options: { name: { type: 'string' }, role: { type: 'string', multiple: true }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
    })
  } catch (error) {
    // an unknown option, or --name without a value
    throw new UsageError((error as Error).message)
  }
  const { name, role, json, help } = parsed.values
  const [command, ...operands] = parsed.positionals
  if (help || command === 'help') return 'help'
  if (command === undefined) throw new UsageError('no command given')
  if (!['create', 'list', 'revoke', 'set-roles', 'roles', 'usage'].includes(command)) throw new UsageError(`unknown command ${JSON.stringify(command)}`)
  if (name !== undefined && command !== 'create') throw new UsageError('--name goes with create only')
  if (role !== undefined && command !== 'create' && command !== 'set-roles') throw new UsageError('--role goes with create and set-roles only')
  if (json !== undefined && command !== 'usage') throw new UsageError('--json goes with usage only')
  const takesId = command === 'revoke' || command === 'set-roles'
  if (operands.length !== (takesId ? 1 : 0)) throw new UsageError(takesId ? `${command} takes one ID` : `${command} takes no arguments`)
  const unknown = roles.unknown(role ?? [])
  if (unknown.length > 0) {
    throw new UsageError(`unknown role ${unknown.map((name) => JSON.stringify(name)).join(', ')}: the roles are ${[...roles.roles.keys()].join(', ')}`)
  }

  if (command === 'list') return list
  if (command === 'roles') return 'roles'
  if (command === 'usage') return (_, storage, io) => usageCommand(storage, json === true, table, io.stdout)
  if (command === 'revoke') return revoke(keyId(operands[0]!))
  if (command === 'set-roles') {
    if (role === undefined) throw new UsageError('set-roles needs --role ROLE, once for each role')
    return setRoles(keyId(operands[0]!), role)
  }
  if (name === undefined) throw new UsageError('create needs --name NAME')
  // a name is read in a table: blanks or control characters would only garble it
  if (name.trim() === '' || /\p{Cc}/u.test(name)) throw new UsageError('--name must be non-empty, without control characters')
  return create(name.trim(), role ?? roles.defaults)
}

function keyId(text: string): number {
  const id = Number(text)
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(id)) throw new UsageError(`ID must be a key's id (a whole number), not ${JSON.stringify(text)}`)
  return id
}

const create =
  (name: string, given: readonly string[]): Command =>
  async (keys, _, io) => {
    const { record, key } = await keys.issue(name, given)
    io.stdout(`Created key ${record.id} "${record.name}" (prefix ${record.prefix}), with the roles ${record.roles.join(', ')}.`)
    io.stdout('Copy it now: it is shown only this once, and the store keeps only a hash of it.')
    // alone on the last line, so that `... create --name ci | tail -n1` is the key
    io.stdout(key)
    return 0
  }

const list: Command = async (keys, _, io) => {
  const records = await keys.list()
  if (records.length === 0) io.stdout('No API keys yet. Create one: npm run -s keys -- create --name NAME')
  else io.stdout(table([['id', 'name', 'prefix', 'roles', 'created', 'last used', 'revoked'], ...records.map(columns)]))
  return 0
}

/** The catalogue: each role, whether a key gets it by default, and what it lets a key do. */
function listRoles(io: Io): number {
  const rows = [...roles.roles].map(([name, role]) => [name, role.default ? 'yes' : 'no', role.description.replace(/\s+/g, ' ').trim()])
  io.stdout(table([['role', 'default', 'lets a key'], ...rows]))
  return 0
}

const setRoles =
  (id: number, given: readonly string[]): Command =>
  async (keys, _, io) => {
    const outcome = await keys.setRoles(id, given)
    if (outcome === 'updated') {
      io.stdout(`Key ${id} holds the roles ${[...new Set(given)].join(', ')}: every instance applies them from the next request on.`)
      return 0
    }
    io.stderr(`petstore keys: ${outcome === 'not found' ? `no key has id ${id}` : `key ${id} is revoked`}`)
    return 1
  }

const revoke =
  (id: number): Command =>
  async (keys, _, io) => {
    const outcome = await keys.revoke(id)
    if (outcome === 'revoked') {
      io.stdout(`Revoked key ${id}: every instance refuses it from the next request on.`)
      return 0
    }
    io.stderr(`petstore keys: ${outcome === 'not found' ? `no key has id ${id}` : `key ${id} was revoked already`}`)
    return 1
  }

/** What `list` shows of a key: never the key, which is not stored, nor its hash. */
const columns = (key: ApiKeyRecord) => [
  String(key.id),
  key.name,
  key.prefix,
  key.roles.join(','),
  timestamp(key.createdAt),
  timestamp(key.lastUsedAt),
  timestamp(key.revokedAt),
]

/** ISO 8601 in UTC, to the second; `-` for a moment that has not come. */
const timestamp = (date: Date | null) => (date === null ? '-' : date.toISOString().replace(/\.\d+Z$/, 'Z'))

/** Rows as left-aligned columns, two spaces apart. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

/** `npm run -s keys -- ...args`, on the database of `io.env`'s DATABASE_URL: its exit status. */
export async function main(args: string[], io: Io): Promise<number> {
  try {
    return await runCommand(args, io)
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`petstore keys: ${error.message}\n\n${usage}`)
      return 2
    }
    reportFailure('petstore keys', error as Error, io.stderr)
    return 1
  }
}

async function runCommand(args: string[], io: Io): Promise<number> {
  const command = parseCommand(args)
  if (command === 'help') {
    io.stdout(usage)
    return 0
  }
  if (command === 'roles') return listRoles(io)
  const config = loadConfig(io.env)
  const storage = await openStorage(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE, timeoutMs: config.DATABASE_TIMEOUT_MS })
  try {
    return await command(storage.keys, storage, io)
  } finally {
    await storage.close()
  }
}

if (isEntry(import.meta.filename)) process.exitCode = await main(process.argv.slice(2), processIo)
