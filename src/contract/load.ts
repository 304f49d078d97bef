/** A contract read from its file: the text served as written, the document parsed once. */
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import type { OpenAPIV3 } from 'openapi-types'
import { parse } from 'yaml'
import { generatedDir, loadGenerated, specPath, specPaths } from '../core/paths.js'
import { type Contract, readContract } from './model.js'
import { ContractError } from './problems.js'

/** The spec's text, as generated/openapi.cjs names the one it was parsed from. */
export const sourceDigest = (source: string) => createHash('sha256').update(source).digest('hex')

/** What generated/openapi.cjs exports: openapi.yaml parsed at generate time, as JSON. */
export interface ParsedSpec {
  sourceSha256: string
  documentJson: string
}

export const parsedSpecModule = 'openapi.cjs'

/** The document parsed from `source` by `npm run generate`, when generated/ holds it (in the
 * folder of its version, generated/v1/...): parsing the YAML is a good part of the start-up
 * time; JSON.parse is a hundredth of it. */
function parsedAtGenerateTime(source: string, dir: string | false): OpenAPIV3.Document | undefined {
  if (dir === false || !existsSync(dir)) return undefined
  const digest = sourceDigest(source)
  for (const version of readdirSync(dir).filter((name) => /^v[0-9]+$/.test(name))) {
    const parsed = loadGenerated<ParsedSpec>(join(dir, version, parsedSpecModule))
    if (parsed?.sourceSha256 === digest) return JSON.parse(parsed.documentJson) as OpenAPIV3.Document
  }
  return undefined
}

/** The document of a spec file, as parsed by generate (in `generated`, unless false) when the
 * text is the same, or parsed now; and its text. */
function readDocument(path: string, generated: string | false = false): { source: string; document: OpenAPIV3.Document } {
  const source = readFileSync(path, 'utf8')
  return { source, document: parsedAtGenerateTime(source, generated) ?? (parse(source) as OpenAPIV3.Document) }
}

/** The contract of openapi.yaml (or the spec at `path`), or a ContractError naming every
 * problem that the server refuses to serve it with. */
export function loadContract(path: string = specPath, generated: string | false = generatedDir): Contract {
  const { source, document } = readDocument(path, generated)
  return contractOf(document, { file: basename(path), source })
}

/** The contracts the server serves (core/paths.ts's specPaths), oldest first. */
export const loadContracts = (paths: readonly string[] = specPaths, generated: string | false = generatedDir) => paths.map((path) => loadContract(path, generated))

/** The contract of a document, or a ContractError naming every problem found in it. */
export function contractOf(document: OpenAPIV3.Document, options: { file?: string; source?: string } = {}): Contract {
  const { contract, problems } = readContract(document, options)
  if (problems.length > 0) throw new ContractError(contract.file, problems)
  return contract
}
