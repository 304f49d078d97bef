/**
 * Who still calls what: the calls of deprecated and non-stable operations, per API key, counted
 * in memory and written in batches to the store (both stores), the `keys usage` report, the
 * Prometheus counter and the access-log field.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t, { type Test } from 'tap'
import { openStorage } from '../src/repositories.js'
import { build, call, logCapture, testKey } from './helpers/app.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { runMain } from './helpers/main.js'
import { main } from '../scripts/keys.js'

const tempDb = () => `sqlite:${join(mkdtempSync(join(tmpdir(), 'petstore-usage-')), 'usage.db')}`
const envPrincipal = (key: string) => `env:${createHash('sha256').update(key).digest('hex').slice(0, 12)}`

async function checkUsageStore(t: Test, url: string) {
  // two instances on one store, each counting its own calls
  const [one, two] = [await openStorage(url, { poolSize: 2 }), await openStorage(url, { poolSize: 2 })]
  t.teardown(() => two.close())
  let closed = false
  t.teardown(() => (closed ? undefined : one.close()))
  t.strictSame(await one.usage.list(), [], 'nothing recorded yet')
  const start = Date.now()
  one.usage.note('key:1', { version: 1, operation: 'getPet' })
  one.usage.note('key:1', { version: 1, operation: 'getPet' })
  one.usage.note('env:0123456789ab', { version: 1, operation: 'listOrders' })
  t.strictSame(await one.usage.list(), [], 'nothing is written by a call')
  await one.usage.flush()
  two.usage.note('key:1', { version: 1, operation: 'getPet' })
  await two.usage.flush()
  await two.usage.flush()
  const records = await two.usage.list()
  t.strictSame(
    records.map(({ principal, operation, calls }) => ({ principal, operation, calls })),
    [
      { principal: 'env:0123456789ab', operation: 'listOrders', calls: 1 },
      { principal: 'key:1', operation: 'getPet', calls: 3 },
    ],
    "both instances' calls add up",
  )
  const getPet = records[1]!
  t.ok(getPet.firstCallAt.getTime() >= start && getPet.firstCallAt <= getPet.lastCallAt && getPet.lastCallAt.getTime() <= Date.now(), 'first and last call')
  // what an instance counted is written on close: a restart keeps it
  one.usage.note('key:1', { version: 1, operation: 'getPet' })
  closed = true
  await one.close()
  const reopened = await openStorage(url, { poolSize: 1 })
  t.teardown(() => reopened.close())
  t.equal((await reopened.usage.list())[1]!.calls, 4, 'written on close, read after a restart')
  t.equal((await reopened.usage.list())[1]!.firstCallAt.getTime(), getPet.firstCallAt.getTime(), 'the first call stays the first')
}

t.test('usage store on SQLite: batches from two instances add up, and survive a restart', async (t) => {
  await checkUsageStore(t, tempDb())
})

t.test('usage store on PostgreSQL: the same', { skip: postgresMissing }, async (t) => {
  await checkUsageStore(t, await freshPostgres(t))
})

t.test('counts kept while the store is unavailable are written at the next flush', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'petstore-usage-')), 'usage.db')
  const storage = await openStorage(`sqlite:${file}`, { poolSize: 1 })
  t.teardown(() => storage.close())
  const beside = new SQLite(file)
  t.teardown(() => beside.close())
  // (one object per operation, as the server makes them: counted under it without a string)
  const getPet = { version: 1, operation: 'getPet' }
  storage.usage.note('key:1', getPet)
  beside.exec('alter table lifecycle_calls rename to usage_away')
  const failing = storage.usage.flush()
  // a call counted while the failing flush is under way: the counts kept are added to it
  storage.usage.note('key:1', getPet)
  await failing
  beside.exec('alter table usage_away rename to lifecycle_calls')
  t.strictSame(await storage.usage.list(), [], 'the flush failed')
  storage.usage.note('key:1', getPet)
  await storage.usage.flush()
  t.equal((await storage.usage.list())[0]!.calls, 3, 'nothing lost')
})

t.test("a deprecated or experimental operation's calls are counted per key; metric and access log name the lifecycle", async (t) => {
  const url = tempDb()
  const log = logCapture()
  const other = 'another-env-key-7d2e'
  const app = await build(t, { DATABASE_URL: url, API_KEYS: [testKey, other], LOG_LEVEL: 'info', logger: log.logger })
  const stored = await app.storage.keys.issue('mobile app', app.contract.roles.defaults)
  await call(t, app, { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
  for (let i = 0; i < 3; i++) await call(t, app, { url: '/v1/pets/1', key: stored.key })
  await call(t, app, { url: '/v1/pets/1' })
  await call(t, app, { url: '/v1/store/orders', key: other })
  await call(t, app, { url: '/v2/store/orders', key: other })
  await call(t, app, { url: '/v1/pets' })
  await call(t, app, { url: '/v1/pets/1', key: 'wrong-key-000000' })

  const exposition = await app.metrics.exposition()
  t.match(exposition, /^petstore_lifecycle_requests_total\{operation="getPet",lifecycle="deprecated",version="1"\} 4$/m, 'authenticated calls only')
  t.match(exposition, /^petstore_lifecycle_requests_total\{operation="listOrders",lifecycle="experimental",version="1"\} 1$/m)
  t.match(exposition, /^petstore_lifecycle_requests_total\{operation="listOrders",lifecycle="experimental",version="2"\} 1$/m, 'each version apart')
  t.notMatch(exposition, /lifecycle_requests_total\{operation="listPets"/, 'a stable operation is not counted')
  const answered = log.lines.filter((line) => line.msg === 'request completed').map((line) => line.res as Record<string, unknown>)
  t.match(
    answered.find((res) => res.url === '/v1/pets/1'),
    { statusCode: 200, lifecycle: 'deprecated' },
  )
  t.match(
    answered.find((res) => res.url === '/v1/store/orders'),
    { lifecycle: 'experimental' },
  )
  t.notOk('lifecycle' in answered.find((res) => res.url === '/v1/pets')!, "a stable operation's line has no lifecycle")

  // a key since deleted from the store, an operation since removed from the spec
  app.storage.usage.note('key:999', { version: 1, operation: 'findPets' })
  // (and one that has become stable since)
  app.storage.usage.note('key:999', { version: 1, operation: 'listPets' })
  await app.close()
  const report = await runMain(main, ['usage'], { DATABASE_URL: url })
  t.equal(report.code, 0, report.stderr)
  t.comment(report.stdout)
  const rows = report.stdout
    .trimEnd()
    .split('\n')
    .map((line) => line.split(/ {2,}/))
  t.strictSame(rows[0], ['key', 'name', 'version', 'operation', 'lifecycle', 'calls', 'last call'])
  t.strictSame(
    rows.slice(1).map((row) => row.slice(0, 6)),
    [
      [String(stored.record.id), 'mobile app', 'v1', 'getPet', 'deprecated', '3'],
      ['999', '(deleted)', 'v1', 'findPets', 'removed', '1'],
      ['999', '(deleted)', 'v1', 'listPets', 'stable', '1'],
      ...[
        [envPrincipal(other), '(API_KEYS)', 'v1', 'listOrders', 'experimental', '1'],
        [envPrincipal(other), '(API_KEYS)', 'v2', 'listOrders', 'experimental', '1'],
        [envPrincipal(testKey), '(API_KEYS)', 'v1', 'getPet', 'deprecated', '1'],
      ].sort(([a], [b]) => (a! < b! ? -1 : 1)),
    ],
    'stored keys by id, then those of API_KEYS',
  )
  t.notMatch(report.stdout, testKey, 'never an API_KEYS key itself')
  const json = await runMain(main, ['usage', '--json'], { DATABASE_URL: url })
  t.equal(json.code, 0)
  t.match(JSON.parse(json.stdout)[0], {
    key: String(stored.record.id),
    name: 'mobile app',
    version: 1,
    operation: 'getPet',
    lifecycle: 'deprecated',
    calls: 3,
    firstCallAt: /Z$/,
    lastCallAt: /Z$/,
  })
  const empty = await runMain(main, ['usage'], { DATABASE_URL: tempDb() })
  t.equal(empty.stdout, 'No calls to deprecated, experimental or beta operations recorded yet.\n')
  const misused = await runMain(main, ['list', '--json'], { DATABASE_URL: url })
  t.equal(misused.code, 2)
  t.match(misused.stderr, /--json goes with usage only/)
})
