import { once } from 'node:events'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { type AddressInfo, connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { openStorage } from '../src/repositories.js'
import { testKey } from './helpers/app.js'
import { sleep } from './helpers/concurrency.js'
import { run, startServer, within } from './helpers/processes.js'

const tempDir = () => mkdtempSync(join(tmpdir(), 'petstore-server-'))

t.test('the server logs its URL, answers, and on SIGTERM finishes and exits 0', async (t) => {
  const dir = tempDir()
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'pets.db')}`, API_KEYS: testKey })
  const response = await fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${testKey}` } })
  t.equal(response.status, 200)
  server.child.kill('SIGTERM')
  const { code } = await server.exited
  t.equal(code, 0)
  t.match(server.stdout(), /"msg":"shutting down"/)
  t.notMatch(server.stdout() + server.stderr(), testKey, 'the key is never logged')
  t.equal(server.stdout().match(/listening/gi)?.length, 1, "one line says where it listens (not Fastify's too)")
})

t.test('a log nobody reads: the server goes on answering, holds at most LOG_BUFFER_BYTES of lines, drops and counts the rest', async (t) => {
  const dir = tempDir()
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'pets.db')}`, API_KEYS: testKey, LOG_BUFFER_BYTES: '65536', METRICS_PORT: '0' })
  const metricsUrl = /"metricsUrl":"([^"]+)"/.exec(server.stdout())![1]!
  const dropped = async () => {
    const text = await (await fetch(metricsUrl)).text()
    return Number(/^petstore_log_dropped_lines_total (\d+)$/m.exec(text)?.[1])
  }
  t.equal(await dropped(), 0, 'none dropped while the log is read')
  // stdout is no longer read: the pipe fills (64 KiB), then the server's buffer (64 KiB)
  server.child.stdout!.pause()
  const get = () => fetch(`${server.url}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${testKey}` } }).then((response) => response.status)
  let statuses: number[] = []
  for (let round = 0; round < 40 && (await dropped()) === 0; round++) statuses = await Promise.all(Array.from({ length: 50 }, get))
  t.strictSame(new Set(statuses), new Set([200]), 'every request answered, log or no log')
  t.ok((await dropped()) > 0, `lines past the buffer dropped and counted (${await dropped()})`)
  server.child.stdout!.resume()
  server.child.kill('SIGTERM')
  t.equal((await server.exited).code, 0, 'and it stops as usual once the log is read again')
})

t.test('bad configuration: one clear line on stderr, exit 1', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: '99999' }, /^petstore: invalid configuration: PORT must be <= 65535\n$/],
    [{ LOG_LEVEL: 'loud' }, /^petstore: invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent\n$/],
    [{ DATABASE_URL: 'mysql://localhost/pets' }, /^petstore: DATABASE_URL: unknown scheme "mysql:"/],
    [
      { PORT: '3000', METRICS_PORT: '3000' },
      /^petstore: invalid configuration: METRICS_PORT must not be PORT \(3000\): the metrics have a port of their own\n$/,
    ],
    // (port 0, any free port, for both is no conflict)
    [
      { PORT: '0', METRICS_PORT: '0', HOST: 'not-a-host.invalid' },
      /^petstore: API listener \(HOST, PORT\): getaddrinfo (ENOTFOUND|EAI_AGAIN) not-a-host\.invalid\n$/,
    ],
    [
      { METRICS_PORT: '0', METRICS_HOST: 'not-a-host.invalid' },
      /^petstore: metrics listener \(METRICS_HOST, METRICS_PORT\): getaddrinfo (ENOTFOUND|EAI_AGAIN) not-a-host\.invalid\n$/,
    ],
  ]
  // one after the other: each process costs seconds under the TypeScript loader
  for (const [env, message] of cases) {
    const { code, stdout, stderr } = await run(t, 'src/server.ts', [], { API_KEYS: testKey, DATABASE_URL: 'sqlite::memory:', ...env })
    t.equal(code, 1, JSON.stringify(env))
    t.match(stderr, message)
    t.notMatch(stdout, /listening/i, 'it never said it listened')
  }
})

t.test('a database migrated by a newer version, or a port in use: one clear line on stderr, exit 1', async (t) => {
  const dir = tempDir()
  const newer = join(dir, 'newer.db')
  await (await openStorage(`sqlite:${newer}`, { poolSize: 1 })).close()
  const db = new SQLite(newer)
  db.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run('9999_from_a_newer_version', new Date().toISOString())
  db.close()
  const taken = createServer().listen(0, '127.0.0.1')
  t.teardown(() => taken.close())
  await within(5_000, once(taken, 'listening'))
  const { port } = taken.address() as AddressInfo

  const env = { API_KEYS: testKey, HOST: '127.0.0.1' }
  const [migration, listen] = await Promise.all([
    run(t, 'src/server.ts', [], { ...env, DATABASE_URL: `sqlite:${newer}`, PORT: '0' }),
    run(t, 'src/server.ts', [], { ...env, DATABASE_URL: `sqlite:${join(dir, 'pets.db')}`, PORT: String(port) }),
  ])
  t.equal(migration.code, 1)
  t.match(migration.stderr, /^petstore: [^\n]*9999_from_a_newer_version[^\n]*\n$/)
  t.equal(listen.code, 1)
  t.equal(listen.stderr, `petstore: API listener (HOST, PORT): listen EADDRINUSE: address already in use 127.0.0.1:${port}\n`)
})

t.test('an uncaught error: the server logs it, drains, and exits 1; a second one during the drain ends it at once', async (t) => {
  const dir = tempDir()
  // A fault put into the process from outside: the server has no way to fail like this on purpose.
  const fault = join(dir, 'throw-on-sigwinch.mjs')
  writeFileSync(fault, "process.on('SIGWINCH', () => { throw new Error('an unexpected failure') })\n")
  const env = {
    DATABASE_URL: `sqlite:${join(dir, 'pets.db')}`,
    API_KEYS: testKey,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${pathToFileURL(fault).href}`,
  }
  const server = await startServer(t, env)
  server.child.kill('SIGWINCH')
  const { code, stdout } = await within(15_000, server.exited)
  t.equal(code, 1)
  t.match(stdout, /"level":50,[^\n]*"err":\{[^\n]*"message":"an unexpected failure"[^\n]*"msg":"shutting down after an error"/)

  // a request in flight holds the drain; a second failure meanwhile does not wait for it
  const again = await startServer(t, { ...env, DATABASE_URL: `sqlite:${join(dir, 'again.db')}` })
  const stalled = connect(Number(new URL(again.url).port), '127.0.0.1')
  stalled.on('error', () => {})
  t.teardown(() => stalled.destroy())
  stalled.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${testKey}\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{`)
  await sleep(300)
  again.child.kill('SIGWINCH')
  await sleep(300)
  again.child.kill('SIGWINCH')
  const second = await within(15_000, again.exited)
  t.equal(second.code, 1)
  t.match(second.stdout, /\{[^\n]*"level":50[^\n]*"msg":"second error, exiting"\}\n/, 'said in JSON')
})
