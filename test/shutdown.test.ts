import { existsSync, mkdtempSync } from 'node:fs'
import { Agent, request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t, { type Test } from 'tap'
import { repeatWithinMs } from '../src/shutdown.js'
import { testKey } from './helpers/app.js'
import { startServer, within } from './helpers/processes.js'
import { sleep } from './helpers/concurrency.js'

t.test(
  'on SIGTERM the server stops accepting, finishes the request in flight with Connection: close, closes the database, exits 0 as soon as it is answered',
  async (t) => {
    const file = join(mkdtempSync(join(tmpdir(), 'petstore-shutdown-')), 'pets.db')
    // (a grace period far longer than an exit takes on a machine however loaded: one that waited
    // for it is told apart)
    const graceMs = 60_000
    const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_KEYS: testKey, SHUTDOWN_GRACE_MS: String(graceMs) })
    const { port } = new URL(server.url)
    const body = JSON.stringify({ name: 'Late', categoryId: 3 })

    // A client is halfway through sending its request when the signal comes.
    const socket = connect(Number(port), '127.0.0.1')
    let answer = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk))
    const closed = new Promise((resolve) => socket.on('close', resolve))
    socket.write(
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${testKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    )
    await sleep(300)
    server.child.kill('SIGTERM')
    await sleep(500)
    const refused = await fetch(server.url).then(
      () => false,
      () => true,
    )
    t.ok(refused, 'no new connection is accepted while draining')
    t.equal(server.child.exitCode, null, 'still running while a request is in flight')
    // the rest of the body, on a connection the client would keep open
    socket.write(body.slice(10))
    const answeredAt = Date.now()
    await within(20_000, closed)

    t.match(answer, /^HTTP\/1\.1 201 Created\r\n/, 'the request in flight is answered')
    t.match(answer, /\r\nConnection: close\r\n/i, 'saying the connection closes: the signal came before the answer')
    t.match(answer, /"id":1,"name":"Late","categoryId":3,"status":"available"/)
    const { code } = await within(20_000, server.exited)
    const exitMs = Date.now() - answeredAt
    t.equal(code, 0)
    t.ok(exitMs < 20_000, `the server closed the connection and exited once it had answered (${exitMs} ms; the grace period is ${graceMs / 1000} s)`)
    t.notOk(existsSync(`${file}-wal`), 'the database was closed: SQLite checkpoints and removes its WAL on close')

    const db = new SQLite(file, { readonly: true })
    t.teardown(() => db.close())
    t.strictSame(db.prepare('select name, category_id from pets').all(), [{ name: 'Late', category_id: 3 }], 'the pet is stored')
  },
)

