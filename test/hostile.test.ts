/**
 * Hostile clients, over raw sockets: what a client can do to a connection (stall, trickle,
 * flood, send what Node answers on its own) gets a bounded, documented answer in the Error
 * shape. The points are those of issue 6; each test names the one it proves.
 */
import { connect, createServer, type Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { AppOptions } from '../src/app.js'
import { aCategory, api, build, call, logCapture, newest, testKey } from './helpers/app.js'
import { contractViolations } from './helpers/contract.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { sleep } from './helpers/concurrency.js'

/** Short limits, so that a stalled client is seen to be cut within a test's time. */
const limits = { HEADERS_TIMEOUT_MS: 1_000, REQUEST_TIMEOUT_MS: 2_000, BODY_IDLE_TIMEOUT_MS: 500, KEEP_ALIVE_TIMEOUT_MS: 1_000 }
/** Node checks its timeouts once a second: an answer may come this much after its limit. */
const slack = 1_500

async function serve(t: Test, options: Partial<AppOptions> = {}): Promise<{ app: FastifyInstance; port: number }> {
  const app = await build(t, { ...limits, ...options })
  // (category 1, which the pets of these tests name: version 2 on, createPet takes only one that exists)
  await aCategory(app)
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, port: (app.server.address() as { port: number }).port }
}

interface RawAnswer {
  status: number
  headers: Record<string, string>
  body: string
  /** the whole text received, interim answers included */
  text: string
  /** ms from the first byte sent to the connection's close */
  ms: number
  /** the socket error the client met, if any (EPIPE, ECONNRESET…) */
  error?: string
}

/** The last answer in `text` (after any `100 Continue`), split into status, headers and body. */
function parseAnswer(text: string): Pick<RawAnswer, 'status' | 'headers' | 'body'> {
  let start = 0
  while (/^HTTP\/1\.1 1\d\d /.test(text.slice(start))) start = text.indexOf('\r\n\r\n', start) + 4
  const end = text.indexOf('\r\n\r\n', start)
  if (end === -1) return { status: 0, headers: {}, body: '' }
  const [statusLine, ...lines] = text.slice(start, end).split('\r\n')
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
  return { status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(end + 4) }
}

/**
 * Opens a connection, lets `client` write to it as it pleases, and collects everything the
 * server sends until the connection closes (within `boundMs`).
 */
function exchange(port: number, client: (socket: Socket) => void | Promise<void>, { stubborn = false } = {}): Promise<RawAnswer> {
  const boundMs = 15_000
  return new Promise((resolve) => {
    // stubborn: it goes on sending after the server's FIN (a well-behaved client stops)
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: stubborn })
    const started = Date.now()
    const chunks: Buffer[] = []
    let error: string | undefined
    const bound = setTimeout(() => socket.destroy(new Error('the server never closed the connection')), boundMs)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', (err: NodeJS.ErrnoException) => (error ??= err.code ?? err.message))
    socket.on('close', () => {
      clearTimeout(bound)
      const text = Buffer.concat(chunks).toString('utf8')
      resolve({ ...parseAnswer(text), text, ms: Date.now() - started, ...(error !== undefined && { error }) })
    })
    socket.on('connect', () => void client(socket))
  })
}

/** The answer keeps the contract for `method url` (documented status, headers, Error body). */
function keepsContract(t: Test, method: string, url: string, answer: RawAnswer) {
  const observed = { method, url, status: answer.status, headers: answer.headers, body: answer.body }
  t.strictSame(contractViolations(observed), [], `${method} ${url} ${answer.status} keeps the contract`)
}

const auth = `Authorization: Bearer ${testKey}\r\n`
const postHead = (length: number, extra = auth) =>
  `POST ${api}/pets HTTP/1.1\r\nHost: x\r\n${extra}Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`

t.test('1. a body that stops: 408 after BODY_IDLE_TIMEOUT_MS of silence, and the connection closes', async (t) => {
  const { port } = await serve(t)
  const answer = await exchange(port, (socket) => void socket.write(`${postHead(100)}{`))
  t.equal(answer.status, 408)
  t.equal(JSON.parse(answer.body).code, 'request_timeout')
  t.match(JSON.parse(answer.body).message, /paused for more than 0.5 s/)
  t.equal(answer.headers.connection, 'close')
  t.ok(answer.ms >= 400 && answer.ms < limits.BODY_IDLE_TIMEOUT_MS + slack, `closed after ${answer.ms} ms`)
  keepsContract(t, 'POST', `${api}/pets`, answer)
})

