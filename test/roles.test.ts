/**
 * Roles, from the spec alone (every served version's; the newest's where one is edited): the catalogue (x-roles of bearerAuth) and what each
 * operation's `security` names. A key without a needed role is a 403, after the 401 of a missing
 * key and before the 400 of a bad request; editing `security` in a copy of the spec changes what
 * the server lets through; API_KEYS entries may carry roles; the keys CLI names the catalogue.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { OpenAPIV3 } from 'openapi-types'
import t from 'tap'
import { newestSpecPath } from '../src/contract/load.js'
import type { Contract } from '../src/contract/model.js'
import { aCategory, api, build, call, newest, servedContracts } from './helpers/app.js'
import { runMain } from './helpers/main.js'
import { main } from '../scripts/keys.js'
import { editedContract } from './helpers/spec.js'

/** the newest version's catalogue, which keys are issued from (the roles of the versions before it are among it) */
const { roles } = newest
const allRoles = [...roles.roles.keys()]
/** The newest version's document after `edit`. */
const edited = (edit: (document: OpenAPIV3.Document) => void) => editedContract(edit, newestSpecPath)
/** What a spec the server refuses is told: its file, then `what`. */
const refusal = (what: string) => new RegExp(`^${newest.file.replaceAll('.', '\\.')}: ${what}`)
/** API_KEYS' way to write a key with roles */
const entry = (key: string, given: readonly string[]) => `${key}:${given.join('+')}`

t.test('the catalogue: every role the brief of the service names; all but staff and who adds categories given by default', async (t) => {
  t.strictSame(allRoles, ['pets:read', 'pets:write', 'categories:write', 'orders:read', 'orders:write', 'orders:admin', 'webhooks:read', 'webhooks:write'])
  t.strictSame(roles.defaults, ['pets:read', 'pets:write', 'orders:read', 'orders:write', 'webhooks:read', 'webhooks:write'])
  t.strictSame(roles.staff, ['orders:admin'])
  for (const contract of servedContracts) {
    t.strictSame(contract.roles.defaults, roles.defaults, `${contract.file}: a key holds the same roles in every version`)
    for (const operation of contract.operations.values()) {
      t.ok(operation.roles!.flat().length > 0, `${contract.file}: ${operation.id} names the roles it needs`)
    }
  }
})

/** A request of `operation` with every path parameter `value`; a body that breaks its schema
 * when it takes one (unknown properties are refused), and a limit out of range when it has one. */
function requestOf(contract: Contract, operationId: string, value: string) {
  const operation = contract.operations.get(operationId)!
  const url = contract.basePath + operation.path.replace(/\{[^}]+\}/g, value)
  const parameters = (operation.definition.parameters ?? []) as OpenAPIV3.ReferenceObject[]
  const limited = parameters.some(({ $ref }) => $ref === '#/components/parameters/Limit')
  return {
    method: operation.method as 'GET',
    url: limited ? `${url}?limit=0` : url,
    ...(operation.definition.requestBody !== undefined && { payload: { unknownProperty: 1 } }),
  }
}

t.test('each operation of each version refuses a key without its roles: 401 before 403 before 400', async (t) => {
  const keys = new Map<string, string>()
  // (every role: createCategory's is given to no key by default)
  const API_KEYS = [entry('full-key-000001', allRoles)]
  const operations = servedContracts.flatMap((contract) => [...contract.operations.values()].map((operation) => ({ contract, operation })))
  for (const { operation } of operations) {
    if (keys.has(operation.id)) continue
    // every role but those the operation needs
    const needed = new Set(operation.roles!.flat())
    const key = `narrow-key-${operation.id}`
    keys.set(operation.id, key)
    API_KEYS.push(
      entry(
        key,
        allRoles.filter((role) => !needed.has(role)),
      ),
    )
  }
  const app = await build(t, { API_KEYS })
  for (const { contract, operation } of operations) {
    const needed = operation.roles![0]!
    const bad = requestOf(contract, operation.id, 'x')
    const what = `${contract.basePath} ${operation.id}`
    const narrow = await call(t, app, { ...bad, key: keys.get(operation.id)! })
    t.strictSame(
      narrow.json,
      { code: 'forbidden', message: `This API key lacks the role ${needed.join(' and ')}, which ${operation.id} needs`, status: 403 },
      `${what}: 403 for a key without ${needed.join(', ')}, though the request is bad too`,
    )
    t.equal((await call(t, app, { ...bad, key: null })).status, 401, `${what}: 401 without a key comes first`)
    t.equal((await call(t, app, { ...bad, key: 'wrong' })).status, 401, `${what}: 401 for a wrong key`)
    const full = await call(t, app, { ...bad, key: 'full-key-000001' })
    // (listWebhooks takes neither parameter nor body: nothing to get wrong)
    if (operation.id !== 'listWebhooks') t.equal(full.status, 400, `${what}: a key with its roles is told what is wrong (400)`)
  }
})