t.test('SIGTERM under keep-alive load: every request sent is answered, none reset; a stalled client is cut; exit 0 within the grace period', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-drain-'))
  const graceMs = 3_000
  // (the stalled request below would otherwise end at its own timeouts, a minute on: far past the
  // grace period on a machine however loaded)
  const otherwiseMs = 60_000
  const server = await startServer(t, {
    DATABASE_URL: `sqlite:${join(dir, 'pets.db')}`,
    API_KEYS: testKey,
    SHUTDOWN_GRACE_MS: String(graceMs),
    BODY_IDLE_TIMEOUT_MS: String(otherwiseMs),
    REQUEST_TIMEOUT_MS: String(otherwiseMs),
  })
  const { port } = new URL(server.url)
  const agent = new Agent({ keepAlive: true, maxSockets: 16 })
  t.teardown(() => agent.destroy())
  const outcomes = { answered: 0, refusedAtConnect: 0, reset: [] as string[] }
  const get = () =>
    new Promise<void>((resolve) => {
      const request = httpRequest({ port, host: '127.0.0.1', path: '/v1/pets', agent, headers: { authorization: `Bearer ${testKey}` } }, (response) => {
        response.resume().on('end', () => {
          if (response.statusCode === 200) outcomes.answered++
          else outcomes.reset.push(`status ${response.statusCode}`)
          resolve()
        })
      })
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'ECONNREFUSED') outcomes.refusedAtConnect++
        else outcomes.reset.push(error.code ?? error.message)
        resolve()
      })
      request.end()
    })
  let signalled = false
  const clients = Array.from({ length: 16 }, async () => {
    // until a connection is refused after the signal (the listener is closed), bounded
    for (let i = 0; i < 5_000; i++) {
      const before = outcomes.refusedAtConnect
      await get()
      if (signalled && outcomes.refusedAtConnect > before) return
    }
  })

  // and one client stalled mid-body: only the end of the grace period ends it
  const stalled = connect(Number(port), '127.0.0.1')
  let stalledAnswer = ''
  stalled.setEncoding('utf8').on('data', (chunk: string) => (stalledAnswer += chunk))
  stalled.on('error', () => {})
  const stalledClosed = new Promise((resolve) => stalled.on('close', resolve))
  // (it asks to be told to go on, as a client may: the server's 100 Continue says it has read the
  // request's head, so that the signal comes while the request is in flight, however busy the machine)
  stalled.write(
    `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${testKey}\r\nContent-Type: application/json\r\nContent-Length: 50\r\nExpect: 100-continue\r\n\r\n`,
  )
  const goOn = 'HTTP/1.1 100 Continue\r\n\r\n'
  await within(20_000, new Promise<void>((resolve) => stalled.on('data', () => stalledAnswer === goOn && resolve())))
  stalled.write('{')

  await sleep(500)
  const signalledAt = Date.now()
  signalled = true
  server.child.kill('SIGTERM')
  await Promise.all(clients)
  const { code } = await server.exited
  const tookMs = Date.now() - signalledAt
  await stalledClosed

  t.comment(JSON.stringify({ ...outcomes, tookMs }))
  t.ok(outcomes.answered > 16, 'requests were answered under load')
  t.strictSame(outcomes.reset, [], 'no request was reset or left unanswered')
  t.equal(code, 0, 'exit 0')
  t.ok(tookMs < graceMs + 20_000, `ended by the grace period, not by the request's own timeouts (${tookMs} ms)`)
  t.equal(stalledAnswer, goOn, 'the stalled request was cut, not answered as if complete')
  const lines = server.stdout().trim().split('\n')
  t.ok(
    lines.every((line) => line.startsWith('{') && JSON.parse(line)),
    'every log line is JSON',
  )
  t.match(server.stdout(), /"msg":"cutting the connections whose requests did not finish in the grace period"/)
  t.equal(server.stderr(), '', 'nothing on stderr')
})

t.test('SIGINT drains as SIGTERM does', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-drain-'))
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'pets.db')}`, API_KEYS: testKey })
  server.child.kill('SIGINT')
  const { code } = await server.exited
  t.equal(code, 0)
  t.match(server.stdout(), /"signal":"SIGINT","msg":"shutting down"/)
})

/** A server with a request in flight that will not finish by itself: its drain lasts. */
async function drainingServer(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-drain-'))
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'pets.db')}`, API_KEYS: testKey, SHUTDOWN_GRACE_MS: '30000' })
  const stalled = connect(Number(new URL(server.url).port), '127.0.0.1')
  let answer = ''
  stalled.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk))
  stalled.on('error', () => {})
  t.teardown(() => stalled.destroy())
  const body = JSON.stringify({ name: 'In flight', categoryId: 1 })
  stalled.write(
    `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${testKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n{`,
  )
  await sleep(300)
  return { server, finish: () => stalled.end(body.slice(1)), answer: () => answer }
}

t.test('a second SIGTERM or SIGINT, a second or more after the first, ends the process at once (exit 1), saying so in JSON', async (t) => {
  const { server } = await drainingServer(t)
  server.child.kill('SIGTERM')
  await sleep(repeatWithinMs + 200)
  t.equal(server.child.exitCode, null, 'still draining')
  server.child.kill('SIGINT')
  const { code } = await within(10_000, server.exited)
  t.equal(code, 1)
  t.match(server.stdout(), /\{[^\n]*"level":50[^\n]*"signal":"SIGINT","msg":"second SIGINT, exiting at once"\}\n/)
})

t.test('one Ctrl-C under npm start comes twice (terminal and npm) within milliseconds: one graceful stop, exit 0', async (t) => {
  const { server, finish, answer } = await drainingServer(t)
  server.child.kill('SIGINT')
  await sleep(5)
  server.child.kill('SIGINT')
  await sleep(300)
  server.child.kill('SIGINT')
  await sleep(300)
  t.equal(server.child.exitCode, null, 'the repeats changed nothing: it still drains')
  finish()
  const { code } = await within(10_000, server.exited)
  t.equal(code, 0, 'exit 0')
  t.match(answer(), /^HTTP\/1\.1 201 Created\r\n/, 'the request in flight was answered')
  t.equal(server.stdout().match(/"msg":"shutting down"/g)?.length, 1, 'one stop')
  t.notMatch(server.stdout(), /second/)
})
