/**
 * The served versions by their role, not their number: the oldest, the newest, the version a
 * version change leads to (what it alone still does), the one after a version. A test that names
 * a version so outlives `npm run new-major`, which makes openapi.yaml the next major and keeps
 * every older one served as it was.
 */
import { join } from 'node:path'
import type { Contract } from '../../src/contract/model.js'
import { projectRoot } from '../../src/core/paths.js'
import { newest, servedContracts } from './app.js'

/** The contracts the server serves, oldest first (src/contract/load.ts): test/helpers/app.ts's
 * own, so that a contract found here is one of those (a Map keyed by them finds it). */
export const served: readonly Contract[] = servedContracts
export const oldest = served[0]!
export { newest }

/** The served version of major `major`: a test reaching one found by a property (a change's
 * `.version`) by its number. */
export function servedMajor(major: number, contracts: readonly Contract[] = served): Contract {
  const found = contracts.find(({ version }) => version[0] === major)
  if (found === undefined) throw new Error(`no served version ${major}: served are ${contracts.map(({ version }) => version[0]).join(', ')}`)
  return found
}

/** The older version a version change leads to (`categoryObject`: the one that shows `categoryId`). */
export const ledToBy = (change: { readonly version: number }, contracts: readonly Contract[] = served): Contract => servedMajor(change.version, contracts)

/** The served version right after `contract`, the one its version changes lead from. */
export function nextAfter(contract: Contract, contracts: readonly Contract[] = served): Contract {
  const index = contracts.indexOf(contract)
  const next = index === -1 ? undefined : contracts[index + 1]
  if (next === undefined) throw new Error(`${contract.file}: no served version after version ${contract.version[0]}`)
  return next
}

/** The served versions after `contract`, oldest first. */
export const newerThan = (contract: Contract, contracts: readonly Contract[] = served): Contract[] =>
  contracts.filter(({ version }) => version[0] > contract.version[0])

/** The source of a served version, as a path (openapi.yaml, or its overlay): what
 * editedContract (test/helpers/spec.ts) edits. */
export const sourceOf = (contract: Contract) => join(projectRoot, contract.file)
