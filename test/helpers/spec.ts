import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { OpenAPIV3 } from 'openapi-types'
import { stringify } from 'yaml'
import { loadContract } from '../../src/contract/load.js'
import { type Contract } from '../../src/contract/model.js'

/** openapi.yaml after `edit`, written to a file and loaded from it, as the server would load it. */
export function editedContract(edit: (document: OpenAPIV3.Document) => void): Contract {
  const document = structuredClone(loadContract().document)
  edit(document)
  const path = join(mkdtempSync(join(tmpdir(), 'petstore-spec-')), 'openapi.yaml')
  writeFileSync(path, stringify(document))
  return loadContract(path)
}
