import type SQLite from 'better-sqlite3'

/**
 * Whether the API keys may have changed in another process (a revocation by `npm run keys`, or
 * by another instance) since the last call. A cache of keys asks it before each use: when the
 * answer is true, or unknown, the cache starts over.
 */
export interface KeyChanges {
  /** true when api_keys may have changed since the last call, or when this cannot be known */
  changed(): boolean
  /** resolves once a change committed before the call is seen by every instance's next
   * `changed()`: what a revocation waits for before it reports itself done */
  propagated(): Promise<void>
  close(): Promise<void>
}

/** How long an answer of SQLite's data_version stands (see sqliteKeyChanges): asked at most 50
 * times a second, a statement's 20–40 µs under load no longer weighs on reads (at once a
 * millisecond, it was their largest cost after the read itself). */
export const dataVersionWindowMs = 20

/**
 * SQLite counts the commits of other connections to the file (PRAGMA data_version): a change
 * of the count means another process wrote something, perhaps a key. Our own writes do not
 * count; the key repository forgets what it changes itself.
 *
 * Asking costs a statement (the largest cost of a read request when asked by each), so an
 * answer stands for dataVersionWindowMs, and a revocation waits that long after its commit
 * before it reports itself done (propagated). A request that comes after the revocation is
 * done therefore arrives more than the window after the commit, and any answer it is given was
 * asked after the commit: it sees the revocation. (Instances on one SQLite file share a
 * machine, and so the pace of their monotonic clocks.)
 */
export function sqliteKeyChanges(connection: SQLite.Database, windowMs = dataVersionWindowMs): KeyChanges {
  const dataVersion = connection.prepare('pragma data_version').pluck()
  let seen = dataVersion.get()
  let askedAt = performance.now()
  return {
    changed() {
      const now = performance.now()
      if (now - askedAt < windowMs) return false
      askedAt = now
      const version = dataVersion.get()
      if (version === seen) return false
      seen = version
      return true
    },
    propagated: () => new Promise((resolve) => setTimeout(resolve, windowMs + 1)),
    close: async () => {},
  }
}

/** The channel that a trigger on api_keys notifies (migration 0003). */
export const keysChannel = 'petstore_api_keys'
