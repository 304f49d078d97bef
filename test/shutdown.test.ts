import { existsSync, mkdtempSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { testKey } from './helpers/app.js'
import { startServer } from './helpers/processes.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

t.test('on SIGTERM the server stops accepting, finishes the request in flight, closes the database, exits 0', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'petstore-shutdown-')), 'pets.db')
  const server = await startServer(t, { DATABASE_URL: `sqlite:${file}`, API_KEYS: testKey })
  const { port } = new URL(server.url)
  const body = JSON.stringify({ name: 'Late', categoryId: 3 })

  // A client is halfway through sending its request when the signal comes.
  const socket = connect(Number(port), '127.0.0.1')
  let answer = ''
  socket.setEncoding('utf8').on('data', (chunk) => (answer += chunk))
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
  socket.end(body.slice(10))
  await closed

  t.match(answer, /^HTTP\/1\.1 201 Created\r\n/, 'the request in flight is answered')
  t.match(answer, /"id":1,"name":"Late","categoryId":3,"status":"available"/)
  const { code } = await server.exited
  t.equal(code, 0)
  t.notOk(existsSync(`${file}-wal`), 'the database was closed: SQLite checkpoints and removes its WAL on close')

  const db = new SQLite(file, { readonly: true })
  t.teardown(() => db.close())
  t.strictSame(db.prepare('select name, category_id from pets').all(), [{ name: 'Late', category_id: 3 }], 'the pet is stored')
})
