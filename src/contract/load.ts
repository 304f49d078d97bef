/** A contract read from its file: the text served as written, the document parsed once. */
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import type { OpenAPIV3 } from 'openapi-types'
import { parse } from 'yaml'
import { generatedDir, loadGenerated, projectRoot, specPath } from '../core/paths.js'
import { type Contract, readContract } from './model.js'
import { ContractError } from './problems.js'
import { majorOfSpecFile, versionText } from './version.js'

/** The documents of `dir` the server serves, one per major version, oldest first, found by their
 * names (majorOfSpecFile): a new major version is a new file. */
export const specPathsIn = (dir: string): string[] =>
  readdirSync(dir)
    .flatMap((name) => {
      const major = majorOfSpecFile(name)
      return major === undefined ? [] : [{ major, path: join(dir, name) }]
    })
    .sort((a, b) => a.major - b.major)
    .map(({ path }) => path)

/** The hand-written documents the server serves, oldest first: each beside the others, at the
 * base path of its servers (`/v1`, `/v2`). */
export const specPaths: readonly string[] = specPathsIn(projectRoot)
/** The newest version's document: where the server team works; handlers are written against it
 * (generated/newest.ts). */
export const newestSpecPath = specPaths.at(-1)!

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
  const contract = contractOf(document, { file: basename(path), source })
  // (a served document is found by its name: the name and the version it holds agree)
  const named = majorOfSpecFile(contract.file)
  if (named !== undefined && named !== contract.version[0]) {
    const message = `info.version ${versionText(contract.version)} is of major version ${contract.version[0]}, which the file's name does not say: a document of major version N is openapi-vN.yaml (version 1: openapi.yaml)`
    throw new ContractError(contract.file, [{ rule: 'version', path: ['info', 'version'], where: 'info.version', message }])
  }
  return contract
}

/** The contracts the server serves (core/paths.ts's specPaths), oldest first. */
export const loadContracts = (paths: readonly string[] = specPaths, generated: string | false = generatedDir) => paths.map((path) => loadContract(path, generated))

/** The contract of a document, or a ContractError naming every problem found in it. */
export function contractOf(document: OpenAPIV3.Document, options: { file?: string; source?: string } = {}): Contract {
  const { contract, problems } = readContract(document, options)
  if (problems.length > 0) throw new ContractError(contract.file, problems)
  return contract
}