t.test('editing security in a copy of the spec changes what the server lets through', async (t) => {
  const changedSpec = edited((document) => {
    document.paths['/pets']!.get!.security = [{ bearerAuth: ['orders:admin'] }]
    document.paths['/pets']!.post!.security = [{ bearerAuth: ['pets:read'] }, { bearerAuth: ['webhooks:read', 'webhooks:write'] }]
  })
  const readOnly = entry('read-only-key1', ['pets:read'])
  const webhooksOnly = entry('webhooks-key-1', ['webhooks:read', 'webhooks:write'])
  const halfWebhooks = entry('webhooks-key-2', ['webhooks:read'])
  const staff = entry('staff-key-0001', ['orders:admin'])
  const options = { API_KEYS: ['default-key-01', readOnly, webhooksOnly, halfWebhooks, staff] }
  const [original, changed] = [await build(t, options), await build(t, { ...options, contract: changedSpec })]
  const list = { url: `${api}/pets` }
  const create = { method: 'POST' as const, url: `${api}/pets`, payload: { name: 'Rex', categoryId: await aCategory(changed) } }

  t.equal((await call(t, original, { ...list, key: 'default-key-01' })).status, 200, 'as written: a default key lists pets')
  t.equal((await call(t, changed, { ...list, key: 'default-key-01' })).status, 403, 'edited: listPets needs orders:admin')
  t.equal((await call(t, changed, { ...list, key: 'staff-key-0001' })).status, 200, 'which staff hold')

  t.equal((await call(t, original, { ...create, key: 'read-only-key1' })).status, 403, 'as written: pets:read cannot create')
  t.equal((await call(t, changed, { ...create, key: 'read-only-key1' })).status, 201, 'edited: it can')
  t.equal((await call(t, changed, { ...create, key: 'webhooks-key-1' })).status, 201, 'as can the other alternative, both its roles held')
  const half = await call(t, changed, { ...create, key: 'webhooks-key-2' })
  t.equal(half.status, 403, 'but not half of it')
  t.equal(half.json.message, 'This API key lacks the role pets:read, which createPet needs')
})

/** An edit of the spec: the x-roles of the event order.placed set to `roles`. */
const eventRoles = (roles: unknown) => (document: OpenAPIV3.Document) => {
  const webhooks = (document as unknown as { webhooks: Record<string, { post: Record<string, unknown> }> }).webhooks
  webhooks['order.placed']!.post['x-roles'] = roles
}

t.test('a spec whose roles cannot be enforced is refused at startup, saying why', async (t) => {
  t.throws(
    () => edited((document) => void (document.paths['/pets']!.get!.security = [{ bearerAuth: ['pets:reed'] }])),
    refusal("operation listPets: needs pets:reed, which bearerAuth's x-roles does not list"),
  )
  t.throws(
    () =>
      edited((document) => {
        const scheme = document.components!.securitySchemes!.bearerAuth as unknown as { 'x-roles': Record<string, object> }
        scheme['x-roles']['pets:read'] = { description: 'no default said' }
      }),
    /role pets:read of bearerAuth must say whether it is given by default/,
  )
  t.throws(
    () =>
      edited((document) => {
        const scheme = document.components!.securitySchemes!.bearerAuth as unknown as { 'x-roles': Record<string, object> }
        scheme['x-roles']['categories:write'] = { ...scheme['x-roles']['categories:write'], firstKey: 'yes' }
      }),
    /role categories:write of bearerAuth: firstKey is true or false, not "yes"/,
  )
  t.throws(
    () => edited((document) => void delete (document.components!.securitySchemes!.bearerAuth as { 'x-roles'?: unknown })['x-roles']),
    refusal("operation listPets: needs pets:read, which bearerAuth's x-roles does not list"),
    'a spec without a catalogue names roles no key can hold',
  )
  t.throws(() => edited(eventRoles(['orders:reed'])), refusal("event order.placed: needs orders:reed, which bearerAuth's x-roles does not list"))
  t.throws(() => edited(eventRoles('orders:read')), refusal('event order.placed: x-roles must be a list of role names'))
  t.throws(() => edited(eventRoles([1])), /must be a list of role names/)
})

