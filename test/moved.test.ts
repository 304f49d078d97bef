/**
 * A path a newer version dropped: its 404 says how the newer version does what the older did
 * there (src/contract/moved.ts), read from the contracts, and a client that follows it gets it.
 */
import t from 'tap'
import { loadContracts, newestSpecPath } from '../src/contract/load.js'
import { movedFrom } from '../src/contract/moved.js'
import { build, call, testKey } from './helpers/app.js'
import { editedContract } from './helpers/spec.js'

const [v1, v2] = loadContracts()

t.test("GET /v2/pets/{id}, version 1's getPet: a 404 that names version 2's request, which reads the pet over real HTTP", async (t) => {
  const app = await build(t)
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' }
  for (const name of ['Rex', 'Tom']) await fetch(`${origin}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name, categoryId: 1 }) })

  const moved = await fetch(`${origin}/v2/pets/2`, { headers })
  t.equal(moved.status, 404)
  const error = (await moved.json()) as { code: string; message: string; status: number }
  t.strictSame(error, {
    code: 'not_found',
    message:
      "No route GET /v2/pets/2: version 2 has no such path; it is version 1's getPet, GET /v1/pets/2; version 2 does it with listPets, GET /v2/pets?id=2",
    status: 404,
  })
  const [, method, url] = /; version 2 does it with listPets, (\w+) (\S+)$/.exec(error.message)!
  const followed = await fetch(new URL(url!, origin), { method, headers })
  t.equal(followed.status, 200)
  t.strictSame(
    ((await followed.json()) as { id: number; name: string }[]).map(({ id, name }) => ({ id, name })),
    [{ id: 2, name: 'Tom' }],
    'the request it names reads that pet',
  )

  // the answer is the contract's: every 404 of an unknown route is (test/helpers/contract.ts checks it)
  const checked = await call(t, app, { url: '/v2/pets/7?limit=5' })
  t.equal(
    checked.json.message,
    "No route GET /v2/pets/7: version 2 has no such path; it is version 1's getPet, GET /v1/pets/7; version 2 does it with listPets, GET /v2/pets?id=7",
  )
  t.equal(
    (await call(t, app, { url: '/v2/pets/%E2%82%AC' })).json.message.endsWith('GET /v2/pets?id=%E2%82%AC'),
    true,
    'the value the path held, written as a query value',
  )
})

t.test('other unknown paths say nothing more', async (t) => {
  const app = await build(t)
  for (const [method, url] of [
    ['DELETE', '/v2/pets/1'],
    ['GET', '/v2/pets/1/photos'],
    ['GET', '/v1/pets/1/photos'],
    ['GET', '/nothing/here'],
  ] as const) {
    const response = await call(t, app, { method, url })
    t.strictSame([response.status, response.json.message], [404, `No route ${method} ${url}`], `${method} ${url}: version 1 has no operation there either`)
  }
})

t.test('read from the contracts: the successor, its parameters, the operation of that id in the newer version', async (t) => {
  t.equal(
    movedFrom([v1!, v2!], 'GET', '/v2/pets/3'),
    ": version 2 has no such path; it is version 1's getPet, GET /v1/pets/3; version 2 does it with listPets, GET /v2/pets?id=3",
  )
  t.equal(movedFrom([v1!, v2!], 'GET', '/v2/pets'), undefined, 'a path the newer version has')
  t.equal(movedFrom([v2!], 'GET', '/v2/pets/3'), undefined, 'no older version served')
  const noSuccessor = editedContract((document) => {
    const getPet = document.paths['/pets/{petId}']!.get! as unknown as Record<string, unknown>
    delete getPet['x-successor']
    delete getPet['x-successor-parameters']
    getPet['x-successor-reason'] = 'none'
  })
  t.equal(
    movedFrom([noSuccessor, v2!], 'GET', '/v2/pets/3'),
    ": version 2 has no such path; it is version 1's getPet, GET /v1/pets/3",
    'an operation without a successor is named alone',
  )
  const withoutIdFilter = editedContract((document) => {
    const listPets = document.paths['/pets']!.get!
    listPets.parameters = listPets.parameters!.filter((parameter) => !('$ref' in parameter && parameter.$ref.endsWith('/PetIdFilter')))
  }, newestSpecPath)
  t.equal(
    movedFrom([v1!, withoutIdFilter], 'GET', '/v2/pets/3', {}),
    ": version 2 has no such path; it is version 1's getPet, GET /v1/pets/3; version 2 does it with listPets, GET /v2/pets",
    'a parameter the newer operation lacks is left out',
  )
  t.equal(v1!.successorUrl(v1!.operations.get('getPet')!), '/v1/pets', 'a successor without the values its parameters take: its URL alone')
  t.equal(v1!.successorUrl(v1!.operations.get('listPets')!), undefined, 'no successor, no URL')
  t.strictSame(v1!.pathParamsOf(v1!.operations.get('getPet')!, '/v1/pets/7'), { petId: '7' })
  t.equal(v1!.pathParamsOf(v1!.operations.get('getPet')!, '/v1/pets'), undefined, "a path that is not the operation's")
})
