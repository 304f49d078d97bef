import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { StandaloneValidator } from '@fastify/ajv-compiler'
import { StandaloneSerializer } from '@fastify/fast-json-stringify-compiler'
import type { FastifyServerOptions } from 'fastify'
import { generatedDir } from '../core/paths.js'

/** What Fastify tells a compiler about the schema it wants compiled. */
export interface RouteSchemaKey {
  method: string
  url: string
  /** validators: body, querystring, params or headers */
  httpPart?: string
  /** serializers: the status and media type of the response */
  httpStatus?: string
  contentType?: string
}

type Kind = 'validators' | 'serializers'

/** Where the generated module for one route part lives: `validators/post_v1_pets_body.cjs`.
 * A HEAD route is Fastify's copy of a GET route, schemas included: it shares GET's modules. */
export function moduleName(kind: Kind, key: RouteSchemaKey): string {
  const method = key.method === 'HEAD' ? 'GET' : key.method
  const words = [method, key.url, key.httpPart ?? key.httpStatus, key.contentType].filter(Boolean).join(' ')
  return `${kind}/${words
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_|_$/g, '')
    .toLowerCase()}.cjs`
}

type SchemaController = NonNullable<FastifyServerOptions['schemaController']>
type CompilersFactory = NonNullable<SchemaController['compilersFactory']>

/** The validators and serializers of generated/, as the running server uses them: no schema is
 * compiled at startup. A route whose module is missing means generated/ is stale. */
export function generatedCompilers(dir: string = generatedDir): SchemaController {
  const require = createRequire(import.meta.url)
  // (a generated module exports the validator or serializer it was made as)
  const restore =
    <Compiled>(kind: Kind) =>
    (key: RouteSchemaKey) => {
      const file = join(dir, moduleName(kind, key))
      if (!existsSync(file)) {
        throw new Error(`${file} is missing: generated/ does not match the contract (openapi.yaml, contract/versions/); run npm run generate`)
      }
      return require(file) as Compiled
    }
  return {
    compilersFactory: {
      buildValidator: StandaloneValidator({ readMode: true, restoreFunction: restore('validators') }),
      buildSerializer: StandaloneSerializer({ readMode: true, restoreFunction: restore('serializers') }),
    },
  }
}

/**
 * Ajv's options for every part of a request. Values are taken as sent, never coerced: a JSON
 * `"12"` is not a number, and a query's `1e2` is not 100 (parameters.ts turns the text of
 * integer parameters into numbers first, strictly). Unknown properties are reported, not
 * removed; defaults from the schema are filled in.
 */
function ajvOptions(keywords: string[]) {
  return {
    coerceTypes: false,
    // NaN and Infinity are not numbers a client can mean
    strictNumbers: true,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: true,
    // errors carry their schema, so a message can quote the rule's description
    verbose: true,
    keywords,
  }
}

/**
 * Compilers that also hand the source of every validator and serializer to `store`, keyed by
 * module name: `npm run generate` compiles the contracts' route schemas with these and writes
 * what they store. `keywords` are the OpenAPI words that are not JSON Schema (`example`, `x-*`).
 * Each route part gets a compiler of its own, so that its module depends on its schema alone:
 * the names inside one (validate12, __fjs_merged_3) are counted per Ajv instance, and per
 * process by fast-json-stringify; shared, they would renumber a route's module whenever an
 * operation is added before it.
 */
export function recordingCompilers(store: (name: string, source: string) => void, keywords: string[]): SchemaController {
  const record = (kind: Kind) => (key: RouteSchemaKey, code: string) => store(moduleName(kind, key), code)
  const buildValidator = (externalSchemas: Record<string, unknown>, options: { customOptions?: object }) => (part: RouteSchemaKey) =>
    StandaloneValidator({ readMode: false, storeFunction: record('validators') })(externalSchemas as never, {
      ...options,
      customOptions: { ...options.customOptions, ...ajvOptions(keywords) },
    })(part)
  const buildSerializer = (externalSchemas: Record<string, unknown>, options: object) => (part: RouteSchemaKey) =>
    freshStandaloneSerializer()({ readMode: false, storeFunction: record('serializers') })(externalSchemas, options)(part as never)
  return { compilersFactory: { buildValidator, buildSerializer } as CompilersFactory }
}

/** StandaloneSerializer over fast-json-stringify loaded anew, whose counter of schema ids (a
 * variable of its module) then starts again at 0. */
function freshStandaloneSerializer(): typeof StandaloneSerializer {
  const require = createRequire(createRequire(import.meta.url).resolve('@fastify/fast-json-stringify-compiler'))
  for (const id of ['fast-json-stringify', './standalone.js']) delete require.cache[require.resolve(id)]
  return (require('./standalone.js') as { StandaloneSerializer: typeof StandaloneSerializer }).StandaloneSerializer
}

/** The words of OpenAPI schemas that JSON Schema lacks (and every `x-*` extension of `document`):
 * Ajv's strict mode must know them. */
export function openapiKeywords(document: object): string[] {
  const keywords = new Set(['example', 'discriminator', 'xml', 'externalDocs'])
  JSON.stringify(document, (key, value: unknown) => {
    if (key.startsWith('x-')) keywords.add(key)
    return value
  })
  return [...keywords].sort()
}
