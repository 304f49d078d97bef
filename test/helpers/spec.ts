import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { OpenAPIV3 } from 'openapi-types'
import { stringify } from 'yaml'
import { loadContract, specPaths } from '../../src/contract/load.js'
import { type Contract } from '../../src/contract/model.js'
import { deref } from '../../src/contract/pointer.js'

/** `text` as a regular expression that matches it alone (a file's name in a message). */
export const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** The oldest served major's source (version 1's overlay): the tests of what it alone has
 * (getPet, deprecated) read it. */
export const oldestSpecPath = specPaths[0]!

/** The document of `spec` (the oldest's unless told: lifecycle.test.ts edits version 1's
 * getPet) as served, after `edit`, written to a file, openapi.yaml, and loaded from it as the
 * server would load it. A test of what every version shares edits the newest's (newestSpecPath). */
export function editedContract(edit: (document: OpenAPIV3.Document) => void, spec: string = oldestSpecPath): Contract {
  const document = structuredClone(loadContract(spec).document)
  edit(document)
  const dir = mkdtempSync(join(tmpdir(), 'petstore-spec-'))
  const path = join(dir, 'openapi.yaml')
  writeFileSync(path, stringify(document))
  try {
    return loadContract(path)
  } finally {
    // (the contract is read whole at its load: nothing reads the file again)
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The request body examples of an operation, in the document's order, by name (its
 * `examples`; its one `example` is named `example`). */
export function requestExamples({ document, operations }: Contract, operationId: string): { name: string; value: unknown }[] {
  const media = deref<OpenAPIV3.RequestBodyObject>(document, operations.get(operationId)!.definition.requestBody!).content['application/json']!
  if (media.examples === undefined) return [{ name: 'example', value: media.example }]
  return Object.entries(media.examples).map(([name, example]) => ({ name, value: deref<OpenAPIV3.ExampleObject>(document, example).value }))
}
