/**
 * Imports point one way (docs/development.md): the folders of src/ form layers, and a module
 * imports only from its own folder or from a layer below it. The kernel (src/core/) imports
 * nothing of the service, and the contract model (src/contract/) nothing but the kernel, and
 * nothing of Fastify: it is read by scripts and the lint as well as by the server. storage/
 * (engines, SQL, migrations) imports nothing but the kernel either: each feature holds its own
 * repository, column map and types, built on storage/, and src/repositories.ts composes them.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import t from 'tap'
import { projectRoot } from '../src/core/paths.js'

/** The layers, lowest first: each may import from those before it. */
const layers = [
  ['core'],
  ['contract', 'storage'],
  ['http', 'limits'],
  ['auth'],
  ['docs', 'ops'],
  ['events'],
  ['versions'],
  ['categories'],
  ['pets'],
  ['orders', 'webhooks'],
  ['.'],
]

const src = join(projectRoot, 'src')
const layerOf = (folder: string) => layers.findIndex((layer) => layer.includes(folder))

/** Every module of src/ and what it imports: modules of src/ by their path in it (`core/errors.js`),
 * packages by name. */
function modules(): { file: string; folder: string; imports: string[]; local: string[] }[] {
  return readdirSync(src, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => {
      const file = relative(src, join(entry.parentPath, entry.name))
      const text = readFileSync(join(src, file), 'utf8')
      const specifiers = [...text.matchAll(/(?:from|import) '([^']+)'/g)].map(([, specifier]) => specifier!)
      const local = specifiers.filter((specifier) => specifier.startsWith('.')).map((specifier) => relative(src, join(src, dirname(file), specifier)))
      return { file, folder: dirname(file).split('/')[0]!, imports: [...local, ...specifiers.filter((specifier) => !specifier.startsWith('.'))], local }
    })
}

t.test('every folder of src/ is in a layer', async (t) => {
  for (const { folder, file } of modules()) t.not(layerOf(folder), -1, `${file} is in a layer`)
})

t.test('a module imports from its own folder or from a layer below', async (t) => {
  const upward = modules().flatMap(({ file, folder, local }) =>
    local
      // (generated/, outside src/, is the contract's, below every layer)
      .filter((target) => !target.startsWith('..'))
      .map((target) => ({ target, into: dirname(target).split('/')[0]! }))
      .filter(({ into }) => into !== folder && !(layerOf(into) < layerOf(folder)))
      .map(({ target }) => `${file} -> ${target}`),
  )
  t.strictSame(upward, [], 'no import points sideways or up')
})

t.test('the contract model knows nothing of Fastify or of files but its loader and bundler', async (t) => {
  const found = modules()
    .filter(({ folder, file }) => folder === 'contract' && file !== 'contract/load.ts')
    .flatMap(({ file, imports }) =>
      imports
        // packages: OpenAPI's types, and the JSONPath of the Overlay applier (contract/overlay.ts)
        .filter((target) => !target.startsWith('contract/') && !target.startsWith('core/errors') && !['openapi-types', 'json-p3'].includes(target))
        .map((target) => `${file} -> ${target}`),
    )
  t.strictSame(found, [])
})

t.test('storage/ imports nothing of the service but the kernel: no feature, no contract type', async (t) => {
  const found = modules()
    .filter(({ folder }) => folder === 'storage')
    .flatMap(({ file, local }) => local.filter((target) => !/^(storage|core)\//.test(target)).map((target) => `${file} -> ${target}`))
  t.strictSame(found, [])
})
