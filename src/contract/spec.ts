import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { OpenAPIV3 } from 'openapi-types'
import { parse } from 'yaml'
import { generatedDir, loadGenerated, specPath } from '../core/paths.js'
import { type Roles, rolesOf } from './roles.js'

/** An operation's object as written in the spec, with its `x-*` extensions. */
export type OperationDefinition = OpenAPIV3.OperationObject & { [extension: `x-${string}`]: unknown }

export interface Operation {
  id: string
  /** HTTP method, upper case */
  method: string
  /** the path template as written in the spec, e.g. `/pets/{petId}` */
  path: string
  definition: OperationDefinition
}

/** openapi.yaml, read once at startup: everything the server knows about its interface. */
export interface Contract {
  /** the file exactly as written, served byte for byte */
  source: string
  document: OpenAPIV3.Document
  /** the path every server URL ends in (`/v1`): the prefix of every route */
  basePath: string
  operations: ReadonlyMap<string, Operation>
  /** the roles of API keys, and those each operation needs */
  roles: Roles
  /** the methods the spec serves at a request path (`/v1/pets/7`), or undefined for a path it lacks */
  methodsAt(path: string): string[] | undefined
  /** the operation that serves `method` at a request path (HEAD as GET), if any */
  operationAt(method: string, path: string): Operation | undefined
  /** where an operation is served: its path under the base path, with the values of its path
   * parameters (`urlOf('getPet', { petId: 7 })` is `/v1/pets/7`) */
  urlOf(operationId: string, params?: Record<string, string | number>): string
}

/** A node of the document, with a local `$ref` (`#/components/...`) followed. */
export function deref<T>(document: OpenAPIV3.Document, node: T | OpenAPIV3.ReferenceObject): T {
  if (typeof node !== 'object' || node === null || !('$ref' in node)) return node as T
  const found = node.$ref
    .slice(2)
    .split('/')
    .reduce<unknown>((parent, key) => (parent as Record<string, unknown>)?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], document)
  if (found === undefined) throw new Error(`openapi.yaml: ${node.$ref} points to nothing`)
  return deref(document, found as T)
}

const methods = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

/** The spec's text, as generated/openapi.cjs names the one it was parsed from. */
export const sourceDigest = (source: string) => createHash('sha256').update(source).digest('hex')

/** What generated/openapi.cjs exports: openapi.yaml parsed at generate time, as JSON. */
export interface ParsedSpec {
  sourceSha256: string
  documentJson: string
}

export const parsedSpecModule = 'openapi.cjs'

/** The document parsed from `source` by `npm run generate`, when generated/ holds it: parsing
 * the YAML is a good part of the start-up time; JSON.parse is a hundredth of it. */
function parsedAtGenerateTime(source: string, dir: string | false): OpenAPIV3.Document | undefined {
  if (dir === false) return undefined
  const parsed = loadGenerated<ParsedSpec>(join(dir, parsedSpecModule))
  return parsed?.sourceSha256 === sourceDigest(source) ? (JSON.parse(parsed.documentJson) as OpenAPIV3.Document) : undefined
}

/** openapi.yaml (or the spec at `path`): the text is served as it is, and its document is the
 * one generate parsed (in `generated`, unless false) when the text is the same, or parsed now. */
export function loadContract(path: string = specPath, generated: string | false = generatedDir): Contract {
  const source = readFileSync(path, 'utf8')
  const document = parsedAtGenerateTime(source, generated) ?? (parse(source) as OpenAPIV3.Document)
  const basePath = basePathOf(document)
  const operations = operationsOf(document)
  const at = pathsOf(basePath, operations)
  return {
    source,
    document,
    basePath,
    operations,
    roles: rolesOf({ document, operations }),
    methodsAt: (path) => at(path)?.methods,
    operationAt: (method, path) => at(path)?.operations.get(method === 'HEAD' ? 'GET' : method),
    urlOf(operationId, params = {}) {
      const operation = operations.get(operationId)
      if (operation === undefined) throw new Error(`openapi.yaml has no operation ${operationId}`)
      const path = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
        if (params[name] === undefined) throw new Error(`${operationId}'s URL needs ${name}`)
        return encodeURIComponent(params[name])
      })
      return `${basePath}${path}`
    },
  }
}

/** `/pets/{petId}` matches `/v1/pets/7`: a template becomes a pattern under the base path. */
function pathsOf(basePath: string, operations: Map<string, Operation>) {
  interface PathEntry {
    pattern: RegExp
    methods: string[]
    operations: Map<string, Operation>
  }
  const paths = new Map<string, PathEntry>()
  for (const operation of operations.values()) {
    const { path, method } = operation
    const pattern = new RegExp(`^${basePath}${path.replace(/\{[^}]+\}/g, '[^/]+')}$`)
    const entry: PathEntry = paths.get(path) ?? { pattern, methods: [], operations: new Map() }
    // HEAD is served wherever GET is (RFC 9110)
    entry.methods.push(...(method === 'GET' ? ['GET', 'HEAD'] : [method]))
    entry.operations.set(method, operation)
    paths.set(path, entry)
  }
  return (requestPath: string) => [...paths.values()].find(({ pattern }) => pattern.test(requestPath))
}

/** The servers differ in host only: the path they share is where the API is mounted. */
function basePathOf(document: OpenAPIV3.Document): string {
  const paths = new Set(
    (document.servers ?? []).map(({ url }) => new URL(url, 'http://localhost').pathname.replace(/\/+$/, '')),
  )
  if (paths.size !== 1) {
    throw new Error(`openapi.yaml: every server URL must end in the same base path, found ${JSON.stringify([...paths])}`)
  }
  return [...paths][0] as string
}

function operationsOf(document: OpenAPIV3.Document): Map<string, Operation> {
  const operations = new Map<string, Operation>()
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, definition] of Object.entries(item as Record<string, OperationDefinition>)) {
      if (!methods.has(method)) continue
      if (!definition.operationId) throw new Error(`openapi.yaml: ${method.toUpperCase()} ${path} has no operationId`)
      operations.set(definition.operationId, { id: definition.operationId, method: method.toUpperCase(), path, definition })
    }
  }
  return operations
}