t.test('the roles each event needs, from its x-roles under webhooks: those of the operations that read what it carries', async (t) => {
  const { events } = newest
  t.strictSame(
    ['pet.created', 'pet.status_changed', 'order.placed', 'order.status_changed'].map((type) => events.get(type)!.roles),
    [['pets:read'], ['pets:read'], ['orders:read'], ['orders:read']],
  )
  t.strictSame(edited(eventRoles(undefined)).events.get('order.placed')!.roles, [], 'an event that names none needs none')
  t.equal(events.get('pet.deleted'), undefined, 'one the spec lacks is not an event')
  t.strictSame(newest.rolesOfEvent('pet.deleted'), [], 'and needs no role')
  t.strictSame(newest.rolesOfEvent('order.placed'), ['orders:read'])
})

t.test('an operation whose security names no role lets every valid key in', async (t) => {
  const open = edited((document) => void (document.paths['/pets']!.get!.security = [{ bearerAuth: [] }]))
  const app = await build(t, { contract: open, API_KEYS: [entry('orders-key-01', ['orders:read'])] })
  t.equal((await call(t, app, { url: `${api}/pets`, key: 'orders-key-01' })).status, 200)
  t.equal((await call(t, app, { url: `${api}/pets`, key: null })).status, 401, 'but a key it needs')
  t.equal((await call(t, app, { method: 'POST', url: `${api}/pets`, payload: { name: 'Rex', categoryId: 1 }, key: 'orders-key-01' })).status, 403)
})

t.test('API_KEYS: KEY holds the default roles, KEY:role+role those; an unknown role stops the start', async (t) => {
  const app = await build(t, { API_KEYS: ['plain-key-0001', entry('reader-key-001', ['pets:read'])] })
  const create = { method: 'POST' as const, url: `${api}/pets`, payload: { name: 'Rex', categoryId: await aCategory(app) } }
  t.equal((await call(t, app, { ...create, key: 'plain-key-0001' })).status, 201)
  t.equal((await call(t, app, { url: `${api}/pets`, key: 'reader-key-001' })).status, 200)
  t.equal((await call(t, app, { ...create, key: 'reader-key-001' })).status, 403)
  t.equal((await call(t, app, { ...create, key: 'reader-key-001:pets:read' })).status, 401, 'the roles are not part of the key')
  t.equal((await call(t, app, { url: `${api}/store/orders`, key: 'plain-key-0001' })).status, 200)
  await t.rejects(
    build(t, { API_KEYS: [entry('k1', ['pets:read', 'pets:delete'])] }),
    /^invalid configuration: API_KEYS names the role pets:delete, which is not one of pets:read, pets:write, categories:write, orders:read, orders:write, orders:admin, webhooks:read, webhooks:write$/,
  )
})

t.test('keys CLI: the roles command; --role checked against the catalogue (exit 2)', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'petstore-roles-')), 'keys.db')
  const cases: [string[], RegExp][] = [
    [
      ['create', '--name', 'ci', '--role', 'pets:read', '--role', 'pets:delete'],
      /unknown role "pets:delete": the roles are pets:read, pets:write, categories:write, orders:read, orders:write, orders:admin, webhooks:read, webhooks:write\n/,
    ],
    [['list', '--role', 'pets:read'], /--role goes with create and set-roles only/],
    [['set-roles', '1'], /set-roles needs --role ROLE/],
    [['set-roles', '--role', 'pets:read'], /set-roles takes one ID/],
  ]
  const results = await Promise.all([...cases.map(([args]) => runMain(main, args, { DATABASE_URL: `sqlite:${file}` })), runMain(main, ['roles'])])
  cases.forEach(([args, message], i) => {
    const { code, stderr } = results[i]!
    t.equal(code, 2, `keys ${args.join(' ')}`)
    t.match(stderr, message)
  })
  const listed = results[cases.length]!
  t.equal(listed.code, 0)
  t.strictSame(
    listed.stdout
      .trimEnd()
      .split('\n')
      .map((row) => row.split(/ {2,}/).slice(0, 2)),
    [['role', 'default'], ...[...roles.roles].map(([name, role]) => [name, role.default ? 'yes' : 'no'])],
    `roles: the catalogue of ${newest.file}, and which roles are given by default`,
  )
  t.match(listed.stdout, /orders:admin +no +Store staff/)
})
