import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { request } from 'node:http'
import { type AddressInfo, createServer as createNetServer } from 'node:net'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Attributes, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api'
import SQLite from 'better-sqlite3'
import t, { type Test } from 'tap'
import type { Contract, Operation } from '../src/contract/model.js'
import { describeStatement } from '../src/ops/statement-spans.js'
import type { TraceApi } from '../src/ops/tracing.js'
import { tracingWanted } from '../src/core/config.js'
import { build, curatingTestKey, newest, servedContracts, testKey } from './helpers/app.js'
import { type Collector, otlpCollector, type ReceivedSpan } from './helpers/otlp-collector.js'
import { freshRole, postgresMissing } from './helpers/postgres.js'
import { startServer, type ServerProcess } from './helpers/processes.js'
import { type Receiver, startReceiver } from './helpers/receiver.js'

const serverKind = 2
const clientKind = 3
const errorStatus = 2

t.test('traces are on only with an OTLP endpoint, and OTEL_SDK_DISABLED turns them off', async (t) => {
  t.equal(tracingWanted({}), false, 'no endpoint: off')
  t.equal(tracingWanted({ OTEL_SERVICE_NAME: 'petstore', OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }), false, 'a blank endpoint: off')
  t.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true)
  t.equal(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true, "the traces' own endpoint")
  t.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'TRUE' }), false, 'disabled')
  t.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'false' }), true)
})

t.test("a statement's span is named by its verb and first table, from its text alone", async (t) => {
  t.same(describeStatement('sqlite', '\n  select id, name from pets where id = $1'), {
    name: 'SELECT pets',
    attributes: { 'db.system.name': 'sqlite', 'db.operation.name': 'SELECT', 'db.collection.name': 'pets' },
  })
  t.same(describeStatement('postgres', 'insert into orders (pet_id) values ($1) returning id').name, 'INSERT orders')
  t.same(describeStatement('postgres', 'update api_keys set roles = $1 where id = $2').attributes, {
    'db.system.name': 'postgresql',
    'db.operation.name': 'UPDATE',
    'db.collection.name': 'api_keys',
  })
  t.same(describeStatement('sqlite', 'delete from webhook_deliveries where finished_at < $1').name, 'DELETE webhook_deliveries')
  t.same(
    describeStatement('sqlite', 'select 1'),
    { name: 'SELECT', attributes: { 'db.system.name': 'sqlite', 'db.operation.name': 'SELECT' } },
    'no table: none named',
  )
  t.same(describeStatement('postgres', 'with gone as (delete from pets returning id) select count(*) from gone').name, 'WITH', 'a WITH names no table')
})