t.test('1. a body trickled a byte at a time: 408 once REQUEST_TIMEOUT_MS is over', async (t) => {
  const { port } = await serve(t)
  const answer = await exchange(port, async (socket) => {
    socket.write(postHead(100))
    for (let i = 0; i < 40 && socket.writable; i++) {
      socket.write(' ')
      await sleep(200)
    }
  })
  t.equal(answer.status, 408)
  t.equal(JSON.parse(answer.body).code, 'request_timeout')
  t.ok(answer.ms >= limits.REQUEST_TIMEOUT_MS - 100 && answer.ms < limits.REQUEST_TIMEOUT_MS + slack, `closed after ${answer.ms} ms`)
  keepsContract(t, 'POST', `${api}/pets`, answer)
})

t.test('1. headers that never end, or no request at all: 408 after HEADERS_TIMEOUT_MS, connection closed', async (t) => {
  const { port } = await serve(t)
  // Node checks once a second: silent connections opened at every tenth of that interval, so
  // that one opened just after a check is seen too (its 408 comes latest)
  const [partial, ...silent] = await Promise.all([
    exchange(port, (socket) => void socket.write(`GET ${api}/pets HTTP/1.1\r\nHost: x\r\n${auth}`)),
    ...Array.from({ length: 10 }, (_, i) => sleep(i * 100).then(() => exchange(port, () => {}))),
  ])
  for (const answer of [partial, ...silent]) {
    t.equal(answer.status, 408)
    t.strictSame(JSON.parse(answer.body), { code: 'request_timeout', message: 'The request did not arrive in time', status: 408 })
    t.equal(answer.headers.connection, 'close')
    t.equal(answer.headers['x-content-type-options'], 'nosniff', 'the protective headers, even from Node-level answers')
    t.ok(answer.ms < limits.HEADERS_TIMEOUT_MS + slack, `closed after ${answer.ms} ms`)
    keepsContract(t, 'GET', `${api}/pets`, answer)
  }
})

t.test('1. a request refused before its body is read (401, 415) closes the connection, after the client read the answer', async (t) => {
  const { port } = await serve(t)
  const rest = Buffer.alloc(64 * 1024, ' ')
  // the client goes on sending the body it announced, as real clients do
  const sendAll = (head: string) => async (socket: Socket) => {
    socket.write(head)
    await sleep(100)
    socket.write(rest)
  }
  const unauthorized = await exchange(port, sendAll(postHead(rest.length, '')))
  t.equal(unauthorized.status, 401)
  t.equal(unauthorized.headers.connection, 'close')
  t.equal(unauthorized.error, undefined, 'no reset, no EPIPE: the body was read and dropped')
  keepsContract(t, 'POST', `${api}/pets`, unauthorized)

  const latin1 = postHead(rest.length).replace('application/json', 'application/json; charset=iso-8859-1')
  const unsupported = await exchange(port, sendAll(latin1))
  t.equal(unsupported.status, 415)
  t.match(JSON.parse(unsupported.body).message, /Unsupported charset "iso-8859-1"/)
  t.equal(unsupported.headers.connection, 'close')
  t.equal(unsupported.error, undefined)

  const gzip = postHead(rest.length).replace('Content-Type', 'Content-Encoding: gzip\r\nContent-Type')
  const encoded = await exchange(port, sendAll(gzip))
  t.equal(encoded.status, 415)
  t.match(JSON.parse(encoded.body).message, /Unsupported Content-Encoding "gzip"/)
})

t.test("1. a request without a body keeps its connection; a body the server never reads (a GET's) closes it after the answer", async (t) => {
  const { port } = await serve(t)
  const get = `GET ${api}/pets?limit=1 HTTP/1.1\r\nHost: x\r\n${auth}\r\n`
  // two requests on one connection, the second asking to close: both answered, in order
  const kept = await exchange(port, (socket) => void socket.write(`${get}${get.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n')}`))
  t.equal(kept.text.match(/HTTP\/1\.1 200 /g)?.length, 2, 'both answered on the one connection')
  t.match(kept.text, /^HTTP\/1\.1 200 [^]*?Connection: keep-alive\r\n/, 'the first answer keeps the connection open')

  const rest = Buffer.alloc(64 * 1024, ' ')
  const withBody = await exchange(port, async (socket) => {
    socket.write(get.replace('\r\n\r\n', `\r\nContent-Type: application/json\r\nContent-Length: ${rest.length}\r\n\r\n`))
    await sleep(100)
    socket.write(rest)
  })
  t.equal(withBody.status, 200, 'a GET is answered whatever body it carries')
  t.equal(withBody.headers.connection, 'close', 'and its connection closes')
  t.equal(withBody.error, undefined, 'after the client read the answer: no reset')
  keepsContract(t, 'GET', `${api}/pets`, withBody)
})

