import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t, { type Test } from 'tap'
import { loadContract } from '../src/contract/load.js'
import { openStorage } from '../src/repositories.js'
import { dataVersionWindowMs } from '../src/storage/key-changes.js'
import { build, call } from './helpers/app.js'
import { freshPostgres, postgresMissing, query } from './helpers/postgres.js'
import { runMain } from './helpers/main.js'
import { run, startServer } from './helpers/processes.js'
import { main } from '../scripts/keys.js'
import { oldestSpecPath } from './helpers/spec.js'

const { defaults } = loadContract(oldestSpecPath).roles
const keyPattern = /^pet_[0-9a-f]{8}_[A-Za-z0-9_-]{32}$/
const isoSecond = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'petstore-keys-')), 'keys.db')
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** `npm run -s keys -- ...args`, its main called here, on the database at `url`. */
const keysCli = (url: string, ...args: string[]) => runMain(main, args, { DATABASE_URL: url })

/** Creates a key with the CLI; returns its id and what it printed on its last line. */
async function createKey(t: Test, url: string, name: string, ...roles: string[]): Promise<{ id: number; key: string }> {
  const { code, stdout, stderr } = await keysCli(url, 'create', '--name', name, ...roles.flatMap((role) => ['--role', role]))
  t.equal(code, 0, stderr)
  const lines = stdout.split('\n')
  t.equal(lines.pop(), '', 'the output ends with a line break')
  const key = lines.at(-1)!
  t.match(key, keyPattern, 'the last line is the key, alone (what `tail -n1` gives)')
  const given = (roles.length > 0 ? roles : defaults).join(', ')
  const created = new RegExp(`^Created key (\\d+) "${name}" \\(prefix ${key.slice(0, 12)}\\), with the roles ${given}\\.\\n.*shown only this once`)
  const id = created.exec(lines.slice(0, -1).join('\n'))?.[1]
  t.ok(id, 'it says the id, the name, the prefix and the roles, and that the key is shown once')
  return { id: Number(id), key }
}

/** The status of GET /v1/pets at a running server, sent with `key`. */
const petsStatus = async (server: { url: string }, key: string) =>
  (await fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(10_000) })).status

/** The rows of `keys list`, cell by cell, a timestamp as `ISO`; checks the header on the way. */
async function listed(t: Test, url: string): Promise<string[][]> {
  const { code, stdout } = await keysCli(url, 'list')
  t.equal(code, 0)
  const [header, ...rows] = stdout.trimEnd().split('\n')
  t.match(header, /^id +name +prefix +roles +created +last used +revoked$/)
  return rows.map((row) => row.split(/ {2,}/).map((cell) => (isoSecond.test(cell) ? 'ISO' : cell)))
}

/** Raw SQL on the test database, beside the store. */
type Sql = (text: string) => Promise<Record<string, unknown>[]>

function sqliteSql(t: Test, file: string): Sql {
  const db = new SQLite(file)
  t.teardown(() => db.close())
  return async (text) => {
    const statement = db.prepare(text)
    if (statement.reader) return statement.all() as Record<string, unknown>[]
    statement.run()
    return []
  }
}

const postgresSql =
  (url: string): Sql =>
  async (text) =>
    (await query(url, text)).rows

// --- the store ----------------------------------------------------------------------------

