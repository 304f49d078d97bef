import { Writable } from 'node:stream'
import t from 'tap'
import { type Contract, readContract } from '../src/contract/model.js'
import { type ErrorCode, errorStatus } from '../src/core/errors.js'
import { describeValidation, unavailableLog } from '../src/http/error-handler.js'
import { contractOf, loadContracts } from '../src/contract/load.js'
import { api, build, call, testKey } from './helpers/app.js'
import { sleep } from './helpers/concurrency.js'

t.test("each served document lists the codes its version sends, and no other: those its operations' answers name, and a path's 404 and 405", async (t) => {
  const catalogue = (contract: Contract) => {
    const code = (contract.document.components!.schemas!.Error as { properties: { code: Record<string, unknown> } }).properties.code
    return { codes: code['x-extensible-enum'] as string[], description: String(code.description).replace(/\s+/g, ' ') }
  }
  const contracts = loadContracts()
  for (const contract of contracts) {
    const { codes, description } = catalogue(contract)
    t.strictSame(
      codes.filter((code) => !contract.codesSent.has(code)),
      [],
      `${contract.file}: no code its version cannot send (a code is sent where an operation's answer names it, "code \`x\`" or its example's)`,
    )
    t.strictSame(
      [...contract.codesSent].filter((code) => !codes.includes(code)),
      [],
      `${contract.file}: every code its version sends (add one an operation's answer names to Error.code)`,
    )
    t.strictSame(
      [...description.matchAll(/`(\w+)` \((\d{3})/g)].map(([, code, status]) => [code, Number(status)]),
      codes.map((code) => [code, errorStatus[code as ErrorCode]]),
      `${contract.file}: its description names each, in the list's order, with its status`,
    )
  }
  t.strictSame(
    Object.keys(errorStatus).filter((code) => !contracts.some(({ errorCodes }) => errorCodes.includes(code))),
    [],
    "every code of the server's catalogue is some served version's",
  )
  const newest = contracts.at(-1)!

  // the check itself: a document that lists a code no answer of it names is told so
  const edited = structuredClone(newest.document)
  const code = (edited.components!.schemas!.Error as { properties: { code: Record<string, string[]> } }).properties.code
  code['x-extensible-enum']!.push('gone')
  const listing = contractOf(edited)
  t.strictSame(
    listing.errorCodes.filter((name) => !listing.codesSent.has(name)),
    ['gone'],
    'a code the version cannot send, listed, is found (the newest has no deprecated operation to answer gone)',
  )
  const withoutCategories = structuredClone(newest.document)
  for (const path of Object.keys(withoutCategories.paths).filter((path) => path.startsWith('/categories'))) delete withoutCategories.paths[path]
  const fewer = contractOf(withoutCategories)
  t.notOk(fewer.codesSent.has('category_name_taken'), "a code only a removed operation's answer named is no longer sent")
  t.ok(fewer.codesSent.has('not_found') && fewer.codesSent.has('method_not_allowed'), 'a path is still answered 404 and 405')
  const unanswered = structuredClone(newest.document)
  delete (unanswered.paths['/pets']!.get as { responses?: unknown }).responses
  t.strictSame([...readContract(unanswered).contract.operations.get('listPets')!.errorCodes], [], 'an operation that documents no answer names no code')
})

t.test('validation failures read as the rule that was broken', async (t) => {
  const issue = { instancePath: '/name', message: 'must match pattern "^x$"', params: {} }
  t.equal(
    describeValidation({ ...issue, keyword: 'pattern', parentSchema: { description: ' Letters only. ' } }, 'body'),
    'body/name is not valid: Letters only.',
  )
  t.equal(describeValidation({ ...issue, keyword: 'pattern' }, 'body'), 'body/name is not valid: must match pattern "^x$"')
  t.equal(describeValidation({ ...issue, keyword: 'enum', params: { allowedValues: ['a', 'b'] } }, 'querystring'), 'query/name must be one of: a, b')
  t.equal(
    describeValidation({ ...issue, instancePath: '', keyword: 'additionalProperties', params: { additionalProperty: 'x' } }, 'body'),
    "body must NOT have additional property 'x'",
  )
  t.equal(describeValidation({ ...issue, instancePath: '/petId', keyword: 'type', message: 'must be integer' }, 'params'), 'path/petId must be integer')
})

t.test('a malformed URL is a 400 in the Error shape', async (t) => {
  const app = await build(t)
  const response = await call(t, app, { url: `${api}/%` })
  t.strictSame(response.json, { code: 'invalid_request', message: `'${api}/%' is not a valid url component`, status: 400 })
})

t.test('a failure of the server is a 500 internal_error that reveals nothing, and is logged', async (t) => {
  let logs = ''
  const stream = new Writable({ write: (chunk, _encoding, done) => ((logs += chunk), done()) })
  const app = await build(t, { LOG_LEVEL: 'info', logger: { stream } })
  await app.storage.close() // the database goes away under the running app
  for (const request of [
    { url: `${api}/pets` },
    { url: `${api}/store/orders/1` },
    { method: 'POST' as const, url: `${api}/pets`, payload: { name: 'Rex', categoryId: 1 } },
  ]) {
    const response = await call(t, app, { key: 'a-stored-key-that-cannot-be-checked', ...request })
    t.strictSame(response.json, { code: 'internal_error', message: 'Internal server error', status: 500 })
  }
  // with a key from API_KEYS the request gets past authentication, to the repositories
  for (const request of [
    { url: `${api}/pets` },
    { url: `${api}/store/orders/1` },
    { method: 'POST' as const, url: `${api}/pets`, payload: { name: 'Rex', categoryId: 1 } },
  ]) {
    const response = await call(t, app, request)
    t.strictSame(response.json, { code: 'internal_error', message: 'Internal server error', status: 500 })
  }
  t.match(logs, /"level":50.*"msg":"request failed"/, 'the cause is logged')
  const access = logs.split('\n').filter((line) => line.includes('"msg":"request completed"'))
  t.equal(access.length, 6, 'one access-log line per request')
  t.match(JSON.parse(access[0]!), { res: { method: 'GET', url: `${api}/pets`, statusCode: 500 }, responseTime: Number })
  t.notMatch(logs, '"msg":"incoming request"', 'not a second line per request')
  t.notMatch(logs, testKey, 'the key is not')
  t.notMatch(logs, 'a-stored-key-that-cannot-be-checked')
})

t.test('an unavailable database is logged once per cause and interval, with the requests it failed meanwhile', async (t) => {
  const logged: { failedRequests: number; err: Error }[] = []
  const log = { error: (fields: { failedRequests: number; err: Error }) => logged.push(fields) }
  const report = unavailableLog(log as never, 100)
  const refused = Object.assign(new Error('role "app" is not permitted to log in'), { code: '28000' })
  const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
  for (let i = 0; i < 50; i++) report(refused)
  report(down)
  t.strictSame(
    logged.map(({ err, failedRequests }) => [err.message, failedRequests]),
    [
      [refused.message, 1],
      [down.message, 1],
    ],
    'each cause at once, the first time, and not again within the interval',
  )
  await sleep(120)
  report(refused)
  t.strictSame(logged.at(-1), { err: refused, failedRequests: 50 }, 'after the interval, again, with the requests it failed since')
  for (let i = 0; i < 100; i++) report(new Error(`cause ${i}`))
  const before = logged.length
  report(refused)
  t.equal(logged.length, before + 1, 'past 100 causes, those seen are forgotten: the bound holds, and a cause is logged anew')
})
