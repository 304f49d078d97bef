import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { loadContracts } from '../src/contract/load.js'
import { openStorage } from '../src/repositories.js'
import { testKey } from './helpers/app.js'
import { type RunningProcess, run, startServer, within } from './helpers/processes.js'

const anyKey = /pet_[0-9a-f]{8}_[A-Za-z0-9_-]{32}/g

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'petstore-first-key-')), 'pets.db')

const storedKeys = (file: string) => {
  const db = new SQLite(file, { readonly: true })
  try {
    return (db.prepare('select count(*) as count from api_keys').get() as { count: number }).count
  } finally {
    db.close()
  }
}

/** The roles of the one key stored. */
const storedRoles = (file: string) => {
  const db = new SQLite(file, { readonly: true })
  try {
    return (db.prepare('select roles from api_keys').get() as { roles: string }).roles.split(' ')
  } finally {
    db.close()
  }
}

/** Stops a server with SIGTERM; resolves to all it wrote on stdout. */
async function stop(server: RunningProcess): Promise<string> {
  server.child.kill('SIGTERM')
  return (await within(15_000, server.exited)).stdout
}

const jsonLines = (stdout: string) =>
  stdout.split('\n').filter((line) => {
    try {
      JSON.parse(line)
      return true
    } catch {
      return false
    }
  })

t.test('a first start without API_KEYS creates one key and shows it once, with a curl line that works', async (t) => {
  const file = tempDb()
  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_KEYS: '' })
  const printed = server.stdout().match(anyKey) ?? []
  t.equal(printed.length, 2, 'the key is printed on the key line and in the curl line')
  const key = printed[0]!
  t.equal(printed[1], key)
  t.match(server.stdout(), `\n  API key:  ${key}\n`)

  // the curl line, followed as a shell would
  const curl = /^ +Try it: +curl -H "([^:]+): ([^"]+)" (\S+)$/m.exec(server.stdout())
  t.ok(curl, 'a curl line')
  const [, header, value, url] = curl!
  t.equal(value, `Bearer ${key}`)
  t.equal(url, `${server.url}${loadContracts().at(-1)!.urlOf('listPets')}`, 'listPets of the newest version')
  const response = await fetch(url!, { headers: { [header!]: value! }, signal: AbortSignal.timeout(10_000) })
  t.equal(response.status, 200, 'the key works')
  const { roles } = loadContracts().at(-1)!
  t.strictSame(storedRoles(file), [...roles.firstKey], "it holds the first key's roles (x-roles): the default ones, and those marked firstKey")
  t.ok(
    roles.firstKey.includes('categories:write') && !roles.defaults.includes('categories:write'),
    'categories:write among them, which no other key holds by default',
  )
  t.notOk(
    roles.firstKey.some((role) => roles.staff.includes(role)),
    'and no staff role',
  )

  const second = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_KEYS: '' })
  t.notMatch(second.stdout(), /pet_|curl/, 'a second start on the same store shows no key')
  t.equal(storedKeys(file), 1, 'and creates none')

  const [first, later] = await Promise.all([stop(server), stop(second)])
  t.equal(first.match(anyKey)?.length, 2, 'the first start showed the key once, in all it printed')
  t.equal(first.match(/curl/g)?.length, 1)
  const logs = jsonLines(first)
  t.ok(
    logs.some((line) => /"prefix":"pet_[0-9a-f]{8}".*"msg":"issued the first API key, shown once on stdout"/.test(line)),
    'the log says a key was issued',
  )
  t.ok(
    logs.some((line) => line.includes('"msg":"request completed"')),
    'the log has the requests',
  )
  t.notOk(
    [...logs, ...jsonLines(later)].some((line) => line.includes(key)),
    'no log line holds the key',
  )
})

t.test('a start with API_KEYS set creates and shows no key, even on an empty store', async (t) => {
  const file = tempDb()
  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_KEYS: testKey })
  t.notMatch(server.stdout(), /pet_|curl/)
  t.equal(storedKeys(file), 0)
})

t.test('a first start whose key store cannot be read fails whole, exit 1, and shows no key', async (t) => {
  const file = tempDb()
  await (await openStorage(`sqlite:${file}`, { poolSize: 1 })).close()
  const db = new SQLite(file)
  db.exec('drop table api_keys')
  db.close()
  const env = { DATABASE_URL: `sqlite:${file}`, API_KEYS: '', HOST: '127.0.0.1', PORT: '0' }
  const { code, stdout, stderr } = await run(t, 'src/server.ts', [], env)
  t.equal(code, 1)
  t.match(stderr, /no such table: api_keys[^]*\n +at /, 'an unexpected error is reported with its stack')
  t.notMatch(stdout, /pet_|curl/)
})
