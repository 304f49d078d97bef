/**
 * The breaking differences between neighbouring served majors, as `npm run generate` found them
 * with the gate (generated/vN/breaking.cjs): a start cannot run the gate, and holds its version
 * changes to these, for the documents they were found between.
 */
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import type { Contract } from '../contract/model.js'
import { generatedDir, loadGenerated } from '../core/paths.js'
import type { Difference } from './coverage.js'

/** What generated/vN/breaking.cjs exports: the differences from version N-1 to N. */
export interface RecordedDifferences {
  /** the digests of the two documents compared (documentDigest) */
  older: string
  newer: string
  differences: Difference[]
}

export const recordedModule = 'breaking.cjs'

/** The digest of a document as bundled: which documents a record is of. */
export const documentDigest = (document: object) => createHash('sha256').update(JSON.stringify(document)).digest('hex')

/** By the older major of each neighbouring pair of `contracts` (oldest first): the differences
 * recorded between exactly these two documents; a pair recorded of other documents (generated/
 * out of date, or a test's edited copy) is not in it. */
export function recordedDifferences(contracts: readonly Contract[], dir: string = generatedDir): Map<number, readonly Difference[]> {
  const found = new Map<number, readonly Difference[]>()
  for (const [i, newer] of contracts.entries()) {
    const older = contracts[i - 1]
    if (older === undefined) continue
    const recorded = loadGenerated<RecordedDifferences>(join(dir, `v${newer.version[0]}`, recordedModule))
    if (recorded?.older === documentDigest(older.document) && recorded.newer === documentDigest(newer.document))
      found.set(older.version[0], recorded.differences)
  }
  return found
}
