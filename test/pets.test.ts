/**
 * Pets: what every version shares (NewPet's rules, bodies, pages, unknown routes) against each
 * served version or the newest; version 1's own shapes (`categoryId`, getPet, any category id)
 * against version 1.
 */
import t from 'tap'
import { aCategory, api, build, call, servedContracts } from './helpers/app.js'

const rex = { name: 'Rex', categoryId: 1 }

t.test('version 1: createPet stores a pet and answers 201 with it, its id and its Location', async (t) => {
  const app = await build(t)
  const created = await call(t, app, { method: 'POST', url: '/v1/pets', payload: { ...rex, status: 'pending' } })
  t.equal(created.status, 201)
  t.strictSame(created.json, { id: 1, name: 'Rex', categoryId: 1, status: 'pending' })
  t.equal(created.headers.location, '/v1/pets/1')
  const fetched = await call(t, app, { url: '/v1/pets/1' })
  t.strictSame(fetched.json, created.json)
})

t.test('a pet created without status is available', async (t) => {
  const app = await build(t)
  const created = await call(t, app, { method: 'POST', url: `${api}/pets`, payload: { ...rex, categoryId: await aCategory(app) } })
  t.equal(created.json.status, 'available')
})

t.test('version 1: createPet takes the largest category id JavaScript holds exactly (a category need not exist), and names up to 100 characters', async (t) => {
  const app = await build(t)
  const pet = { name: 'é'.repeat(100), categoryId: Number.MAX_SAFE_INTEGER }
  const created = await call(t, app, { method: 'POST', url: '/v1/pets', payload: pet })
  t.equal(created.status, 201)
  t.match(created.json, pet)
})

t.test('createPet refuses what breaks NewPet with 400 invalid_request, naming the problem', async (t) => {
  const app = await build(t)
  const cases: [unknown, RegExp][] = [
    [{ categoryId: 1 }, /body must have required property 'name'/],
    [{ name: 'Rex' }, /body must have required property 'categoryId'/],
    [{ ...rex, categoryId: '12' }, /body\/categoryId must be integer/],
    [{ ...rex, categoryId: 1.5 }, /body\/categoryId must be integer/],
    [{ ...rex, categoryId: 0 }, /body\/categoryId must be >= 1/],
    [{ ...rex, categoryId: 2 ** 53 }, /body\/categoryId must be <= 9007199254740991/],
    [{ ...rex, status: 'lost' }, /body\/status must be one of: available, pending, sold/],
    [{ ...rex, name: '' }, /body\/name must NOT have fewer than 1 characters/],
    [{ ...rex, name: 'x'.repeat(101) }, /body\/name must NOT have more than 100 characters/],
    [{ ...rex, name: '   ' }, /body\/name is not valid: The pet's name/],
    [{ ...rex, name: 'Re\nx' }, /body\/name is not valid/],
    [{ ...rex, name: 12 }, /body\/name must be string/],
    [{ ...rex, owner: 'Ann' }, /body must NOT have additional property 'owner'/],
    [[rex], /body must be object/],
    [null, /body must be object/],
  ]
  for (const url of servedContracts.map((contract) => contract.urlOf('createPet'))) {
    for (const [payload, message] of cases) {
      const response = await call(t, app, {
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify(payload),
      })
      t.equal(response.status, 400, `${url} ${JSON.stringify(payload)}`)
      t.equal(response.json.code, 'invalid_request')
      t.match(response.json.message, message)
    }
  }
  const list = await call(t, app, { url: `${api}/pets` })
  t.strictSame(list.json, [], 'nothing invalid was stored')
})

t.test('createPet: malformed JSON is 400 malformed_json; a missing or empty body is 400', async (t) => {
  const app = await build(t)
  const json = { 'content-type': 'application/json' }
  for (const url of servedContracts.map((contract) => contract.urlOf('createPet'))) {
    const malformed = await call(t, app, { method: 'POST', url, headers: json, payload: '{"name": "Rex",' })
    t.strictSame(malformed.json, { code: 'malformed_json', message: 'The request body is not valid JSON', status: 400 })
    const poisoned = await call(t, app, { method: 'POST', url, headers: json, payload: '{"__proto__": {"x": 1}}' })
    t.strictSame(poisoned.json, {
      code: 'invalid_request',
      message: 'The request body must not hold the property "__proto__" or "constructor.prototype"',
      status: 400,
    })
    const empty = await call(t, app, { method: 'POST', url, headers: json, payload: '' })
    t.strictSame(empty.json, { code: 'invalid_request', message: 'The request body is empty: send a JSON object', status: 400 })
    const missing = await call(t, app, { method: 'POST', url })
    t.strictSame(missing.json, { code: 'invalid_request', message: 'A request body is required: send a JSON object', status: 400 })
  }
})

t.test('createPet: any body but JSON is 415; a body over 16 KiB is 413', async (t) => {
  const app = await build(t)
  await aCategory(app)
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
    const response = await call(t, app, { method: 'POST', url: `${api}/pets`, headers: { 'content-type': type }, payload: 'name=Rex' })
    t.equal(response.status, 415, type)
    t.equal(response.json.code, 'unsupported_media_type')
    t.match(response.json.message, type)
  }
  const large = await call(t, app, {
    method: 'POST',
    url: `${api}/pets`,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ ...rex, padding: 'x'.repeat(16 * 1024) }),
  })
  t.equal(large.status, 413)
  t.strictSame(large.json, { code: 'payload_too_large', message: 'The request body is larger than 16384 bytes', status: 413 })
  const untyped = await call(t, app, { method: 'POST', url: `${api}/pets`, payload: Buffer.from('{"name":"Rex","categoryId":1}') })
  t.strictSame(untyped.json, { code: 'unsupported_media_type', message: 'Unsupported media type "none": send application/json', status: 415 })
  const charset = await call(t, app, {
    method: 'POST',
    url: `${api}/pets`,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    payload: JSON.stringify(rex),
  })
  t.equal(charset.status, 201, 'application/json with a charset is JSON')
})

