import type { Test } from 'tap'
import type { Storage } from '../../src/repositories.js'

/**
 * Has `write` run once, for real, after the revisions of the store's parts are next read and
 * before what reads on: a change committed between a request's revision and its rows (the
 * store's read of revisions is wrapped until the test ends).
 */
export function writeAfterNextRevision(t: Test, storage: Pick<Storage, 'revisions'>, write: () => unknown): void {
  const revisions = storage.revisions
  let between: (() => unknown) | undefined = write
  storage.revisions = async (parts) => {
    const now = await revisions(parts)
    const pending = between
    between = undefined
    if (pending !== undefined) await pending()
    return now
  }
  t.teardown(() => void (storage.revisions = revisions))
}
