import type { Test } from 'tap'
import type { Storage } from '../../src/repositories.js'

/**
 * Has `write` run once, for real, after the store's revision is next read and before what reads
 * on: a change committed between a request's revision and its rows (the store's revision read
 * is wrapped until the test ends).
 */
export function writeAfterNextRevision(t: Test, storage: Pick<Storage, 'revision'>, write: () => unknown): void {
  const revision = storage.revision
  let between: (() => unknown) | undefined = write
  storage.revision = async () => {
    const now = await revision()
    const pending = between
    between = undefined
    if (pending !== undefined) await pending()
    return now
  }
  t.teardown(() => void (storage.revision = revision))
}
