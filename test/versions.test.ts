/**
 * Two major versions served side by side from one store: version 2's handlers serve version 1
 * through the declared changes of src/versions/. Each change alone, both ways; then in the
 * served path: what one version makes, the other reads.
 */
import t from 'tap'
import type { OpenAPIV3 } from 'openapi-types'
import { contractOf, loadContracts } from '../src/contract/load.js'
import type { Contract } from '../src/contract/model.js'
import { servedTogether } from '../src/contract/served.js'
import { ApiError } from '../src/core/errors.js'
import { categoryObject } from '../src/versions/changes/category-object.js'
import { getPetFromList } from '../src/versions/changes/get-pet.js'
import { type AnyHandler, deriveVersions } from '../src/versions/derive.js'
import { type VersionChange, versionChange } from '../src/versions/change.js'
import { changes } from '../src/versions/index.js'
import { checkCoverage, neighbourDifferences } from '../scripts/check-breaking.js'
import { recordedDifferences } from '../src/versions/recorded.js'
import { type Difference, uncovered } from '../src/versions/coverage.js'
import { type Transform, transformOf } from '../src/versions/schemas.js'
import { build } from './helpers/app.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'
import { eventsPerVersion, servedSideBySide, sideBySide } from './helpers/side-by-side.js'

// The two versions the changes of src/versions/changes/ lie between (category-object and get-pet
// lead to version 1 from version 2), as served: the older as its overlay gives it, the newer as a
// document written whole, openapi.yaml, whichever major is the newest (a new major makes version
// 2 an overlay of its own, which names no change of these tests).
const served = loadContracts()
const v1 = served.find(({ version }) => version[0] === categoryObject.version)!
const v2 = contractOf(served.find(({ version }) => version[0] === categoryObject.version + 1)!.document, { file: 'openapi.yaml' })
const context = { urlOf: v1.urlOf }
const tom = { id: 2, name: 'Tom', category: { id: 1, name: 'Bird' }, status: 'pending' as const }
const v1Tom = { id: 2, name: 'Tom', categoryId: 1, status: 'pending' }
const petDown = categoryObject.schemas.Pet!.down!

/** A change as a test writes it: nothing but what it says. */
const change = (declared: Partial<VersionChange> & Pick<VersionChange, 'version'>): VersionChange => ({
  name: 'test-change',
  description: 'a test',
  schemas: {},
  servedBy: {},
  operations: {},
  events: {},
  inForce: () => false,
  ...declared,
})

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a copy of a contract, which each case edits freely
type Spec = any

/** Version `major`, a copy of `document` under /v`major` with `edit` made. */
function versionOf(major: number, document: OpenAPIV3.Document, edit: (document: Spec) => void = () => {}): Contract {
  const copy = structuredClone(document) as Spec
  copy.info.version = `${major}.0.0`
  for (const server of copy.servers) server.url = server.url.replace(/\/v[0-9]+$/, `/v${major}`)
  edit(copy)
  return contractOf(copy, { file: `openapi-v${major}.yaml` })
}

t.test("category-object: a Pet of version 2 is made version 1's; in force for version 1 only", async (t) => {
  t.strictSame(petDown(tom), v1Tom)
  t.strictSame(
    JSON.parse(JSON.stringify(petDown({ id: 3, name: 'Kit', category: { id: 9 } }))),
    { id: 3, name: 'Kit', categoryId: 9 },
    'a category never created, and no status (none sent)',
  )
  t.strictSame(
    petDown({ ...tom, tag: 'calm' }),
    v1Tom,
    "what version 1's Pet has, and nothing else (a property it gains fails the typecheck there until written)",
  )
  t.strictSame([categoryObject.inForce({ apiVersion: 1 }), categoryObject.inForce({ apiVersion: 2 })], [true, false])
  t.match(categoryObject.sideEffects, { createPet: /takes a category that does not exist/ })
})

