/**
 * The newest version served alone, as it will be once the versions before it have reached their
 * sunset: nothing of the service needs an older one. A round of calls of every kind (categories
 * and pets, orders, a webhook and its delivery, the published document, the documentation page and
 * the changelog, the unknown route, the first start's key), each answer checked against the newest
 * document alone (call() judges by app.contracts, which is that one document here), each delivery
 * against its `webhooks`.
 */
import { mock } from 'node:test'
import t from 'tap'
import { issueFirstKey } from '../src/auth/first-key.js'
import { api, build, call, newest, servedContracts } from './helpers/app.js'
import { startReceiver, verified } from './helpers/receiver.js'
import { requestExamples } from './helpers/spec.js'

/** A key that may add categories, besides the default roles. */
const curatorKey = 'curator-key-4b1e7f'
const curator = `${curatorKey}:${[...newest.roles.defaults, 'categories:write'].join('+')}`
/** Receivers listen on 127.0.0.1, over http: the test allows both. */
const receivable = { WEBHOOK_ALLOW_HTTP: true, WEBHOOK_ALLOW_PRIVATE: true, WEBHOOK_POLL_MS: 20 }

t.test(`${newest.file} alone: categories, pets, orders and webhooks, each answer as its document says`, async (t) => {
  const app = await build(t, { contracts: [newest], API_KEYS: [curator], ...receivable })
  t.strictSame(app.contracts, [newest], 'one version served')
  const key = curatorKey
  const receiver = await startReceiver(t, undefined, { contract: newest })
  const hook = await call(t, app, {
    method: 'POST',
    url: newest.urlOf('createWebhook'),
    payload: { url: receiver.url, events: ['pet.created', 'order.placed'] },
    key,
  })
  t.equal(hook.status, 201)
  t.equal(hook.headers.location, newest.urlOf('getWebhook', { webhookId: hook.json.id }))

  const [bird] = requestExamples(newest, 'createCategory')
  const category = await call(t, app, { method: 'POST', url: newest.urlOf('createCategory'), payload: bird!.value as object, key })
  t.equal(category.status, 201)
  t.equal((await call(t, app, { url: newest.urlOf('getCategory', { categoryId: category.json.id }), key })).status, 200)

  const pet = await call(t, app, { method: 'POST', url: newest.urlOf('createPet'), payload: { name: 'Rex', categoryId: category.json.id }, key })
  t.equal(pet.status, 201)
  t.strictSame(pet.json.category, category.json, 'the pet shows its category')
  t.equal(pet.headers.location, `${newest.urlOf('listPets')}?id=${pet.json.id}`)
  const unknown = await call(t, app, { method: 'POST', url: newest.urlOf('createPet'), payload: { name: 'Tom', categoryId: category.json.id + 1 }, key })
  t.match(unknown, { status: 422, json: { code: 'category_not_found' } }, 'a category that does not exist')

  const order = await call(t, app, { method: 'POST', url: newest.urlOf('placeOrder'), payload: { petId: pet.json.id }, key })
  t.equal(order.status, 201)
  const orderId = order.json.id
  t.equal((await call(t, app, { url: newest.urlOf('getOrder', { orderId }), key })).json.status, 'placed')
  t.equal((await call(t, app, { method: 'PATCH', url: newest.urlOf('updateOrder', { orderId }), payload: { status: 'delivered' }, key })).status, 200)
  t.strictSame((await call(t, app, { url: `${newest.urlOf('listPets')}?id=${pet.json.id}`, key })).json, [{ ...pet.json, status: 'sold' }], 'the pet is sold')

  const events = (await receiver.waitFor(2)).map((delivery) => verified(t, delivery, hook.json.secret))
  t.strictSame(events.map(({ type }) => type).sort(), ['order.placed', 'pet.created'])
  t.strictSame(events.find(({ type }) => type === 'pet.created').data, pet.json, 'the event shows the pet as the answer did')
  const deliveries = await call(t, app, { url: newest.urlOf('listWebhookDeliveries', { webhookId: hook.json.id }), key })
  t.equal(deliveries.json.length, 2)
})

t.test(`${newest.file} alone: its document, documentation page and changelog; nothing of the versions before it`, async (t) => {
  const app = await build(t, { contracts: [newest] })
  const { paths } = newest.service
  const yaml = await call(t, app, { url: paths.yaml, key: null })
  t.equal(yaml.body, newest.source, 'the document, byte for byte')
  t.strictSame((await call(t, app, { url: paths.json, key: null })).json, newest.document)
  const page = await call(t, app, { url: paths.docs, key: null })
  t.equal(page.status, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  const initializer = await call(t, app, { url: `${paths.docs}static/swagger-initializer.js`, key: null })
  t.match(
    initializer.body,
    `"urls":[{"url":"${paths.docs}json","name":"${newest.document.info.title} — version ${newest.version[0]}"}]`,
    'the page shows its document, and only it',
  )
  t.notMatch((await call(t, app, { url: `${paths.docs}json`, key: null })).json.info.description, 'Other versions', 'and links no version that is not served')
  t.equal((await call(t, app, { url: paths.changelog, key: null })).status, 200)

  const root = await call(t, app, { url: '/', key: null })
  t.strictSame(
    root.json,
    {
      code: 'not_found',
      message: `No route GET /: the API is under ${api}; its documentation is at ${paths.docs} and its contract at ${paths.yaml}`,
      status: 404,
    },
    'the root points to this version only',
  )
  for (const older of servedContracts.filter((contract) => contract !== newest)) {
    for (const url of [older.urlOf('listPets'), older.service.paths.yaml, older.service.paths.docs]) {
      t.strictSame((await call(t, app, { url })).json, { code: 'not_found', message: `No route GET ${url}`, status: 404 }, `${url}: not served`)
    }
  }
})

t.test(`${newest.file} alone: the first start's key, and the request it shows, work`, async (t) => {
  const app = await build(t, { contracts: [newest], API_KEYS: [] })
  const written: string[] = []
  const write = mock.method(process.stdout, 'write', (text: string) => void written.push(text))
  try {
    await issueFirstKey(app, 'http://127.0.0.1:3000')
  } finally {
    write.mock.restore()
  }
  const shown = written.join('')
  const [, key, url] = /curl -H "Authorization: Bearer ([^"]+)" http:\/\/127\.0\.0\.1:3000(\S+)/.exec(shown) ?? []
  t.equal(url, newest.urlOf('listPets'), 'its request is of this version')
  t.equal((await call(t, app, { url: url!, key: key! })).status, 200, 'and is answered')
})
