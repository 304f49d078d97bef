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
  return `${kind}/${words.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '').toLowerCase()}.cjs`
}

type SchemaController = NonNullable<FastifyServerOptions['schemaController']>
type CompilersFactory = NonNullable<SchemaController['compilersFactory']>

/** The validators and serializers of generated/, as the running server uses them: no schema is
 * compiled at startup. A route whose module is missing means generated/ is stale. */
export function generatedCompilers(dir: string = generatedDir): SchemaController {
  const require = createRequire(import.meta.url)
  const restore = (kind: Kind) => (key: RouteSchemaKey) => {
    const file = join(dir, moduleName(kind, key))
    if (!existsSync(file)) {
      throw new Error(`${file} is missing: generated/ does not match openapi.yaml; run npm run generate`)
    }
    return require(file)
  }
  return {
    compilersFactory: {
      buildValidator: StandaloneValidator({ readMode: true, restoreFunction: restore('validators') }),
      buildSerializer: StandaloneSerializer({ readMode: true, restoreFunction: restore('serializers') }),
    } as CompilersFactory,
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
 * module name: `npm run generate` builds the app with these and writes what they store.
 * `keywords` are the OpenAPI words that are not JSON Schema (`example`, `x-*`).
 */
export function recordingCompilers(store: (name: string, source: string) => void, keywords: string[]): SchemaController {
  const validators = StandaloneValidator({ readMode: false, storeFunction: (key, code) => store(moduleName('validators', key), code) })
  const buildValidator = (externalSchemas: Record<string, unknown>, options: { customOptions?: object }) =>
    validators(externalSchemas as never, { ...options, customOptions: { ...options.customOptions, ...ajvOptions(keywords) } })
  return {
    compilersFactory: {
      buildValidator,
      buildSerializer: StandaloneSerializer({ readMode: false, storeFunction: (key, code) => store(moduleName('serializers', key), code) }),
    } as CompilersFactory,
  }
}

/** The words of OpenAPI schemas that JSON Schema lacks (and every `x-*` extension of `document`):
 * Ajv's strict mode must know them. */
export function openapiKeywords(document: object): string[] {
  const keywords = new Set(['example', 'discriminator', 'xml', 'externalDocs'])
  JSON.stringify(document, (key, value) => {
    if (key.startsWith('x-')) keywords.add(key)
    return value
  })
  return [...keywords].sort()
}
