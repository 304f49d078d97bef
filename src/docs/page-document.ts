/**
 * The document the documentation page shows: the published one, made for a person trying the
 * API in a browser. The published document (`/v2/openapi.json`, `.yaml`) stays as written, its
 * examples kept for SDKs and readers; only the page's copy differs:
 *
 * - titled with its version (`Pet Store Service — version 2`), so that two pages, and the tabs
 *   they are open in, are told apart;
 * - its description first says which version it is, where its published document is, and links
 *   the pages of the other versions served here;
 * - "Try it out" offers this server first (the page's Content-Security-Policy lets it call no
 *   other), at the version's base path, then the published servers;
 * - no optional parameter holds an example: Swagger UI fills a parameter with its example (or its
 *   schema's) when "Try it out" opens, so a first Execute of listPets would ask for `id=1` and
 *   `categoryId=1` and answer `[]`. A default stays: it fills the field with what the server
 *   would take anyway.
 */
import type { OpenAPIV3 } from 'openapi-types'
import type { Contract } from '../contract/model.js'
import { deref } from '../contract/pointer.js'

/** What the page calls its version: its tab, its definition menu and its heading. */
export const pageTitle = ({ document, version }: Contract) => `${document.info.title} — version ${version[0]}`

/** The page's document of `contract`, among the versions `served` (oldest first). */
export function pageDocument(contract: Contract, served: readonly Contract[]): OpenAPIV3.Document {
  const document = structuredClone(contract.document)
  const newest = served.at(-1)!
  const named = (other: Contract) => `version ${other.version[0]}${other === newest ? ' (the newest)' : ''}`
  const others = served.filter((other) => other !== contract).map((other) => `[${named(other)}](${other.service.paths.docs})`)
  const { json, yaml } = contract.service.paths
  const versions = [
    `**This page shows ${named(contract)}** of the API, whose published document is [${yaml}](${yaml}) ([JSON](${json})).`,
    ...(others.length === 0 ? [] : [`Other versions served here: ${others.join(', ')}.`]),
  ].join(' ')
  document.info = { ...document.info, title: pageTitle(contract), description: [versions, document.info.description].filter(Boolean).join('\n\n') }
  // (a served document has its servers: the contract model reads its base path from them)
  document.servers = [{ url: contract.basePath, description: 'This server' }, ...document.servers!]
  // the parameters of each path, and of each of its operations
  for (const item of Object.values({ ...document.paths })) {
    for (const holder of [item, ...Object.values({ ...item })] as { parameters?: unknown[] }[]) {
      if (Array.isArray(holder.parameters))
        holder.parameters = holder.parameters.map((parameter) => withoutPrefill(document, parameter as OpenAPIV3.ParameterObject))
    }
  }
  return document
}

/** An optional parameter as the page shows it: without the examples Swagger UI would fill it with
 * (its own, and its schema's, written out where it is a `$ref`). */
function withoutPrefill(
  document: OpenAPIV3.Document,
  written: OpenAPIV3.ParameterObject | OpenAPIV3.ReferenceObject,
): OpenAPIV3.ParameterObject | OpenAPIV3.ReferenceObject {
  const parameter = deref<OpenAPIV3.ParameterObject>(document, written)
  if (parameter.required === true) return written
  // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- the examples (typed any) are left out, never read
  const { example: _example, examples: _examples, ...rest } = parameter
  if (rest.schema === undefined) return rest
  // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- the examples (typed any) are left out, never read
  const { example: _schemaExample, examples: _schemaExamples, ...schema } = deref<OpenAPIV3.SchemaObject & { examples?: unknown }>(document, rest.schema)
  return { ...rest, schema }
}