/** A caller's span, as a `traceparent` header carries it (W3C Trace Context). */
function callerSpan() {
  const traceId = randomBytes(16).toString('hex')
  const spanId = randomBytes(8).toString('hex')
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` }
}

/** The URL of a GET of `operation` for an object that does not exist (each path parameter an id none has). */
const missing = (contract: Contract, operation: Operation) => `${contract.basePath}${operation.path.replace(/\{[^}]+\}/g, '987654321')}`

interface Sent {
  contract: Contract
  operation: Operation
  caller: ReturnType<typeof callerSpan>
  status: number
  code: string
}

/** GETs `operation`'s URL of a missing object, with a traceparent; the answer's status and Error code. */
async function send(server: ServerProcess, contract: Contract, operationId: string): Promise<Sent> {
  const operation = contract.operations.get(operationId)!
  const caller = callerSpan()
  const response = await fetch(`${server.url}${missing(contract, operation)}`, {
    headers: { authorization: `Bearer ${testKey}`, traceparent: caller.traceparent },
  })
  const { code } = (await response.json()) as { code: string }
  return { contract, operation, caller, status: response.status, code }
}

const serverSpanOf = (spans: ReceivedSpan[], { caller }: Sent) => spans.find((span) => span.traceId === caller.traceId && span.kind === serverKind)
const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) =>
  spans.filter((span) => span.parentSpanId === parent.spanId && span.traceId === parent.traceId)

/** What the server span of `sent` and its statements' spans must say, and its access-log line. */
async function checkTrace(t: Test, spans: ReceivedSpan[], sent: Sent, server: ServerProcess, dbSystem: string, table: string) {
  const { contract, operation, caller, status, code } = sent
  const span = serverSpanOf(spans, sent)!
  t.ok(span, `the server span of ${operation.id} (version ${contract.version[0]})`)
  const route = `${contract.basePath}${operation.path}`
  t.equal(span.name, `GET ${route}`, 'named {METHOD} {route template}')
  t.equal(span.parentSpanId, caller.spanId, "its parent is the caller's span (traceparent)")
  t.equal(span.service, 'petstore-under-test', 'OTEL_SERVICE_NAME names the service')
  t.match(span.attributes, {
    'http.route': route,
    'http.request.method': 'GET',
    'http.response.status_code': status,
    'openapi.operation_id': operation.id,
    'api.version': contract.version[0],
    'openapi.stability': operation.lifecycle.level,
    'openapi.deprecated': operation.lifecycle.deprecation !== undefined,
    'error.type': code,
  })
  t.equal(status, 404, 'the missing object is answered 404')
  const statements = childrenOf(spans, span)
  t.ok(statements.length > 0, "the store's statements are the server span's children")
  for (const statement of statements) {
    t.equal(statement.kind, clientKind)
    t.equal(statement.attributes['db.system.name'], dbSystem)
    t.match(statement.attributes['db.operation.name'], /^[A-Z]+$/)
    t.notMatch(JSON.stringify(statement.attributes), '987654321', 'no parameter value in a statement span')
  }
  t.ok(
    statements.some(({ name, attributes }) => name === `SELECT ${table}` && attributes['db.collection.name'] === table),
    `a SELECT of ${table}, its table named`,
  )
  // (the log is written in the background: its line may come after the span)
  const accessLine = () =>
    server
      .stdout()
      .split('\n')
      .filter((line) => line.includes('"request completed"'))
      .map((line) => JSON.parse(line) as { trace_id?: string; span_id?: string; res: { url: string } })
      .find(({ res }) => res.url === missing(contract, operation))
  for (let waited = 0; accessLine() === undefined && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20))
  const logged = accessLine()
  t.match(logged, { trace_id: caller.traceId, span_id: span.spanId }, "the access-log line names the request's trace and span")
}

/** The operations a trace is looked at for: a read of one object of the newest version (stable), an
 * experimental one's, and the oldest version's read of a pet (its lifecycle, whatever it is, read from its model). */
const categoryRead = 'getCategory'
const orderRead = 'getOrder'
const oldest = servedContracts[0]!

t.test('http/json, SQLite: spans named by the contract, joined to the caller, with their statements; the log names the trace', async (t) => {
  const collector = await otlpCollector(t)
  const dir = mkdtempSync(join(tmpdir(), 'petstore-tracing-'))
  const server = await startServer(t, {
    DATABASE_URL: `sqlite:${join(dir, 'pets.db')}`,
    API_KEYS: testKey,
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'petstore-under-test',
    OTEL_BSP_SCHEDULE_DELAY: '50',
  })
  const sent = [await send(server, newest, categoryRead), await send(server, newest, orderRead), await send(server, oldest, 'getPet')]
  const untraced = await fetch(`${server.url}${newest.basePath}/categories`, { headers: { authorization: `Bearer ${testKey}` } })
  t.equal(untraced.status, 200)
  // outside the contract: a probe's route, and a path no route serves
  const probe = callerSpan()
  t.equal((await fetch(`${server.url}${newest.service.paths.live}`, { headers: { traceparent: probe.traceparent } })).status, 200)
  // a URL the router cannot read (Fastify's frameworkErrors, before any hook): answered, untraced
  t.equal((await fetch(`${server.url}${newest.basePath}/categories/%E0%A4%A`, { headers: { authorization: `Bearer ${testKey}` } })).status, 400)
  const nowhere = callerSpan()
  t.equal((await fetch(`${server.url}/nowhere`, { headers: { traceparent: nowhere.traceparent } })).status, 404)
  const traceOf = (spans: ReceivedSpan[], { traceId }: { traceId: string }) => spans.find((span) => span.traceId === traceId)
  const spans = await collector.until(
    (spans) =>
      sent.every((one) => serverSpanOf(spans, one) !== undefined) &&
      traceOf(spans, probe) !== undefined &&
      traceOf(spans, nowhere) !== undefined &&
      spans.some(({ name, parentSpanId }) => name === `GET ${newest.basePath}/categories` && parentSpanId === ''),
  )
  t.ok(
    spans.some(({ name, parentSpanId, kind }) => name === `GET ${newest.basePath}/categories` && parentSpanId === '' && kind === serverKind),
    'a request without traceparent begins a trace of its own (a root span)',
  )
  t.match(traceOf(spans, probe), {
    name: `GET ${newest.service.paths.live}`,
    attributes: { 'http.route': newest.service.paths.live, 'http.response.status_code': 200 },
  })
  t.notOk('openapi.operation_id' in traceOf(spans, probe)!.attributes, 'a route outside the contract has no operation')
  t.match(traceOf(spans, nowhere), { name: 'GET', attributes: { 'http.request.method': 'GET', 'http.response.status_code': 404, 'error.type': 'not_found' } })
  t.notOk('http.route' in traceOf(spans, nowhere)!.attributes, 'no route, no http.route')
  t.same([...collector.contentTypes], ['application/json'], 'exported as OTLP/JSON')
  await checkTrace(t, spans, sent[0]!, server, 'sqlite', 'categories')
  await checkTrace(t, spans, sent[1]!, server, 'sqlite', 'orders')
  await checkTrace(t, spans, sent[2]!, server, 'sqlite', 'pets')
  t.equal(serverSpanOf(spans, sent[1]!)!.attributes['openapi.stability'], 'experimental', 'an experimental operation says so')
  // a statement SQLite refuses as it runs (its table renamed under the server)
  const file = new SQLite(join(dir, 'pets.db'))
  file.exec('alter table categories rename to categories_elsewhere')
  file.close()
  const failed = await send(server, newest, categoryRead)
  t.equal(failed.status, 500)
  await collector.until((spans) => serverSpanOf(spans, failed) !== undefined)
  const failedSpan = serverSpanOf(spans, failed)!
  const failedStatement = childrenOf(spans, failedSpan).find(({ statusCode }) => statusCode === errorStatus)
  t.match(failedStatement, { name: 'SELECT categories', attributes: { 'error.type': 'SQLITE_ERROR' } }, "the statement's span: an error, with SQLite's code")
  server.child.kill('SIGTERM')
  t.equal((await server.exited).code, 0)
})

t.test('http/protobuf, PostgreSQL: spans sent at shutdown; a failed statement is an error span', { skip: postgresMissing }, async (t) => {
  const collector = await otlpCollector(t)
  const role = await freshRole(t)
  const server = await startServer(t, {
    DATABASE_URL: role.url,
    API_KEYS: testKey,
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_SERVICE_NAME: 'petstore-under-test',
    // no export before the shutdown: what arrives, arrives because SIGTERM flushed it
    OTEL_BSP_SCHEDULE_DELAY: '600000',
  })
  const read = await send(server, newest, categoryRead)
  await role.asAdmin('alter table categories rename to categories_elsewhere', { inDatabase: true })
  const failed = await send(server, newest, categoryRead)
  t.equal(failed.status, 500, 'a statement on a table gone fails the request')
  await role.asAdmin(`revoke select on orders from ${role.name}`, { inDatabase: true })
  const refused = await send(server, newest, orderRead)
  t.equal(refused.status, 503, 'a privilege taken away: the store is unavailable')
  server.child.kill('SIGTERM')
  t.equal((await server.exited).code, 0)
  const spans = await collector.until((spans) => [read, failed, refused].every((one) => serverSpanOf(spans, one) !== undefined), 10_000)
  t.same([...collector.contentTypes], ['application/x-protobuf'], 'exported as OTLP/protobuf')
  await checkTrace(t, spans, read, server, 'postgresql', 'categories')
  const failedSpan = serverSpanOf(spans, failed)!
  t.match(failedSpan.attributes, { 'http.response.status_code': 500, 'error.type': failed.code })
  t.equal(failedSpan.statusCode, errorStatus, 'a 5xx answer is an error span')
  const failedStatement = childrenOf(spans, failedSpan).find(({ attributes }) => attributes['db.collection.name'] === 'categories')!
  t.match(failedStatement, { statusCode: errorStatus, attributes: { 'error.type': '42P01' } }, "the statement's span: an error, with its SQLSTATE")
  const refusedStatement = childrenOf(spans, serverSpanOf(spans, refused)!).find(({ attributes }) => attributes['db.collection.name'] === 'orders')!
  t.match(refusedStatement, { statusCode: errorStatus, attributes: { 'error.type': 'StorageUnavailable' } }, 'a store unavailable: its class')
})

t.test('a collector that never answers: requests are answered all the same, and SIGTERM still exits 0 within the grace', async (t) => {
  // accepts connections, reads, and never answers
  const silent = createNetServer((socket) => socket.resume())
  silent.listen(0, '127.0.0.1')
  await once(silent, 'listening')
  t.teardown(() => {
    silent.close()
  })
  const server = await startServer(t, {
    DATABASE_URL: 'sqlite::memory:',
    API_KEYS: testKey,
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
    OTEL_BSP_SCHEDULE_DELAY: '10',
    // a queue of 4 spans: the spans of 20 requests overflow it while the first export hangs,
    // given up after 300 ms (the SDK reports the drops once the queue has room again)
    OTEL_BSP_MAX_QUEUE_SIZE: '4',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2',
    OTEL_BSP_EXPORT_TIMEOUT: '300',
    OTEL_LOG_LEVEL: 'warn',
    SHUTDOWN_GRACE_MS: '3000',
    METRICS_PORT: '0',
  })
  const read = async () => t.equal((await fetch(`${server.url}${newest.basePath}/categories`, { headers: { authorization: `Bearer ${testKey}` } })).status, 200)
  for (let i = 0; i < 20; i++) await read()
  const metricsUrl = /metrics at (http:\/\/\S+?\/metrics)/.exec(server.stdout())![1]!
  const droppedNow = async () => Number(/^petstore_trace_dropped_spans_total (\d+)$/m.exec(await (await fetch(metricsUrl)).text())?.[1])
  let dropped = 0
  for (let tries = 0; dropped === 0 && tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    await read()
    dropped = await droppedNow()
  }
  // (a server span for each request at least: 20, of which 4 wait and 2 at most are being sent)
  t.ok(dropped >= 20 - 6, `the spans dropped are counted in the metrics (${dropped})`)
  t.match(server.stderr(), /Dropped \d+ spans because maxQueueSize reached/, "OTEL_LOG_LEVEL: the SDK's messages are printed, as without the count")
  server.child.kill('SIGTERM')
  const { code } = await server.exited
  t.equal(code, 0, 'the spans it could not send are given up at the end of the grace, not the exit')
  t.notMatch(server.stdout(), /grace period/i)
})

/** What the server and receiver need for deliveries to 127.0.0.1, attempted at once. */
const deliveringNow = { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_MS: '20', WEBHOOK_RETRY_BASE_MS: '50' }
const tracedTo = (collector: Collector) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_SERVICE_NAME: 'petstore-under-test',
  OTEL_BSP_SCHEDULE_DELAY: '50',
})
const asKey = (caller?: { traceparent: string }) => ({
  authorization: `Bearer ${testKey}`,
  'content-type': 'application/json',
  ...(caller && { traceparent: caller.traceparent }),
})

/** Subscribes `url` to pet.created through the newest version: the subscription's id. */
async function subscribe(t: Test, server: ServerProcess, url: string): Promise<number> {
  const response = await fetch(`${server.url}${newest.basePath}/webhooks`, {
    method: 'POST',
    headers: asKey(),
    body: JSON.stringify({ url, events: ['pet.created'] }),
  })
  t.equal(response.status, 201, 'subscribed')
  return ((await response.json()) as { id: number }).id
}

/** Adds the category the pets are of (id 1). */
async function addCategory(t: Test, server: ServerProcess) {
  const category = await fetch(`${server.url}${newest.basePath}/categories`, { method: 'POST', headers: asKey(), body: JSON.stringify({ name: 'Traced' }) })
  t.equal(category.status, 201, 'a category for the pets')
}

/** Creates a pet through the newest version, with the caller's traceparent if given: its id. */
async function createPet(server: ServerProcess, name: string, caller?: { traceparent: string }): Promise<number> {
  const response = await fetch(`${server.url}${newest.basePath}/pets`, {
    method: 'POST',
    headers: asKey(caller),
    body: JSON.stringify({ name, categoryId: 1 }),
  })
  if (response.status !== 201) throw new Error(`createPet answered ${response.status}: ${await response.text()}`)
  return ((await response.json()) as { id: number }).id
}

const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/
const petOf = (body: string) => (JSON.parse(body) as { data: { id: number; name: string } }).data

/** A receiver that answers 503 to the first attempt of each pet named "… fails once", 204 to the rest. */
async function failingOnce(t: Test): Promise<Receiver> {
  const failed = new Set<number>()
  return startReceiver(t, (_n, { body }) => {
    const { id, name } = petOf(body)
    if (!name.endsWith('fails once') || failed.has(id)) return 204
    failed.add(id)
    return 503
  })
}

const attemptsIn = (spans: ReceivedSpan[], traceId: string) =>
  spans
    .filter((span) => span.traceId === traceId && span.name === 'deliver pet.created')
    .sort((a, b) => Number(a.attributes['webhook.attempt']) - Number(b.attributes['webhook.attempt']))

/**
 * Pets created together (on SQLite, in one shared commit), each by a caller of its own trace: the
 * delivery of each one's event carries a traceparent of that caller's trace, naming the span of
 * the attempt, a child of the createPet request's server span; a failed attempt and its retry are
 * two spans of the same trace.
 */
async function deliveriesContinueTheirTrace(t: Test, server: ServerProcess, collector: Collector, receiver: Receiver, store: string) {
  const callers = Array.from({ length: 4 }, callerSpan)
  const before = receiver.deliveries.length
  const ids = await Promise.all(callers.map((caller, i) => createPet(server, `Traced ${store} ${i}${i === 0 ? ' fails once' : ''}`, caller)))
  const arrived = (await receiver.waitFor(before + callers.length + 1)).slice(before)
  const spans = await collector.until((spans) => callers.every(({ traceId }, i) => attemptsIn(spans, traceId).length === (i === 0 ? 2 : 1)))
  for (const [i, caller] of callers.entries()) {
    const request = spans.find((span) => span.traceId === caller.traceId && span.kind === serverKind)!
    t.match(request, { name: `POST ${newest.basePath}/pets`, parentSpanId: caller.spanId }, `createPet ${i}: its server span joins its caller`)
    const attempts = attemptsIn(spans, caller.traceId)
    const deliveries = arrived.filter(({ body }) => petOf(body).id === ids[i])
    t.equal(deliveries.length, attempts.length, `createPet ${i}: an attempt's span for each request the receiver got`)
    for (const [n, attempt] of attempts.entries()) {
      t.match(
        attempt,
        {
          kind: clientKind,
          parentSpanId: request.spanId,
          attributes: { 'webhook.event.type': 'pet.created', 'webhook.attempt': n + 1, 'server.address': '127.0.0.1', 'http.request.method': 'POST' },
        },
        `createPet ${i}, attempt ${n + 1}: a child of the request that recorded its event`,
      )
      const [, traceId, spanId] = traceparentPattern.exec(String(deliveries[n]!.headers.traceparent)) ?? []
      t.same(
        { traceId, spanId },
        { traceId: caller.traceId, spanId: attempt.spanId },
        `createPet ${i}, attempt ${n + 1}: the receiver is sent the attempt's traceparent`,
      )
      t.notMatch(JSON.stringify(attempt.attributes), 'token=', "no part of the receiver's URL beyond its host")
    }
  }
  const [failed, retried] = attemptsIn(spans, callers[0]!.traceId)
  t.match(failed, { statusCode: errorStatus, attributes: { 'http.response.status_code': 503, 'error.type': '503' } }, 'a failed attempt is an error span')
  t.match(retried, { attributes: { 'http.response.status_code': 204 } }, 'its retry succeeded')
  t.notOk('error.type' in retried!.attributes)
}