t.test("get-pet: version 1 reads one pet by listPets with its id; a new pet's Location is its path", async (t) => {
  const { getPet, createPet } = getPetFromList.operations
  t.strictSame(getPetFromList.servedBy, { getPet: 'listPets' })
  const request = { params: { petId: 2 }, query: {} as Record<string, unknown>, body: undefined }
  getPet!.up!(request, context)
  t.strictSame(request.query, { id: 2, limit: 1 }, 'up: the list of the one pet')
  t.strictSame(getPet!.down!({ status: 200, body: [v1Tom] }, request, context), { status: 200, body: v1Tom }, 'down: its one pet')
  const none = getPet!.down!({ status: 200, body: [] }, request, context)
  t.type(none, ApiError)
  t.match(none, { code: 'not_found', message: 'Pet 2 not found' }, 'no pet: 404, as version 1 said')
  t.strictSame(createPet!.down!({ status: 201, body: v1Tom, headers: { Location: '/v2/pets?id=2' } }, request, context), {
    status: 201,
    body: v1Tom,
    headers: { Location: '/v1/pets/2' },
  })
})

t.test('deriving: an operation served by no handler stops the start; refusals pass; schemas and URLs come down', async (t) => {
  const listPets: AnyHandler = () => ({ status: 200, body: [tom], headers: { Link: '</v2/pets?limit=1&after=2>; rel="next"' } })
  const versions = deriveVersions([v1, v2], changes)
  t.throws(() => versions.derive({ listPets }, v1), /operation createPet of version 1 is served by no handler: no handler serves createPet of openapi.yaml/)
  const everyV1 = Object.fromEntries([...v1.operations.keys()].map((id) => [id, listPets]))
  // (version 1 as a document written whole: its overlay names changes, which a start without them refuses first)
  const written = contractOf(v1.document, { file: v1.file })
  t.throws(
    () => deriveVersions([written, v2], []).derive(everyV1, written),
    /operation getPet of version 1 is served by no handler: openapi.yaml has no getPet, and no change in src\/versions\/ says what serves it/,
    'an operation the newer document lacks',
  )
  const refusing: AnyHandler = async () => new ApiError('not_found', 'gone')
  const handlers = Object.fromEntries([...v2.operations.keys()].map((id) => [id, id === 'listPets' ? listPets : refusing]))
  const derived = versions.derive(handlers, v1)
  t.strictSame(Object.keys(derived).sort(), [...v1.operations.keys()].sort(), 'every operation of version 1')
  t.equal(versions.derive(handlers, v2).listPets, listPets, 'the newest version: its own handlers')
  const request = { params: {}, query: {} } as never
  t.strictSame(derived.listPets!(request, undefined, undefined), { status: 200, body: [v1Tom], headers: { Link: '</v1/pets?limit=1&after=2>; rel="next"' } })
  const params = { petId: 7 }
  const query = {}
  const asked = { params, query }
  t.match(await derived.getPet!(asked as never, undefined, undefined), { status: 200, body: v1Tom })
  t.strictSame([params, query, asked.query], [{ petId: 7 }, {}, { id: 7, limit: 1 }], 'made newer on copies of what the client sent')
  t.match(await derived.createPet!(request, undefined, undefined), { code: 'not_found' }, 'a refusal is not made older')
  t.strictSame(derived.getOrder === refusing, false, 'wrapped, to move its URLs')
})

t.test('changes chain: version 1 through version 2 to a version 3 that renamed listPets, and a request body made newer', async (t) => {
  const v3 = versionOf(3, v2.document, (document) => {
    document.paths['/pets'].get.operationId = 'findPets'
  })
  const seen: unknown[] = []
  const findPets: AnyHandler = (request) => (
    seen.push(request.query),
    { status: 200, body: [tom], headers: { Link: '</v3/pets?limit=1&after=2>; rel="next"' } }
  )
  const createPet: AnyHandler = (request) => ({
    status: 201,
    body: { ...tom, name: (request.body as { name: string }).name },
    headers: { Location: '/v3/pets?id=2' },
  })
  const handlers = Object.fromEntries([...v3.operations.keys()].map((id) => [id, findPets]))
  handlers.createPet = createPet
  const renamed = change({ version: 2, name: 'find-pets', servedBy: { listPets: 'findPets' } })
  // (a name version 2 took in another form: version 3 reads it in capitals)
  const shouting = change({ version: 2, name: 'shouting', schemas: { NewPet: { up: (pet: { name: string }) => ({ ...pet, name: pet.name.toUpperCase() }) } } })
  const versions = deriveVersions([v1, v2, v3], [renamed, shouting, ...changes])
  const fromV1 = versions.derive(handlers, v1)
  t.strictSame(
    await fromV1.getPet!({ params: { petId: 2 }, query: {} } as never, undefined, undefined),
    { status: 200, body: v1Tom },
    "version 1's getPet is version 3's findPets",
  )
  t.strictSame(seen, [{ id: 2, limit: 1 }])
  t.strictSame(
    fromV1.listPets!({ params: {}, query: {} } as never, undefined, undefined),
    { status: 200, body: [v1Tom], headers: { Link: '</v1/pets?limit=1&after=2>; rel="next"' } },
    'its URLs moved down each step',
  )
  const created = await fromV1.createPet!({ params: {}, query: {}, body: { name: 'Kit', categoryId: 1 } } as never, undefined, undefined)
  t.strictSame(
    created,
    { status: 201, body: { ...v1Tom, name: 'KIT' }, headers: { Location: '/v1/pets/2' } },
    'the body made newer on the way up, the answer older on the way down',
  )
  const fromV2 = versions.derive(handlers, v2)
  t.strictSame(fromV2.listPets!({ params: {}, query: {} } as never, undefined, undefined), {
    status: 200,
    body: [tom],
    headers: { Link: '</v2/pets?limit=1&after=2>; rel="next"' },
  })
  t.strictSame(versions.showEvent('pet.created', { data: tom }, 1), { data: v1Tom })
  t.throws(() => deriveVersions([v1, v3], changes), /version 1 is served without version 2, through whose changes it is derived/)
})