t.test('listPets pages in id order, filters by status and links to the next page', async (t) => {
  const app = await build(t)
  const statuses = ['available', 'sold', 'pending']
  const categories = [await aCategory(app, 'Bird'), await aCategory(app, 'Rodent'), await aCategory(app, 'Fish')]
  for (let i = 0; i < 45; i++) {
    await call(t, app, { method: 'POST', url: `${api}/pets`, payload: { name: `Pet ${i}`, categoryId: categories[i % 3], status: statuses[i % 3] } })
  }
  const first = await call(t, app, { url: `${api}/pets` })
  t.equal(first.json.length, 20, 'at most 20 without limit')
  t.strictSame(
    first.json.map((pet: { id: number }) => pet.id),
    Array.from({ length: 20 }, (_, i) => i + 1),
  )
  t.equal(first.headers.link, `<${api}/pets?limit=20&after=20>; rel="next"`)

  const second = await call(t, app, { url: `${api}/pets?limit=20&after=20` })
  t.equal(second.json[0].id, 21)
  const last = await call(t, app, { url: `${api}/pets?after=40` })
  t.equal(last.json.length, 5)
  t.notOk(last.headers.link, 'no next link on the last page')

  const sold = await call(t, app, { url: `${api}/pets?status=sold&limit=10` })
  t.equal(sold.json.length, 10)
  t.ok(sold.json.every((pet: { status: string }) => pet.status === 'sold'))
  t.equal(sold.headers.link, `<${api}/pets?limit=10&status=sold&after=${sold.json[9].id}>; rel="next"`)
  const soldRest = await call(t, app, { url: `${api}/pets?status=sold&limit=10&after=${sold.json[9].id}` })
  t.equal(soldRest.json.length, 5)
  t.notOk(soldRest.headers.link)

  const exact = await call(t, app, { url: `${api}/pets?limit=100` })
  t.equal(exact.json.length, 45)
  t.notOk(exact.headers.link)
  const one = await call(t, app, { url: `${api}/pets?limit=1&unknown=ignored` })
  t.equal(one.json.length, 1)
})

