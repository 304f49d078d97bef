interface Waiting<T, R> {
  item: T
  resolve: (result: R) => void
  reject: (error: unknown) => void
}

/**
 * Writes that arrive in the same turn of the event loop, or while the previous batch is being
 * written, are handed to `writeAll` together, to be committed in one transaction. On SQLite with
 * synchronous=FULL a commit costs an fsync (about 0.3 ms here, during which the process waits):
 * one per batch instead of one per write. Each write still resolves only once the commit that
 * holds it is done; when a batch fails, each of its writes fails.
 */
export function groupCommit<T, R>(writeAll: (items: T[]) => Promise<R[]>): (item: T) => Promise<R> {
  let waiting: Waiting<T, R>[] = []

  async function flush() {
    const batch = waiting
    waiting = []
    try {
      const results = await writeAll(batch.map(({ item }) => item))
      batch.forEach(({ resolve }, i) => resolve(results[i]!))
    } catch (error) {
      for (const { reject } of batch) reject(error)
    }
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      if (waiting.push({ item, resolve, reject }) === 1) setImmediate(flush)
    })
}