t.test("a query parameter version 3 renamed: version 2's request is given the new name, and the links its answers name the old one", async (t) => {
  const v3 = versionOf(3, v2.document, (document) => {
    document.components.parameters.StatusFilter.name = 'availability'
    document.components.parameters.PetIdFilter.name = 'petId'
  })
  const seen: unknown[] = []
  const listPets: AnyHandler = (request) => (
    seen.push(request.query),
    {
      status: 200,
      body: [tom],
      headers: {
        Link: '</v3/pets?limit=1&availability=pending&after=2>; rel="next", </v3/store/orders?availability=x>; rel="other", </v3/elsewhere?availability=x>; rel="about"',
      },
    }
  )
  const createPet: AnyHandler = () => ({ status: 201, body: tom, headers: { Location: '/v3/pets?petId=2' } })
  const handlers = { ...Object.fromEntries([...v3.operations.keys()].map((id) => [id, listPets])), createPet }
  const availability = change({ version: 2, name: 'availability', operations: { listPets: { renamed: { status: 'availability', id: 'petId' } } } })
  const versions = deriveVersions([v1, v2, v3], [availability, ...changes])
  const fromV2 = versions.derive(handlers, v2)
  t.strictSame(
    fromV2.listPets!({ params: {}, query: { status: 'pending', limit: 1 } } as never, undefined, undefined),
    {
      status: 200,
      body: [tom],
      headers: {
        Link: '</v2/pets?limit=1&status=pending&after=2>; rel="next", </v2/store/orders?availability=x>; rel="other", </v2/elsewhere?availability=x>; rel="about"',
      },
    },
    "its next page names the filter as version 2 does; another operation's URL, or one of no operation, is left as it is",
  )
  t.strictSame(
    await fromV2.createPet!({ params: {}, query: {}, body: { name: 'Tom', category: { id: 1 } } } as never, undefined, undefined),
    { status: 201, body: tom, headers: { Location: '/v2/pets?id=2' } },
    'the Location of a new pet, a URL of listPets, too',
  )
  t.strictSame(seen, [{ availability: 'pending', limit: 1 }], 'the newest handler is given the new name')
  const fromV1 = versions.derive(handlers, v1)
  t.strictSame(await fromV1.getPet!({ params: { petId: 2 }, query: {} } as never, undefined, undefined), { status: 200, body: v1Tom }, 'through two steps')
  t.strictSame(seen.at(-1), { petId: 2, limit: 1 })
  const refused = (renamed: Record<string, string>) =>
    (t.throws(() => deriveVersions([v1, v2, v3], [change({ version: 2, operations: { listPets: { renamed } } }), ...changes])) as Error).message
  t.match(refused({ state: 'availability' }), /version change test-change renames listPets's query parameter state, which openapi\.yaml does not have/)
  t.match(refused({ status: 'available' }), /renames listPets's query parameter status to available, which openapi-v3\.yaml's listPets does not have/)
  const unserved = (
    t.throws(() =>
      deriveVersions(
        [v1, v2, v3],
        [change({ version: 2, servedBy: { listPets: 'findPets' }, operations: { listPets: { renamed: { status: 'x' } } } }), ...changes],
      ),
    ) as Error
  ).message
  t.match(unserved, /serves listPets by findPets, which openapi-v3\.yaml does not have/)
  t.notMatch(unserved, /renames/, 'what serves it named first')
  const recorded = new Map([[2, await neighbourDifferences(v2, v3)]])
  t.match(
    (t.throws(() => deriveVersions([v1, v2, v3], changes, recorded)) as Error).message,
    /GET \/pets, parameter `availability` \(query\): `status` query parameter was renamed to `availability`\. .*: no change of version 2 covers it: write operations: \{ listPets: \{ renamed: \{ status: 'its name in version 3' \} \} \}/,
    'the gate and the start name the change to write',
  )
  t.doesNotThrow(() => deriveVersions([v1, v2, v3], [availability, ...changes], recorded), 'covered by the rename')
})

t.test('an overlay and its version changes name each other: the start and the gate refuse a change no action names, a name no change has', async (t) => {
  t.strictSame(v1.overlayChanges, ['category-object', 'get-pet'], "version 1's overlay names its two changes")
  t.equal(v2.overlayChanges, undefined, 'openapi.yaml, written whole, names none')
  const unnamed = contractOf(v1.document, { file: v1.file, overlayChanges: ['category-object', 'pet-title'] })
  const lines = [
    'version change get-pet of version 1 is named by no action of contract/versions/1.overlay.yaml: the overlay carries its contract half (x-change: get-pet on the actions that set back what it changes)',
    'contract/versions/1.overlay.yaml names the version change pet-title (x-change), which src/versions/changes/ does not declare for version 1',
  ]
  t.throws(() => deriveVersions([unnamed, v2], changes), { message: lines.join('; ') }, 'the start')
  const gate = await checkCoverage([unnamed, v2], [])
  t.notOk(gate.ok, 'the gate')
  t.strictSame(gate.lines.slice(0, 2), [
    'contract/versions/1.overlay.yaml names the version change category-object (x-change), which src/versions/changes/ does not declare for version 1',
    'contract/versions/1.overlay.yaml names the version change pet-title (x-change), which src/versions/changes/ does not declare for version 1',
  ])
})

t.test('a change that names what its versions lack is refused at start, each name said', async (t) => {
  const refused = (declared: Parameters<typeof change>[0]) => (t.throws(() => deriveVersions([v1, v2], [change(declared)])) as Error).message
  t.match(
    refused({ version: 1, schemas: { Pett: {} } }),
    /version change test-change changes the schema Pett, which contract\/versions\/1\.overlay\.yaml and openapi.yaml do not both have/,
  )
  t.match(
    refused({ version: 1, schemas: { Category: {} } }),
    /changes the schema Category, which contract\/versions\/1\.overlay\.yaml and openapi.yaml do not both have/,
    'one version only',
  )
  t.match(refused({ version: 1, operations: { getPett: {} } }), /changes the operation getPett, which contract\/versions\/1\.overlay\.yaml does not have/)
  t.match(refused({ version: 1, servedBy: { getPett: 'listPets' } }), /serves the operation getPett, which contract\/versions\/1\.overlay\.yaml does not have/)
  t.match(refused({ version: 1, servedBy: { getPet: 'findPets' } }), /serves getPet by findPets, which openapi.yaml does not have/)
  t.match(
    refused({ version: 1, events: { 'pet.deleted': (fields) => fields } }),
    /changes the event pet.deleted, which contract\/versions\/1\.overlay\.yaml and openapi.yaml do not both have/,
  )
  const twice = t.throws(() => deriveVersions([v1, v2], [change({ version: 1, schemas: { Pet: {} }, servedBy: { getPet: 'listPets' } }), ...changes])) as Error
  t.match(twice.message, /changes the schema Pet, which another change of version 1 changes: write them as one/)
  t.match(twice.message, /serves getPet by listPets, which another change of version 1 serves by listPets/)
  t.doesNotThrow(() => deriveVersions([v2], changes), "a version's changes are not read while it is not served")
})

t.test('a breaking difference the gate found that no change covers stops the start, naming the change to write', async (t) => {
  const recorded = recordedDifferences([v1, v2])
  t.equal(recorded.get(1)?.length, 35, 'generated/v2/breaking.cjs: the differences between the documents served, each place a client meets them')
  t.doesNotThrow(() => deriveVersions([v1, v2], changes, recorded), 'each covered by the changes of version 1')
  const edited = contractOf(structuredClone(v1.document), { file: 'openapi.yaml' })
  t.strictSame(recordedDifferences([versionOf(1, v1.document, (document) => (document.info.title = 'Other')), v2]).size, 0, 'none recorded of other documents')
  t.equal(recordedDifferences([edited, v2]).size, 1, 'the same document, read anew: the same record')
  const without = (name: string) => changes.filter((change) => change.name !== name)
  const noCategories = (t.throws(() => deriveVersions([v1, v2], without('category-object'), recorded)) as Error).message
  t.match(
    noCategories,
    /openapi.yaml against contract\/versions\/1\.overlay\.yaml: GET \/pets, response 200 body `category`: Property `categoryId` was renamed to `category`\. \(property-removed at #\/components\/schemas\/Pet\/properties\/category\): no change of version 1 covers it: write schemas: \{ Pet: \{ down \} \}/,
  )
  t.match(
    noCategories,
    /POST \/pets, response 422: Response 422 was added: a request version 1\.\d+\.\d+ took may be refused\. \(response-added at #\/paths\/~1pets\/post\/responses\/422\): no change of version 1 covers it: write sideEffects: \{ createPet: /,
  )
  const noGetPet = (t.throws(() => deriveVersions([v1, v2], without('get-pet'), recorded)) as Error).message
  t.match(
    noGetPet,
    /Path `\/pets\/\{petId\}` was removed\. \(path-removed at #\/paths\/~1pets~1\{petId\}\): no change of version 1 covers it: write servedBy: \{ getPet: /,
  )
  t.match(
    noGetPet,
    /POST \/pets, response 201 header Location: `pattern` changed .* no change of version 1 covers it: write operations: \{ createPet: \{ down \} \}/,
  )
  t.notMatch(noGetPet, /NextPageLink/, 'a URL under the version segment is moved by the derive layer: covered')
})

t.test("a schema's transform, wherever the schema sits: arrays, properties, allOf, maps, itself; refused under oneOf", async (t) => {
  const schemas = {
    Tag: { type: 'string' },
    Pet: { type: 'object', properties: { tag: { $ref: '#/components/schemas/Tag' }, friend: { $ref: '#/components/schemas/Pet' } } },
    Named: { allOf: [{ $ref: '#/components/schemas/Pet' }, { type: 'object', properties: { also: { $ref: '#/components/schemas/Tag' } } }] },
    ByName: { type: 'object', properties: { first: { type: 'string' } }, additionalProperties: { $ref: '#/components/schemas/Tag' } },
    Either: { oneOf: [{ $ref: '#/components/schemas/Tag' }, { type: 'integer' }] },
  }
  const document = { components: { schemas, responses: { Tags: { $ref: '#/components/schemas/Tag' } } } }
  const shouting = new Map<string, Transform>([['Tag', (tag) => (tag as string).toUpperCase()]])
  const of = (schema: object, transforms = shouting) => transformOf(document, schema, transforms)
  t.equal(of({ $ref: '#/components/schemas/Pet' }, new Map()), undefined, 'no transform given: none made')
  t.equal(of({ type: 'object', properties: { n: { type: 'integer' } } }), undefined, 'no transformed schema in it: none made')
  t.strictSame(of({ type: 'array', items: { $ref: '#/components/schemas/Tag' } })!(['a', 'b']), ['A', 'B'])
  t.strictSame(of({ type: 'array', items: { $ref: '#/components/schemas/Tag' } })!('a'), 'a', 'a value of another shape: as it is')
  t.strictSame(of({ type: 'object', additionalProperties: { $ref: '#/components/schemas/Tag' } })!({ a: 'b' }), { a: 'B' }, 'a map and nothing else')
  t.strictSame(
    of({ $ref: '#/components/schemas/Pet' })!({ tag: 'a', friend: { tag: 'b', friend: { tag: 'c' } } }),
    { tag: 'A', friend: { tag: 'B', friend: { tag: 'C' } } },
    'a schema that holds itself, to any depth',
  )
  t.strictSame(of({ $ref: '#/components/schemas/Pet' })!({ friend: null }), { friend: null }, 'what is not there is left as it is')
  t.strictSame(of({ $ref: '#/components/schemas/Named' })!({ tag: 'a', also: 'b' }), { tag: 'A', also: 'B' }, 'each branch of allOf')
  t.strictSame(
    of({ $ref: '#/components/schemas/ByName' })!({ first: 'a', second: 'b' }),
    { first: 'a', second: 'B' },
    'the values of a map, its declared properties aside',
  )
  t.strictSame(of({ $ref: '#/components/schemas/ByName' })!('a string'), 'a string', 'a value of another shape: as it is')
  t.strictSame(of({ $ref: '#/components/responses/Tags' })!('a'), 'A', 'through a $ref to another part of the document')
  const own = new Map<string, Transform>([
    [
      'Pet',
      (value) => {
        const { tag, ...pet } = value as { tag?: string }
        return { ...pet, label: tag }
      },
    ],
  ])
  t.strictSame(of({ $ref: '#/components/schemas/Pet' }, own)!({ tag: 'a' }), { label: 'a' }, "a schema's own transform")
  t.throws(
    () => of({ $ref: '#/components/schemas/Either' }),
    /#\/components\/schemas\/Either: a schema a version change transforms is under oneOf, where which branch a value is of cannot be told/,
  )
})

t.test(
  "an event's breaking difference is covered by a change of the event, or of a schema of its payload; outside operations and events, by none",
  async (t) => {
    const difference = (path: string, pointer = path): Difference => ({ where: 'there', rule: 'a-rule', pointer, path, message: 'It changed.' })
    // a version 2 whose order.placed carries another data
    const v2b = versionOf(2, v2.document, (document) => (document.components.schemas.OrderPlacedEvent.properties.data = { type: 'object' }))
    const inEvent = difference('#/webhooks/order.placed/post/requestBody/content/application~1json/schema/properties/data')
    t.match(uncovered([inEvent], v1, v2b, []), [
      /^there: It changed\. \(a-rule at .*\): no change of version 1 covers it: write events: \{ 'order\.placed': \.\.\. \}/,
    ])
    t.strictSame(uncovered([inEvent], v1, v2b, [change({ version: 1, events: { 'order.placed': (fields) => fields } })]), [], 'the event')
    t.strictSame(
      uncovered([inEvent], v1, v2b, [change({ version: 1, schemas: { Order: { down: (order: unknown) => order } } })]),
      [],
      'a schema of its payload',
    )
    const inSchema = difference(inEvent.path, '#/components/schemas/Order/properties/status')
    t.match(uncovered([inSchema], v1, v2b, []), [/write schemas: \{ Order: \{ down \} \}/], 'inside a schema: that schema named')
    t.match(uncovered([difference('#/tags/1')], v1, v2, changes), [
      /no change covers a difference outside the operations and events; make the documents agree there/,
    ])
    t.strictSame(uncovered([difference('#/paths/~1store~1orders/get/responses/200/headers/Link/schema')], v1, v2, []), [], 'the version segment of a URL')
    t.strictSame(uncovered([difference('#/paths/~1categories/get/responses/200')], v1, v2, []), [], 'an operation the older version lacks: an addition')
  },
)

t.test("what a deprecation documents, its 410 and its lifecycle headers, is each version's own lifecycle: no change covers it", async (t) => {
  const difference = (path: string): Difference => ({ where: 'there', rule: 'a-rule', pointer: path, path, message: 'It changed.' })
  // (version 1's getPet is deprecated)
  const getPet = '#/paths/~1pets~1{petId}/get/responses'
  for (const part of ['410', '200/headers/Deprecation', '200/headers/Sunset/schema', '404/headers/Link'])
    t.strictSame(uncovered([difference(`${getPet}/${part}`)], v1, v2, []), [], `${part}: the lifecycle of the version that deprecates it`)
  t.match(uncovered([difference(`${getPet}/200/headers/ETag`)], v1, v2, []), [/write operations: \{ getPet: \{ down \} \}/], 'another header: a change')
  t.match(
    uncovered([difference('#/paths/~1pets/post/responses/410')], v1, v2, []),
    [/write sideEffects: \{ createPet: /],
    'a 410 of an operation neither version deprecates: a new refusal',
  )
  const otherLink = versionOf(2, v2.document, (document) => (document.paths['/pets'].get.responses['200'].headers.Link = { schema: { type: 'string' } }))
  t.match(
    uncovered([difference('#/paths/~1pets/get/responses/200/headers/Link')], v1, otherLink, []),
    [/write operations: \{ listPets: \{ down \} \}/],
    "the Link of an operation neither version deprecates: the answer's own",
  )
})

t.test('the types hold a change to its two versions', async (t) => {
  // (compile-time checks: npm run typecheck fails if one of these names is taken)
  type V1 = import('../generated/v1/version.js').Version
  type V2 = import('../generated/v2/version.js').Version
  // @ts-expect-error a schema neither version has
  versionChange<V1, V2>()({ name: 'x', version: 1, description: '', schemas: { Pett: {} } })
  // @ts-expect-error an operation version 2 does not have
  versionChange<V1, V2>()({ name: 'x', version: 1, description: '', servedBy: { getPet: 'findPets' } })
  // @ts-expect-error a change leads to the older of its two versions
  versionChange<V1, V2>()({ name: 'x', version: 2, description: '' })
  // @ts-expect-error a Pet of version 2 is not one of version 1
  versionChange<V1, V2>()({ name: 'x', version: 1, description: '', schemas: { Pet: { down: (pet) => pet } } })
  const made = versionChange<V1, V2>()({ name: 'x', version: 1, description: '' })
  t.strictSame([made.schemas, made.servedBy, made.operations, made.events], [{}, {}, {}, {}], 'what it does not declare, it leaves')
})

t.test('a start refuses a change naming an operation version 1 lacks before it opens the storage', async (t) => {
  const renamed = structuredClone(v1.document) as unknown as { paths: Record<string, { get: { operationId: string } }> }
  renamed.paths['/pets/{petId}']!.get.operationId = 'readPet'
  await t.rejects(
    build(t, { contracts: [contractOf(renamed as never, { file: 'openapi.yaml' }), v2] }),
    /version change get-pet changes the operation getPet, which openapi.yaml does not have/,
  )
})

t.test('a start that fails once the storage is open closes it and says why: an operation of version 1 nothing serves', async (t) => {
  const twin = structuredClone(v1.document) as unknown as { paths: Record<string, { get: { operationId: string } }> }
  twin.paths['/pets/{petId}/twin'] = structuredClone(twin.paths['/pets/{petId}']!)
  twin.paths['/pets/{petId}/twin'].get.operationId = 'getPetTwin'
  await t.rejects(
    build(t, { contracts: [contractOf(twin as never, { file: v1.file }), v2] }),
    /operation getPetTwin of version 1 is served by no handler: openapi\.yaml has no getPetTwin, and no change in src\/versions\/ says what serves it/,
  )
})

t.test('a change may translate the request alone: the answer goes down as it is', async (t) => {
  const seen: unknown[] = []
  const listPets: AnyHandler = (request) => (seen.push(request.query), { status: 200, body: [] })
  const handlers = Object.fromEntries([...v2.operations.keys()].map((id) => [id, listPets]))
  // an older listPets that called its status filter `state`
  const document = structuredClone(v1.document) as unknown as { paths: Record<string, { get: { parameters: unknown[] } }> }
  document.paths['/pets']!.get.parameters.push({ name: 'state', in: 'query', schema: { type: 'string' } })
  const older = contractOf(document as never, { file: 'openapi.yaml' })
  const renamed = change({
    version: 1,
    description: 'status was called state',
    operations: { listPets: { up: (request) => void (request.query = { status: request.query.state }) } },
  })
  const derived = deriveVersions([older, v2], [renamed, getPetFromList]).derive(handlers, older)
  t.strictSame(await derived.listPets!({ params: {}, query: { state: 'sold' } } as never, undefined, undefined), { status: 200, body: [] })
  t.strictSame(seen, [{ status: 'sold' }], 'the request made newer')
})

t.test('a query parameter only the newest version declares is, sent to an older one, unknown: the newest handler does not see it', async (t) => {
  const seen: unknown[] = []
  const listPets: AnyHandler = (request) => (seen.push(request.query), { status: 200, body: [] })
  const handlers = Object.fromEntries([...v2.operations.keys()].map((id) => [id, listPets]))
  const derived = deriveVersions([v1, v2], changes).derive(handlers, v1)
  const sent = { limit: 20, status: 'sold', id: 'abc', categoryId: ['1', '2'], after: undefined }
  const request = { params: {}, query: sent }
  await derived.listPets!(request as never, undefined, undefined)
  t.strictSame(seen, [{ limit: 20, id: 'abc', status: 'sold' }], "version 2's categoryId filter is not version 1's (its id is, getPet's successor)")
  t.equal(request.query, seen[0], 'given to the handler in place of the query')
  t.strictSame(sent, { limit: 20, status: 'sold', id: 'abc', categoryId: ['1', '2'], after: undefined }, 'what the client sent is left as it was')
  const same = { params: { orderId: 1 }, query: { x: 1 } }
  await derived.getOrder!(same as never, undefined, undefined)
  t.strictSame(same.query, { x: 1 }, 'an operation the versions declare alike is served the request as it came')
})

t.test('served together: one document per major, all promising the same of the server', async (t) => {
  t.throws(
    () => servedTogether([v1, v1]),
    /contract\/versions\/1\.overlay\.yaml \(major version 1\): .*1.overlay.yaml is of the same major version: each served document has a major of its own/,
  )
  const document = structuredClone(v2.document) as unknown as { 'x-service': { limits: { requestBodyBytes: number } } }
  document['x-service'].limits.requestBodyBytes = 1024
  const other = contractOf(document as never, { file: 'openapi.yaml' })
  t.throws(
    () => servedTogether([v1, other]),
    /contract\/versions\/1\.overlay\.yaml \(major version 1\): x-service states other limits than openapi.yaml \(requestBodyBytes\): the documents served together must state the same/,
  )
  // the roles a key holds are the newest document's: an older one asks none other, and sends each event to the same roles
  const roles = structuredClone(v1.document) as unknown as {
    components: { securitySchemes: { bearerAuth: { 'x-roles': Record<string, { default?: boolean; staff?: boolean }> } } }
    webhooks: Record<string, { post: { 'x-roles': string[] } }>
  }
  const catalogue = roles.components.securitySchemes.bearerAuth['x-roles']
  catalogue['pets:delete'] = { ...catalogue['pets:write'], default: false }
  catalogue['orders:read']!.default = !catalogue['orders:read']!.default
  roles.webhooks['pet.created']!.post['x-roles'] = ['orders:read']
  const refused = t.throws(() => servedTogether([contractOf(roles as never, { file: 'contract/versions/1.overlay.yaml' }), v2])) as Error
  t.match(refused.message, /x-roles has pets:delete, which openapi.yaml lacks: a key holds the roles of the newest document/)
  t.match(refused.message, /x-roles gives other default, first key's or staff roles than openapi.yaml/)
  t.match(refused.message, /event pet.created asks other roles than in openapi.yaml/)
  const probed = structuredClone(v2.document) as unknown as { 'x-service': { health: { ready: string } } }
  probed['x-service'].health.ready = '/ready'
  t.throws(
    () => servedTogether([v1, contractOf(probed as never, { file: 'openapi.yaml' })]),
    /x-service.health names other paths than openapi.yaml: one server answers its probes at one place/,
  )
  t.strictSame(servedTogether([v2, v1]), [v1, v2], 'oldest first')
})

t.test('an event is shown to a subscription as its version shows it', async (t) => {
  const versions = deriveVersions([v1, v2], changes)
  t.strictSame(versions.showEvent('pet.created', { data: tom }, 2), { data: tom }, 'version 2: as it is')
  t.strictSame(versions.showEvent('pet.created', { data: tom }, 1), { data: v1Tom }, 'version 1: categoryId, wherever the event carries a Pet')
  t.strictSame(versions.showEvent('pet.status_changed', { data: tom, from: 'available', to: 'pending' }, 1), {
    data: v1Tom,
    from: 'available',
    to: 'pending',
  })
  const order = { data: { id: 1, petId: 2, status: 'placed', placedAt: '2026-11-26T00:00:00.000Z' } }
  t.strictSame(versions.showEvent('order.placed', order, 1), order, 'an order is the same in both')
  const renamed = change({ version: 1, events: { 'order.placed': ({ data, ...rest }) => ({ ...rest, order: data }) } })
  // (version 1 as a document written whole: its overlay names changes this test leaves out)
  const written = contractOf(v1.document, { file: v1.file })
  t.strictSame(deriveVersions([written, v2], [renamed]).showEvent('order.placed', order, 1), { order: order.data }, 'a change of the event itself')
})

t.test(sideBySide, servedSideBySide)

t.test("SQLite: events in each subscription's version", async (t) => eventsPerVersion(t, {}))
t.test("PostgreSQL: events in each subscription's version", { skip: postgresMissing }, async (t) =>
  eventsPerVersion(t, { DATABASE_URL: await freshPostgres(t) }),
)