t.test('8. 40 clients each sending 5 MiB: at least 39 read the 413 (and the 401, without a key)', async (t) => {
  const { port } = await serve(t)
  const body = Buffer.alloc(5 * 1024 * 1024, 'a')
  for (const [extra, status] of [
    [auth, 413],
    ['', 401],
  ] as const) {
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        exchange(port, (socket) => {
          socket.write(postHead(body.length, extra))
          socket.end(body)
        }),
      ),
    )
    const read = answers.filter((answer) => answer.status === status).length
    const errors = answers.flatMap((answer) => (answer.error ? [answer.error] : []))
    t.comment(`${status}: read by ${read} of 40; client errors: ${JSON.stringify(errors)}`)
    t.ok(read >= 39, `${read} of 40 clients read the ${status}`)
  }
})

t.test('1. connections past MAX_CONNECTIONS are refused, with a log line', async (t) => {
  const { lines, logger } = logCapture()
  const { port } = await serve(t, { MAX_CONNECTIONS: 3, LOG_LEVEL: 'warn', logger })
  const held = Array.from({ length: 3 }, () => connect(port, '127.0.0.1'))
  t.teardown(() => held.forEach((socket) => socket.destroy()))
  await Promise.all(held.map((socket) => new Promise((resolve) => socket.on('connect', resolve))))
  await sleep(100)
  const refused = await exchange(port, (socket) => void socket.write(`GET ${api}/pets HTTP/1.1\r\nHost: x\r\n${auth}\r\n`))
  t.equal(refused.text, '', 'the fourth connection is closed unanswered')
  const refusal = () => lines.find((entry) => String(entry.msg).includes('refused connections'))
  for (let waited = 0; waited < 3_000 && !refusal(); waited += 100) await sleep(100)
  const line = refusal()
  t.match(line, { level: 40, refused: 1, maxConnections: 3 }, 'one warning line, with the count')
})

t.test('2. an integer parameter is decimal digits only, in range; anything else is a 400 naming it, on both stores', async (t) => {
  const stores: [string, () => Promise<Partial<AppOptions>>][] = [['SQLite', async () => ({})]]
  if (!postgresMissing) stores.push(['PostgreSQL', async () => ({ DATABASE_URL: await freshPostgres(t), DATABASE_POOL_SIZE: 2 })])
  const junk = ['1e400', 'Infinity', '-Infinity', 'NaN', '0x10', '1e2', '20.0', '+5', ' 5', '5 ', '007', '0x1', '1.0', '9'.repeat(309), '', '٣']
  for (const [store, options] of stores) {
    const app = await build(t, await options())
    const pet = await call(t, app, { method: 'POST', url: `${api}/pets`, payload: { name: 'Rex', categoryId: await aCategory(app) } })
    await call(t, app, { method: 'POST', url: `${api}/store/orders`, payload: { petId: pet.json.id } })
    for (const value of junk) {
      const encoded = encodeURIComponent(value)
      for (const [url, name] of [
        [`${api}/pets?limit=${encoded}`, 'query/limit'],
        [`${api}/pets?after=${encoded}`, 'query/after'],
        [`${api}/store/orders/${encoded}`, 'path/orderId'],
      ] as const) {
        if (url.endsWith('/orders/')) continue // an empty orderId is the list's path
        const response = await call(t, app, { url })
        t.equal(response.status, 400, `${store}: ${url}`)
        t.equal(response.json.code, 'invalid_request')
        t.match(response.json.message, new RegExp(`^${name} `), 'the message names the parameter')
      }
    }
    t.equal((await call(t, app, { url: `${api}/pets?limit=100&after=0` })).status, 200, `${store}: decimal digits in range are fine`)
    t.equal((await call(t, app, { url: `${api}/store/orders/1` })).status, 200)
    t.equal((await call(t, app, { url: `${api}/store/orders/${Number.MAX_SAFE_INTEGER}` })).status, 404, 'the largest id is looked up')
  }
})