async function checkKeyStore(t: Test, url: string, sql: Sql) {
  const storage = await openStorage(url, { poolSize: 2 })
  t.teardown(() => storage.close())
  const { keys } = storage
  const start = Date.now()

  t.strictSame(await keys.list(), [], 'a new store holds no key')
  const first = await keys.issueFirst('first start', defaults)
  if (first === undefined) throw new Error('issueFirst issued nothing in an empty store')
  t.match(first.key, keyPattern)
  t.equal(first.record.prefix, first.key.slice(0, 12), 'the prefix is the start of the key')
  t.equal(await keys.issueFirst('again', defaults), undefined, 'issueFirst issues nothing once the store holds a key')
  const ci = await keys.issue('ci', defaults)
  t.not(ci.key, first.key)

  const records = await keys.list()
  t.strictSame(
    records.map(({ id, name, prefix, roles, lastUsedAt, revokedAt }) => ({ id, name, prefix, roles, lastUsedAt, revokedAt })),
    [
      { id: first.record.id, name: 'first start', prefix: first.record.prefix, roles: [...defaults], lastUsedAt: null, revokedAt: null },
      { id: ci.record.id, name: 'ci', prefix: ci.record.prefix, roles: [...defaults], lastUsedAt: null, revokedAt: null },
    ],
  )
  for (const { createdAt } of records) t.ok(createdAt.getTime() >= start && createdAt.getTime() <= Date.now(), 'created now')

  const rows = await sql('select * from api_keys order by id')
  t.strictSame(
    rows.map((row) => row.hash),
    [sha256(first.key), sha256(ci.key)],
    'the store keeps the SHA-256 of each key',
  )
  t.notOk(JSON.stringify(rows).includes(first.key) || JSON.stringify(rows).includes(ci.key), 'and never the key')

  const idOf = async (digest: string) => {
    const grant = await keys.authenticate(digest)
    return grant && Number(grant.principal.replace('key:', ''))
  }
  const rolesOf = async (digest: string) => [...((await keys.authenticate(digest))?.roles ?? [])]
  const lastUsed = async () => (await sql(`select last_used_at from api_keys where id = ${ci.record.id}`))[0]!.last_used_at
  t.equal(await idOf(sha256(ci.key)), ci.record.id, 'an issued key is accepted: its id')
  t.equal(await lastUsed(), null, 'its use is not written on the request path')
  const beforeUse = Date.now()
  t.equal(await idOf(sha256(ci.key)), ci.record.id, 'a second use, from the cache')
  await keys.recordUses()
  t.ok(Number(await lastUsed()) >= beforeUse, 'recordUses writes the last use down')
  const later = Date.now() + 3_600_000
  await sql(`update api_keys set last_used_at = ${later} where id = ${ci.record.id}`)
  t.equal(await idOf(sha256(ci.key)), ci.record.id)
  await keys.recordUses()
  t.equal(Number(await lastUsed()), later, 'a later use written by another instance is kept')
  t.equal((await keys.list())[1]!.lastUsedAt!.getTime(), later, 'list shows the last use')
  await keys.recordUses()
  t.equal(Number(await lastUsed()), later, 'nothing to write: nothing written')

  const altered = ci.key.slice(0, -1) + (ci.key.endsWith('A') ? 'B' : 'A')
  t.equal(await idOf(sha256(altered)), undefined, 'a key one character off is refused')
  t.equal(await idOf(sha256('test-key-3f9a1c')), undefined, 'a key never issued is refused')

  // roles: changed here, at once; by another process, from the next use on
  t.strictSame(await rolesOf(sha256(ci.key)), defaults, 'an issued key holds its roles')
  t.equal(await keys.setRoles(ci.record.id, ['pets:read', 'orders:admin', 'pets:read']), 'updated')
  t.strictSame(await rolesOf(sha256(ci.key)), ['pets:read', 'orders:admin'], 'new roles hold at once, each once')
  t.strictSame((await keys.list())[1]!.roles, ['pets:read', 'orders:admin'])
  t.equal(await keys.setRoles(ci.record.id + 1000, ['pets:read']), 'not found')
  await sql(`update api_keys set roles = 'pets:write' where id = ${ci.record.id}`)
  const changedElsewhere = Date.now()
  let roles = await rolesOf(sha256(ci.key))
  while (roles[0] !== 'pets:write' && Date.now() - changedElsewhere < 2_000) {
    await new Promise((resolve) => setTimeout(resolve, 1))
    roles = await rolesOf(sha256(ci.key))
  }
  t.strictSame(roles, ['pets:write'], `roles changed by another process hold (after ${Date.now() - changedElsewhere} ms)`)

  t.equal(await keys.revoke(ci.record.id), 'revoked')
  t.equal(await keys.setRoles(ci.record.id, ['pets:read']), 'revoked', 'a revoked key gets no roles')
  t.equal(await idOf(sha256(ci.key)), undefined, 'a key revoked here is refused at once')
  const { revokedAt } = (await keys.list())[1]!
  t.ok(revokedAt !== null && revokedAt.getTime() >= start, 'list shows when it was revoked')
  t.equal(await keys.revoke(ci.record.id), 'already revoked')
  t.strictSame((await keys.list())[1]!.revokedAt, revokedAt, 'a second revoke leaves the first date')
  t.equal(await keys.revoke(ci.record.id + 1000), 'not found')
  t.equal(await idOf(sha256(first.key)), first.record.id, 'the other keys still work')

  // Another process (the keys CLI, another instance) revokes a key this store has cached.
  t.equal(await idOf(sha256(first.key)), first.record.id, 'cached')
  await sql(`update api_keys set revoked_at = ${Date.now()} where id = ${first.record.id}`)
  const revokedElsewhere = Date.now()
  let answer = await idOf(sha256(first.key))
  // PostgreSQL's NOTIFY reaches the listener after the commit, in a millisecond or so
  while (answer !== undefined && Date.now() - revokedElsewhere < 2_000) {
    await new Promise((resolve) => setTimeout(resolve, 1))
    answer = await idOf(sha256(first.key))
  }
  t.equal(answer, undefined, `a key revoked by another process is refused (after ${Date.now() - revokedElsewhere} ms)`)
}

