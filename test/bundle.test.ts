/**
 * The bundler (src/contract/bundle.ts): a version's document and the shared parts it uses, made
 * one document with local `$ref`s only. Each rule on small documents of its own, in a folder laid
 * out as the project is (the document, and contract/shared/ beside it).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { stringify } from 'yaml'
import { bundledSpec, sharedDirOf } from '../src/contract/load.js'

/** A document `own` and shared files `shared` (by name), written as the project lays them out;
 * the path of the document. */
function written(t: Test, own: object, shared: Record<string, object> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bundle-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const spec = join(dir, 'openapi-v9.yaml')
  writeFileSync(spec, stringify(own))
  mkdirSync(sharedDirOf(spec), { recursive: true })
  for (const [name, document] of Object.entries(shared)) writeFileSync(join(sharedDirOf(spec), name), stringify(document))
  return spec
}

const ref = ($ref: string) => ({ $ref })
const pets = {
  paths: {
    '/pets': { get: { operationId: 'listPets', security: [{ bearerAuth: [] }], responses: { '200': ref('#/components/responses/Pets') } } },
  },
  components: {
    responses: { Pets: { description: 'pets', content: { 'application/json': { schema: ref('#/components/schemas/Pets') } } } },
    schemas: {
      Pets: { type: 'array', items: ref('#/components/schemas/Pet') },
      Pet: { type: 'object', properties: { name: { type: 'string' } } },
      Unused: { type: 'string' },
    },
  },
}
const common = { 'x-service': { limits: {} }, components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } } }
const own = (extra: object = {}) => ({
  openapi: '3.1.0',
  'x-service': ref('contract/shared/common.yaml#/x-service'),
  paths: { '/pets': ref('contract/shared/pets.yaml#/paths/~1pets') },
  ...extra,
})

t.test('a shared part is taken in, with the shared components it names, those of the version its own', async (t) => {
  const spec = written(t, own(), { 'pets.yaml': pets, 'common.yaml': common })
  const { document, sources } = bundledSpec(spec)
  t.strictSame(document, {
    openapi: '3.1.0',
    'x-service': { limits: {} },
    paths: pets.paths,
    components: {
      responses: pets.components.responses,
      schemas: { Pets: pets.components.schemas.Pets, Pet: pets.components.schemas.Pet },
      securitySchemes: common.components.securitySchemes,
    },
  })
  t.strictSame(
    Object.keys(sources),
    ['openapi-v9.yaml', 'contract/shared/common.yaml', 'contract/shared/pets.yaml'],
    'its sources: its own file and the shared files it took from',
  )

  // the version forks Pet: its own is taken wherever the shared parts name it
  const forked = { type: 'object', properties: { title: { type: 'string' } } }
  const fork = bundledSpec(written(t, own({ components: { schemas: { Pet: forked } } }), { 'pets.yaml': pets, 'common.yaml': common })).document
  t.strictSame(fork.components!.schemas, { Pet: forked, Pets: pets.components.schemas.Pets }, 'its own first, then the shared ones it uses')
})

t.test('what the bundler refuses, and says where', async (t) => {
  const refused = (document: object, shared: Record<string, object>) => (t.throws(() => bundledSpec(written(t, document, shared))) as Error).message
  t.match(
    refused(own(), { 'pets.yaml': pets, 'common.yaml': common, 'more.yaml': { components: { schemas: { Pet: {} } } } }),
    /^contract\/shared\/pets\.yaml: components\/schemas\/Pet is written in contract\/shared\/more\.yaml too: a shared component is written once$/,
  )
  t.match(
    refused(own(), { 'pets.yaml': { ...pets, components: { ...pets.components, schemas: {} } }, 'common.yaml': common }),
    /^contract\/shared\/pets\.yaml: #\/components\/schemas\/Pets is neither in openapi-v9\.yaml nor in the shared files$/,
  )
  const other = { paths: { '/pets': { get: { responses: { '200': ref('#/paths/~1cats/get/responses/200') } } } } }
  t.match(
    refused(own(), { 'pets.yaml': other, 'common.yaml': common }),
    /pets\.yaml: #\/paths\/~1cats\/get\/responses\/200: a shared part names components only/,
  )
  t.match(
    refused(own({ components: { schemas: { Pet: ref('contract/shared/pets.yaml#/components/schemas/Pet') } } }), { 'pets.yaml': pets, 'common.yaml': common }),
    /a shared component is named by its local \$ref \(#\/components\/schemas\/Pet\)/,
  )
  t.match(
    refused(own({ paths: { '/pets': { ...ref('contract/shared/pets.yaml#/paths/~1pets'), description: 'mine' } } }), {
      'pets.yaml': pets,
      'common.yaml': common,
    }),
    /a \$ref to a shared part stands alone/,
  )
  t.match(
    refused(own({ paths: { '/pets': ref('contract/shared/pets.yaml#/paths/~1cats') } }), { 'pets.yaml': pets, 'common.yaml': common }),
    /contract\/shared\/pets\.yaml#\/paths\/~1cats points to nothing/,
  )
})

t.test("security schemes are taken by the names the requirements give, the document's and each operation's", async (t) => {
  const open = { paths: { '/ping': { get: { operationId: 'ping', responses: { '200': { description: 'pong' } } } } } }
  const schemes = { components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' }, basic: { type: 'http', scheme: 'basic' } } } }
  const spec = written(
    t,
    { openapi: '3.1.0', security: [{ basic: [] }], paths: { '/ping': ref('contract/shared/open.yaml#/paths/~1ping') } },
    { 'open.yaml': open, 'schemes.yaml': schemes },
  )
  t.strictSame(bundledSpec(spec).document.components, { securitySchemes: { basic: schemes.components.securitySchemes.basic } }, 'the one named, not the other')
})

t.test('a document without shared parts is bundled as it is, local $refs of its own kept', async (t) => {
  const alone = {
    openapi: '3.1.0',
    paths: { '/a': { get: { responses: { '200': ref('#/paths/~1b/get/responses/200') } } }, '/b': { get: { responses: { '200': { description: 'b' } } } } },
  }
  const spec = written(t, alone)
  rmSync(sharedDirOf(spec), { recursive: true })
  t.strictSame(bundledSpec(spec).document, alone)
  const none = { openapi: '3.1.0', info: { title: 'events only', version: '1.0.0' }, webhooks: {} }
  t.strictSame(bundledSpec(written(t, none)).document, none, 'nor paths')
})
