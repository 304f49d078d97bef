/**
 * A path a newer version dropped: its 404 says how the newer version does what the older did
 * there (src/contract/moved.ts), read from the contracts, and a client that follows it gets it.
 */
import t from 'tap'
import { movedFrom } from '../src/contract/moved.js'
import type { Contract } from '../src/contract/model.js'
import { getPetFromList } from '../src/versions/changes/get-pet.js'
import { build, call, testKey } from './helpers/app.js'
import { editedContract } from './helpers/spec.js'
import { ledToBy, newerThan, nextAfter, sourceOf } from './helpers/version-roles.js'

/** The version whose getPet the next one dropped (the version get-pet leads to), and that next
 * one, which does it with listPets. */
const older = ledToBy(getPetFromList)
const newer = nextAfter(older)
const [o, n] = [older.basePath, newer.basePath]

/** What a 404 at `${version.basePath}/pets/{id}` adds: `older`'s getPet, and `version`'s listPets
 * with `search` (none where the successor is not named). */
const said = (version: Contract, id: string, search?: string) =>
  `: version ${version.version[0]} has no such path; it is version ${older.version[0]}'s getPet, GET ${o}/pets/${id}` +
  (search === undefined ? '' : `; version ${version.version[0]} does it with listPets, GET ${version.basePath}/pets${search}`)

t.test(
  `GET ${n}/pets/{id}, version ${older.version[0]}'s getPet: a 404 that names version ${newer.version[0]}'s request, which reads the pet over real HTTP`,
  async (t) => {
    const app = await build(t)
    const origin = await app.listen({ host: '127.0.0.1', port: 0 })
    const headers = { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' }
    for (const name of ['Rex', 'Tom']) await fetch(`${origin}${o}/pets`, { method: 'POST', headers, body: JSON.stringify({ name, categoryId: 1 }) })

    const moved = await fetch(`${origin}${n}/pets/2`, { headers })
    t.equal(moved.status, 404)
    const error = (await moved.json()) as { code: string; message: string; status: number }
    t.strictSame(error, { code: 'not_found', message: `No route GET ${n}/pets/2${said(newer, '2', '?id=2')}`, status: 404 })
    const [, method, url] = new RegExp(`; version ${newer.version[0]} does it with listPets, (\\w+) (\\S+)$`).exec(error.message)!
    const followed = await fetch(new URL(url!, origin), { method, headers })
    t.equal(followed.status, 200)
    t.strictSame(
      ((await followed.json()) as { id: number; name: string }[]).map(({ id, name }) => ({ id, name })),
      [{ id: 2, name: 'Tom' }],
      'the request it names reads that pet',
    )

    // the answer is the contract's: every 404 of an unknown route is (test/helpers/contract.ts
    // checks it); every version after the one with getPet names it, and does it with its own listPets
    for (const version of newerThan(older)) {
      const b = version.basePath
      const checked = await call(t, app, { url: `${b}/pets/7?limit=5` })
      t.equal(checked.json.message, `No route GET ${b}/pets/7${said(version, '7', '?id=7')}`)
      t.equal(
        (await call(t, app, { url: `${b}/pets/%E2%82%AC` })).json.message.endsWith(`GET ${b}/pets?id=%E2%82%AC`),
        true,
        'the value the path held, written as a query value',
      )
    }
  },
)

t.test('other unknown paths say nothing more', async (t) => {
  const app = await build(t)
  for (const [method, url] of [
    ['DELETE', `${n}/pets/1`],
    ['GET', `${n}/pets/1/photos`],
    ['GET', `${o}/pets/1/photos`],
    ['GET', '/nothing/here'],
  ] as const) {
    const response = await call(t, app, { method, url })
    t.strictSame(
      [response.status, response.json.message],
      [404, `No route ${method} ${url}`],
      `${method} ${url}: version ${older.version[0]} has no operation there either`,
    )
  }
})

t.test('read from the contracts: the successor, its parameters, the operation of that id in the newer version', async (t) => {
  t.equal(movedFrom([older, newer], 'GET', `${n}/pets/3`), said(newer, '3', '?id=3'))
  t.equal(movedFrom([older, newer], 'GET', `${n}/pets`), undefined, 'a path the newer version has')
  t.equal(movedFrom([newer], 'GET', `${n}/pets/3`), undefined, 'no older version served')
  const noSuccessor = editedContract((document) => {
    const getPet = document.paths['/pets/{petId}']!.get! as unknown as Record<string, unknown>
    delete getPet['x-successor']
    delete getPet['x-successor-parameters']
    getPet['x-successor-reason'] = 'none'
  }, sourceOf(older))
  t.equal(movedFrom([noSuccessor, newer], 'GET', `${n}/pets/3`), said(newer, '3'), 'an operation without a successor is named alone')
  const withoutIdFilter = editedContract((document) => {
    const listPets = document.paths['/pets']!.get!
    listPets.parameters = listPets.parameters!.filter((parameter) => !('$ref' in parameter && parameter.$ref.endsWith('/PetIdFilter')))
  }, sourceOf(newer))
  t.equal(withoutIdFilter.basePath, n, 'the newer version, edited')
  t.equal(movedFrom([older, withoutIdFilter], 'GET', `${n}/pets/3`, {}), said(newer, '3', ''), 'a parameter the newer operation lacks is left out')
  t.equal(older.successorUrl(older.operations.get('getPet')!), `${o}/pets`, 'a successor without the values its parameters take: its URL alone')
  t.equal(older.successorUrl(older.operations.get('listPets')!), undefined, 'no successor, no URL')
  t.strictSame(older.pathParamsOf(older.operations.get('getPet')!, `${o}/pets/7`), { petId: '7' })
  t.equal(older.pathParamsOf(older.operations.get('getPet')!, `${o}/pets`), undefined, "a path that is not the operation's")
})