t.test('the key store on SQLite: issue, issueFirst, list, authenticate, revoke', async (t) => {
  const file = tempDb()
  await checkKeyStore(t, `sqlite:${file}`, sqliteSql(t, file))
})

t.test('the key store on PostgreSQL: issue, issueFirst, list, authenticate, revoke', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  await checkKeyStore(t, url, postgresSql(url))
})

t.test('issueFirst on PostgreSQL: instances starting together on an empty store issue one key', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  const stores = await Promise.all([1, 2, 3, 4].map(() => openStorage(url, { poolSize: 1 })))
  t.teardown(() => Promise.all(stores.map((storage) => storage.close())))
  const issued = await Promise.all(stores.map((storage, i) => storage.keys.issueFirst(`instance ${i}`, defaults)))
  t.equal(issued.filter((key) => key !== undefined).length, 1)
  t.equal((await stores[0]!.keys.list()).length, 1)
})

t.test('a key store that cannot be read lets no request through, and the CLI reports the error whole', async (t) => {
  const file = tempDb()
  const app = await build(t, { DATABASE_URL: `sqlite:${file}`, API_KEYS: [] })
  const { key } = await app.storage.keys.issue('ci', app.contract.roles.defaults)
  t.equal((await call(t, app, { url: '/v1/pets', key })).status, 200)

  const other = new SQLite(file)
  other.exec('drop table api_keys')
  other.close()
  // a change by another process is seen within the window of its data_version
  await new Promise((resolve) => setTimeout(resolve, dataVersionWindowMs + 1))
  const refused = await call(t, app, { url: '/v1/pets', key })
  t.equal(refused.status, 500)
  t.strictSame(refused.json, { code: 'internal_error', message: 'Internal server error', status: 500 })

  const { code, stderr } = await keysCli(`sqlite:${file}`, 'list')
  t.equal(code, 1)
  t.match(stderr, /no such table: api_keys/)
  t.match(stderr, /\n +at /, 'an unexpected error comes with its stack')
})

// --- the CLI ------------------------------------------------------------------------------