t.test('listPets refuses bad parameters with 400 invalid_request', async (t) => {
  const app = await build(t)
  const cases: [string, RegExp][] = [
    ['limit=0', /query\/limit must be >= 1/],
    ['limit=101', /query\/limit must be <= 100/],
    ['limit=abc', /query\/limit must be an integer in decimal digits/],
    ['limit=1.5', /query\/limit must be an integer in decimal digits/],
    ['limit=1&limit=2', /query\/limit must be an integer in decimal digits/],
    ['status=lost', /query\/status must be one of: available, pending, sold/],
    ['after=-1', /query\/after must be an integer in decimal digits/],
  ]
  for (const url of servedContracts.map((contract) => contract.urlOf('listPets'))) {
    for (const [query, message] of cases) {
      const response = await call(t, app, { url: `${url}?${query}` })
      t.equal(response.status, 400, `${url}?${query}`)
      t.match(response.json.message, message)
    }
  }
})

t.test('version 1: getPet answers 404 not_found for an unknown id and 400 for an id that cannot be one', async (t) => {
  const app = await build(t)
  const missing = await call(t, app, { url: '/v1/pets/42' })
  t.strictSame(missing.json, { code: 'not_found', message: 'Pet 42 not found', status: 404 })
  for (const id of ['abc', '0', '-1', '1.5', '9007199254740992']) {
    const response = await call(t, app, { url: `/v1/pets/${id}` })
    t.equal(response.status, 400, id)
    t.match(response.json.message, /^path\/petId /)
  }
})

t.test('unknown paths are 404 not_found; a known path with another method is 405 with Allow', async (t) => {
  const app = await build(t)
  // (a path an older version serves, as /v2/pets/1 is version 1's getPet, says more: test/moved.test.ts)
  for (const url of ['/v9/pets', `${api}/pets/1/owner`, `${api}/cats`, '/docs']) {
    const response = await call(t, app, { url })
    t.strictSame(response.json, { code: 'not_found', message: `No route GET ${url}`, status: 404 }, url)
  }
  // the root, where a person looks first, says where to go, to every version (and HEAD is a 404 too, without a body)
  const each = (read: (contract: (typeof servedContracts)[number]) => string) => servedContracts.map(read).join(' and ')
  for (const url of ['/', '/?page=1']) {
    const root = await call(t, app, { url, key: null })
    t.strictSame(
      root.json,
      {
        code: 'not_found',
        message: `No route GET /: the API is under ${each(({ basePath }) => basePath)}; its documentation is at ${each(({ service }) => service.paths.docs)} and its contract at ${each(({ service }) => service.paths.yaml)}`,
        status: 404,
      },
      url,
    )
  }
  t.equal((await call(t, app, { method: 'HEAD', url: '/', key: null })).status, 404)
  for (const [method, url, allow] of [
    ['DELETE', `${api}/store/orders/1`, 'GET, HEAD, PATCH'],
    ['PUT', `${api}/pets?limit=1`, 'GET, HEAD, POST'],
    ['POST', `${api}/store/orders/abc`, 'GET, HEAD, PATCH'],
    ['OPTIONS', `${api}/pets`, 'GET, HEAD, POST'],
  ] as const) {
    const response = await call(t, app, { method, url, key: null })
    t.equal(response.status, 405, `${method} ${url}`)
    t.equal(response.headers.allow, allow)
    const path = url.split('?')[0]
    t.strictSame(response.json, { code: 'method_not_allowed', message: `${method} is not served at ${path}; it takes ${allow}`, status: 405 })
  }
})