t.test('7. what Node would answer alone gets the Error body: no Host, several Host, Expect, CONNECT', async (t) => {
  const { port } = await serve(t)
  const send = (request: string) => exchange(port, (socket) => void socket.write(request))
  const noHost = await send(`GET ${api}/pets HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`)
  t.equal(noHost.status, 400)
  t.equal(JSON.parse(noHost.body).message, 'An HTTP/1.1 request needs a Host header')
  keepsContract(t, 'GET', `${api}/pets`, noHost)
  const twoHosts = await send(`GET ${api}/pets HTTP/1.1\r\nHost: a\r\nHost: b\r\n${auth}Connection: close\r\n\r\n`)
  t.equal(JSON.parse(twoHosts.body).message, 'Send one Host header, not several')
  const http10 = await send(`GET ${api}/pets HTTP/1.0\r\n${auth}\r\n`)
  t.match(http10.text, /^HTTP\/1\.1 200 /, 'HTTP/1.0 needs no Host')

  const expectation = await send(`GET ${api}/pets HTTP/1.1\r\nHost: x\r\n${auth}Expect: foo\r\nConnection: close\r\n\r\n`)
  t.equal(expectation.status, 200, 'an expectation the server does not know is ignored (RFC 9110), not a 417')

  const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
  const granted = await exchange(port, async (socket) => {
    socket.write(postHead(body.length).replace('\r\n\r\n', '\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n'))
    await sleep(200)
    socket.write(body)
  })
  t.match(granted.text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /, '100-continue is granted to an authenticated request')
  const withheld = await send(postHead(body.length, '').replace('\r\n\r\n', '\r\nExpect: 100-continue\r\n\r\n'))
  t.match(withheld.text, /^HTTP\/1\.1 401 /, 'and withheld from one without a key, which then sends no body')
  t.equal(withheld.headers.connection, 'close')

  const proxy = await send('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')
  t.equal(proxy.status, 400)
  t.strictSame(JSON.parse(proxy.body), { code: 'invalid_request', message: 'CONNECT is not supported: this server is not a proxy', status: 400 })
  t.equal(proxy.headers['cache-control'], 'no-store')
})

t.test("10. HEAD wherever GET works; nosniff, and no-store on API answers but a read's 200; one Authorization only; __proto__ named", async (t) => {
  const { app, port } = await serve(t)
  await call(t, app, { method: 'POST', url: `${api}/pets`, payload: { name: 'Rex', categoryId: 1 } })
  await call(t, app, { method: 'POST', url: `${api}/store/orders`, payload: { petId: 1 } })
  const { docs, yaml, json } = newest.service.paths
  for (const url of [`${api}/pets`, `${api}/store/orders/1`, docs, yaml, json]) {
    const [head, get] = [await call(t, app, { method: 'HEAD', url }), await call(t, app, { url })]
    t.equal(head.status, 200, `HEAD ${url}`)
    t.equal(head.body, '', 'without a body')
    t.equal(head.headers['content-type'], get.headers['content-type'], 'with the headers of GET')
  }
  t.equal((await call(t, app, { method: 'HEAD', url: `${api}/store/orders/2` })).status, 404)
  t.equal((await call(t, app, { method: 'HEAD', url: `${api}/pets`, key: null })).status, 401)

  for (const response of [
    await call(t, app, { url: `${api}/pets` }),
    await call(t, app, { url: `${api}/store/orders/9` }),
    await call(t, app, { url: `${api}/pets`, key: null }),
    await call(t, app, { method: 'POST', url: `${api}/pets`, payload: {} }),
  ]) {
    t.equal(response.headers['x-content-type-options'], 'nosniff', `${response.status}: nosniff`)
    // (a read's 200 carries its ETag, and may be kept to be revalidated: docs/clients.md)
    const cacheControl = response.status === 200 ? 'private, no-cache' : 'no-store'
    t.equal(response.headers['cache-control'], cacheControl, `${response.status}: ${cacheControl}`)
  }

  const twice = await exchange(port, (socket) => {
    socket.write(`GET ${api}/pets HTTP/1.1\r\nHost: x\r\n${auth}Authorization: Bearer wrong\r\nConnection: close\r\n\r\n`)
  })
  t.equal(twice.status, 401)
  t.equal(JSON.parse(twice.body).message, 'Send one Authorization header, not several')
  t.equal(twice.headers['www-authenticate'], 'Bearer realm="petstore", error="invalid_request"')

  for (const payload of ['{"__proto__":{"x":1},"name":"Rex","categoryId":1}', '{"constructor":{"prototype":{}},"name":"Rex","categoryId":1}']) {
    const response = await call(t, app, { method: 'POST', url: `${api}/pets`, payload, headers: { 'content-type': 'application/json' } })
    t.equal(response.status, 400)
    t.equal(response.json.message, 'The request body must not hold the property "__proto__" or "constructor.prototype"')
  }
})