t.test('keys CLI on SQLite: a created key works at once, revoke refuses it at the next request, list shows both', async (t) => {
  const file = tempDb()
  const url = `sqlite:${file}`
  // (one command at a time on the file: in one process, a SQLite transaction waiting for another's
  // write lock would block the very thread that holds it)
  const ci = await createKey(t, url, 'ci')
  const bot = await createKey(t, url, 'deploy bot', 'pets:write')
  const server = await startServer(t, { DATABASE_URL: url, API_KEYS: '' })
  t.equal(await petsStatus(server, ci.key), 200, 'the key works on a running server')
  t.equal(await petsStatus(server, bot.key), 403, 'a key without pets:read cannot list pets')
  const granted = await keysCli(url, 'set-roles', String(bot.id), '--role', 'pets:read')
  t.equal(granted.code, 0, granted.stderr)
  t.equal(granted.stdout, `Key ${bot.id} holds the roles pets:read: every instance applies them from the next request on.\n`)
  t.equal(await petsStatus(server, bot.key), 200, 'its new role holds from the very next request')

  const revoked = await keysCli(url, 'revoke', String(ci.id))
  t.equal(revoked.code, 0)
  t.equal(revoked.stdout, `Revoked key ${ci.id}: every instance refuses it from the next request on.\n`)
  t.equal(await petsStatus(server, ci.key), 401, 'the very next request with it is refused')
  t.equal(await petsStatus(server, bot.key), 200, 'the other key still works')
  const missing = await keysCli(url, 'set-roles', '99', '--role', 'pets:read')
  const gone = await keysCli(url, 'set-roles', String(ci.id), '--role', 'pets:read')
  t.equal(missing.code, 1)
  t.equal(missing.stderr, 'petstore keys: no key has id 99\n')
  t.equal(gone.code, 1)
  t.equal(gone.stderr, `petstore keys: key ${ci.id} is revoked\n`)
  // uses are written down every minute, and when the server stops
  server.child.kill('SIGTERM')
  t.equal((await server.exited).code, 0, 'the server stops cleanly')

  const again = await keysCli(url, 'revoke', String(ci.id))
  const unknown = await keysCli(url, 'revoke', '3')
  const rows = await listed(t, url)
  t.equal(again.code, 1)
  t.equal(again.stderr, `petstore keys: key ${ci.id} was revoked already\n`)
  t.equal(unknown.code, 1)
  t.equal(unknown.stderr, 'petstore keys: no key has id 3\n')
  t.strictSame(
    rows.sort(([a], [b]) => Number(a) - Number(b)),
    [
      [String(ci.id), 'ci', ci.key.slice(0, 12), defaults.join(','), 'ISO', 'ISO', 'ISO'],
      [String(bot.id), 'deploy bot', bot.key.slice(0, 12), 'pets:read', 'ISO', 'ISO', '-'],
    ].sort(([a], [b]) => Number(a) - Number(b)),
    'list: id, name, prefix, roles, created, last used, revoked',
  )

  const stored = await sqliteSql(t, file)('select * from api_keys')
  t.strictSame(stored.map((row) => row.hash).sort(), [sha256(ci.key), sha256(bot.key)].sort())
  t.notOk(JSON.stringify(stored).includes(ci.key), 'api_keys holds no key')
  for (const suffix of ['', '-wal']) {
    if (existsSync(file + suffix)) t.notOk(readFileSync(file + suffix).includes(ci.key), `nor does the file ${file + suffix}`)
  }
  t.notOk(server.stdout().includes(ci.key), 'nor the log')
})