t.test("a body that comes after its headers: the request's statements are still its span's children", async (t) => {
  const collector = await otlpCollector(t)
  const dir = mkdtempSync(join(tmpdir(), 'petstore-tracing-'))
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'pets.db')}`, API_KEYS: curatingTestKey, ...tracedTo(collector) })
  await addCategory(t, server)
  // Expect: 100-continue: the body is sent only once the server has read the headers, and so
  // reaches it in a read of its own, which Node runs outside the context the request's hooks
  // entered
  const caller = callerSpan()
  const status = await new Promise<number>((resolve, reject) => {
    const sent = request(`${server.url}${newest.basePath}/pets`, { method: 'POST', headers: { ...asKey(caller), expect: '100-continue' } })
    sent.on('continue', () => sent.end(JSON.stringify({ name: 'Late', categoryId: 1 })))
    sent.on('response', (response) => resolve(response.resume().statusCode!)).on('error', reject)
    sent.flushHeaders()
  })
  t.equal(status, 201)
  const serverSpan = (spans: ReceivedSpan[]) => spans.find((span) => span.traceId === caller.traceId && span.kind === serverKind)
  const spans = await collector.until((spans) => serverSpan(spans) !== undefined)
  t.ok(
    childrenOf(spans, serverSpan(spans)!).some(({ name }) => name === 'INSERT pets'),
    "the pet's INSERT is a child of the request's span",
  )
  server.child.kill('SIGTERM')
  t.equal((await server.exited).code, 0)
})

t.test('SQLite: each delivery attempt continues the trace of the request that recorded its event', async (t) => {
  const collector = await otlpCollector(t)
  const receiver = await failingOnce(t)
  const file = `sqlite:${join(mkdtempSync(join(tmpdir(), 'petstore-tracing-')), 'pets.db')}`
  // an event recorded while tracing was off, sent again (redeliverWebhook) by a server that traces
  const untraced = await startServer(t, { DATABASE_URL: file, API_KEYS: curatingTestKey, ...deliveringNow })
  const webhookId = await subscribe(t, untraced, receiver.url)
  await addCategory(t, untraced)
  const recorded = await createPet(untraced, 'Untraced')
  await receiver.waitFor(1)
  t.equal(receiver.deliveries[0]!.headers.traceparent, undefined, 'tracing off: no traceparent is sent')
  untraced.child.kill('SIGTERM')
  t.equal((await untraced.exited).code, 0)
  const server = await startServer(t, { DATABASE_URL: file, API_KEYS: curatingTestKey, ...deliveringNow, ...tracedTo(collector) })
  const deliveries = (await (await fetch(`${server.url}${newest.urlOf('listWebhookDeliveries', { webhookId })}`, { headers: asKey() })).json()) as {
    id: number
  }[]
  const again = await fetch(`${server.url}${newest.urlOf('redeliverWebhook', { webhookId, deliveryId: deliveries[0]!.id })}`, {
    method: 'POST',
    headers: asKey(),
  })
  t.equal(again.status, 202, 'sent again')
  await receiver.waitFor(2)
  t.equal(petOf(receiver.deliveries[1]!.body).id, recorded, 'the event recorded untraced')
  const [, traceId, spanId] = traceparentPattern.exec(String(receiver.deliveries[1]!.headers.traceparent)) ?? []
  const spans = await collector.until((spans) => attemptsIn(spans, traceId!).length > 0)
  t.match(attemptsIn(spans, traceId!), [{ spanId, parentSpanId: '' }], 'an event recorded untraced: its attempt begins a trace of its own')
  await deliveriesContinueTheirTrace(t, server, collector, receiver, 'sqlite')
  // an endpoint that cannot be reached (nothing serves HTTPS on this address): an error span, with why
  await subscribe(t, server, 'https://127.0.0.1/hooks/petstore')
  const caller = callerSpan()
  await createPet(server, 'Unreachable', caller)
  const toHttps = (spans: ReceivedSpan[]) => attemptsIn(spans, caller.traceId).find(({ attributes }) => attributes['url.scheme'] === 'https')
  t.match(
    toHttps(await collector.until((spans) => toHttps(spans) !== undefined)),
    { statusCode: errorStatus, attributes: { 'server.port': 443, 'error.type': /^(unreachable|timeout)$/ } },
    'no answer: an error span that says why',
  )
  server.child.kill('SIGTERM')
  t.equal((await server.exited).code, 0)
})

t.test('PostgreSQL: each delivery attempt continues the trace of the request that recorded its event', { skip: postgresMissing }, async (t) => {
  const collector = await otlpCollector(t)
  const receiver = await failingOnce(t)
  const role = await freshRole(t)
  const server = await startServer(t, { DATABASE_URL: role.url, API_KEYS: curatingTestKey, ...deliveringNow, ...tracedTo(collector) })
  await subscribe(t, server, receiver.url)
  await addCategory(t, server)
  await deliveriesContinueTheirTrace(t, server, collector, receiver, 'postgres')
  server.child.kill('SIGTERM')
  t.equal((await server.exited).code, 0)
})

t.test('a request whose span is not kept: no attribute is given, its statements start no span, and a read enters no context', async (t) => {
  const started: { name: string; attributes: Attributes }[] = []
  // no SDK in this process: the API's own tracer, whose spans record nothing (a sampler's "no")
  const noop = trace.getTracer('test')
  const tracer = {
    startSpan(name, options, parent) {
      started.push({ name, attributes: options?.attributes ?? {} })
      return noop.startSpan(name, options, parent)
    },
  } as Tracer
  // (nor a context manager: the context active is the last one a hook entered)
  let current = ROOT_CONTEXT
  let entered = 0
  const api: TraceApi = {
    tracer,
    extract: () => ROOT_CONTEXT,
    active: () => current,
    withSpan: (parent, span) => trace.setSpan(parent, span),
    spanOf: (of) => trace.getSpan(of),
    within: (of, work) => {
      entered++
      current = of
      return work()
    },
    kinds: { server: SpanKind.SERVER, client: SpanKind.CLIENT },
    errorStatus: SpanStatusCode.ERROR,
    inject: () => ({}),
    traceparent: () => undefined,
    continued: () => ROOT_CONTEXT,
    bind: (work) => work,
    droppedSpans: () => 0,
  }
  const app = await build(t, { tracing: api })
  const getPet = oldest.operations.get('getPet')!
  const response = await app.inject({ url: missing(oldest, getPet), headers: { authorization: `Bearer ${testKey}` } })
  t.equal(response.statusCode, 404)
  t.same(
    started.map(({ name }) => name),
    [`GET ${oldest.basePath}${getPet.path}`],
    "the request's span alone: none for the statements it made",
  )
  t.same(started[0]!.attributes, {}, 'no attribute: the samplers OTEL_TRACES_SAMPLER names read none')
  t.equal(entered, 0, 'a read not kept enters no context')
  // a write not kept still has its context: the events it records keep its trace
  const created = await app.inject({ method: 'POST', url: `${oldest.basePath}/pets`, headers: { authorization: `Bearer ${testKey}` }, payload: { name: 7 } })
  t.equal(created.statusCode, 400)
  t.equal(started.length, 2, 'the write has its span, not kept')
  t.equal(entered, 2, 'a write not kept enters its context, and again once its body is read')
})