t.test('3. a body that is not UTF-8, or holds a string that is not Unicode, is a 400; nothing is stored', async (t) => {
  const app = await build(t)
  await aCategory(app)
  const cases: [Buffer | string, string][] = [
    [Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('","categoryId":1}')]), 'The request body is not valid UTF-8'],
    ['{"name":"\\ud800","categoryId":1}', 'body/name is not valid Unicode: it holds an unpaired surrogate'],
    ['{"name":"Rex \\uDFFF\\ud83d","categoryId":1}', 'body/name is not valid Unicode: it holds an unpaired surrogate'],
    ['{"name":"Rex","categoryId":1,"tags":{"\\udc00":1}}', 'body/tags (a property name) is not valid Unicode: it holds an unpaired surrogate'],
    ['{"name":"Rex","categoryId":1,"x":[{"y":"\\ud800"}]}', 'body/x/0/y is not valid Unicode: it holds an unpaired surrogate'],
    ['', 'The request body is empty: send a JSON object'],
  ]
  for (const [payload, message] of cases) {
    const response = await call(t, app, { method: 'POST', url: `${api}/pets`, payload, headers: { 'content-type': 'application/json' } })
    t.equal(response.status, 400, message)
    t.equal(response.json.message, message)
  }
  const pair = await call(t, app, {
    method: 'POST',
    url: `${api}/pets`,
    payload: '{"name":"\\ud83d\\udc36","categoryId":1}',
    headers: { 'content-type': 'application/json' },
  })
  t.equal(pair.status, 201, 'an escaped surrogate pair is a real character')
  t.equal(pair.json.name, '🐶')
  t.equal((await call(t, app, { url: `${api}/pets` })).json.length, 1, 'only that one was stored')
})

t.test('1. a chunked body past the limit is a 413 as it arrives; a client that never stops sending reads its 401, and is cut', async (t) => {
  const { port } = await serve(t)
  const chunk = 'x'.repeat(4096)
  const chunked = await exchange(port, (socket) => {
    socket.write(`POST ${api}/pets HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`)
    for (let i = 0; i < 5; i++) socket.write(`1000\r\n${chunk}\r\n`)
    socket.end('0\r\n\r\n')
  })
  t.equal(chunked.status, 413)
  t.equal(JSON.parse(chunked.body).message, 'The request body is larger than 16384 bytes')

  // announces 1 GiB without a key, and sends as fast as it can
  let sent = 0
  const endless = await exchange(
    port,
    async (socket) => {
      socket.write(postHead(1024 ** 3, ''))
      const block = Buffer.alloc(1024 * 1024, ' ')
      while (!socket.destroyed && sent < 256 * block.length) {
        sent += block.length
        if (!socket.write(block)) await new Promise((resolve) => socket.once('drain', resolve).once('close', resolve))
      }
    },
    { stubborn: true },
  )
  t.equal(endless.status, 401, 'the answer was read first, then the connection was cut')
})

t.test('linger: the answer stays readable; a sender that never stops is cut after lingerBytes', async (t) => {
  const { linger, lingerBytes } = await import('../src/http/linger.js')
  let readByServer = 0
  // half-open, as Node's HTTP server makes its connections
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.write('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n')
    linger(socket)
    // read on, as an HTTP parser would
    socket.on('data', (chunk: Buffer) => (readByServer += chunk.length))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const answer = await exchange(
    (server.address() as { port: number }).port,
    async (socket) => {
      const block = Buffer.alloc(1024 * 1024)
      for (let sent = 0; !socket.destroyed && sent < 4 * lingerBytes; sent += block.length) {
        if (!socket.write(block)) await new Promise((resolve) => socket.once('drain', resolve).once('close', resolve))
      }
      socket.destroy()
    },
    { stubborn: true },
  )
  t.equal(answer.status, 400, 'the answer was read')
  // (checked every 20 ms: at loopback speed, some MiB more arrive in between)
  t.ok(readByServer > lingerBytes && readByServer < lingerBytes + 32 * 1024 * 1024, `the server read ${(readByServer / 1024 / 1024).toFixed(1)} MiB, then cut`)
})

t.test('linger leaves a connection already destroyed alone', async (t) => {
  const { linger } = await import('../src/http/linger.js')
  const { port } = await serve(t)
  const socket = connect(port, '127.0.0.1')
  await new Promise((resolve) => socket.on('connect', resolve))
  socket.destroy()
  const listeners = socket.listenerCount('end') + socket.listenerCount('close')
  linger(socket)
  t.equal(socket.listenerCount('end') + socket.listenerCount('close'), listeners, 'nothing waits on it (no timer to leak)')
})