t.test('keys CLI on PostgreSQL: revoke holds at once on every running instance', { skip: postgresMissing }, async (t) => {
  const url = await freshPostgres(t)
  const { id, key } = await createKey(t, url, 'ci')
  const env = { DATABASE_URL: url, API_KEYS: '' }
  const servers = await Promise.all([startServer(t, env), startServer(t, env)])
  for (const server of servers) t.equal(await petsStatus(server, key), 200, 'the key works on each instance')

  // a change of roles reaches every instance before its next request, as a revocation does
  t.equal((await keysCli(url, 'set-roles', String(id), '--role', 'orders:read')).code, 0)
  for (const server of servers) t.equal(await petsStatus(server, key), 403, 'each instance holds it to its new roles at the next request')
  t.equal((await keysCli(url, 'set-roles', String(id), '--role', 'pets:read')).code, 0)
  for (const server of servers) t.equal(await petsStatus(server, key), 200, 'and again')

  const revoked = await keysCli(url, 'revoke', String(id))
  t.equal(revoked.code, 0)
  for (const server of servers) t.equal(await petsStatus(server, key), 401, 'each instance refuses it at the next request')
  for (const server of servers) server.child.kill('SIGTERM')
  for (const server of servers) t.equal((await server.exited).code, 0, 'each stops cleanly, writing down when the key was used')

  const [again, unknown, rows] = await Promise.all([keysCli(url, 'revoke', String(id)), keysCli(url, 'revoke', '7'), listed(t, url)])
  t.equal(again.code, 1)
  t.equal(again.stderr, `petstore keys: key ${id} was revoked already\n`)
  t.equal(unknown.code, 1)
  t.equal(unknown.stderr, 'petstore keys: no key has id 7\n')
  t.strictSame(rows, [[String(id), 'ci', key.slice(0, 12), 'pets:read', 'ISO', 'ISO', 'ISO']], 'list: used, then revoked')

  const { rows: stored } = await query(url, 'select * from api_keys')
  t.equal(stored[0].hash, sha256(key))
  t.notOk(JSON.stringify(stored).includes(key), 'api_keys holds no key')
})

t.test('keys CLI usage errors: the usage on stderr, exit 2, the database untouched', async (t) => {
  const file = tempDb()
  const cases: [string[], RegExp][] = [
    [[], /no command given/],
    [['feed'], /unknown command "feed"/],
    [['create'], /create needs --name NAME/],
    [['create', '--name'], /argument missing/],
    [['create', '--name', '  '], /--name must be non-empty/],
    [['create', '--name', 'c\ti'], /--name must be non-empty, without control characters/],
    [['list', 'all'], /list takes no arguments/],
    [['list', '--name', 'ci'], /--name goes with create only/],
    [['revoke'], /revoke takes one ID/],
    [['revoke', '1.5'], /ID must be a key's id \(a whole number\), not "1.5"/],
  ]
  const results = await Promise.all(cases.map(([args]) => keysCli(`sqlite:${file}`, ...args)))
  cases.forEach(([args, message], i) => {
    const { code, stdout, stderr } = results[i]!
    t.equal(code, 2, `keys ${args.join(' ')}`)
    t.match(stderr, message)
    t.match(stderr, /\n\nUsage: npm run -s keys -- <command>\n/)
    t.equal(stdout, '')
  })
  t.notOk(existsSync(file), 'no database was opened')
})

t.test('keys CLI: --help prints the usage; an empty store says so; a bad setting is one line on stderr, exit 1', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-keys-'))
  const [help, empty, badUrl, badPool] = await Promise.all([
    runMain(main, ['--help']),
    keysCli(`sqlite:${dir}/empty.db`, 'list'),
    keysCli('mysql://localhost/pets', 'list'),
    // the one real process of the script: its exit status and streams, the one line of a known failure
    run(t, 'scripts/keys.ts', ['list'], { DATABASE_URL: `sqlite:${dir}/x.db`, DATABASE_POOL_SIZE: '0' }),
  ])
  t.equal(help.code, 0)
  t.match(
    help.stdout,
    /^Usage: npm run -s keys -- <command>\n[^]*revoke ID[^]*set-roles ID --role ROLE[^]*roles {2,}the roles a key may hold[^]*a revoked\nkey[^]*an unknown role/,
  )
  t.equal(empty.code, 0)
  t.equal(empty.stdout, 'No API keys yet. Create one: npm run -s keys -- create --name NAME\n')
  t.equal(badUrl.code, 1)
  t.match(badUrl.stderr, /^petstore keys: DATABASE_URL: unknown scheme "mysql:"[^\n]*\n$/)
  t.equal(badPool.code, 1)
  t.equal(badPool.stderr, 'petstore keys: invalid configuration: DATABASE_POOL_SIZE must be >= 1\n')
  t.equal(badPool.stdout, '')
})
