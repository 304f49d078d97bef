import type { MaybePromise } from './maybe-async.js'

/**
 * One read for every caller that asked for it since the last one was made: the read is made at
 * the end of the current turn of the event loop (`setImmediate`, after every socket that was
 * readable has been read), and each caller gets its answer. What a request learns this way is as
 * fresh as a read of its own: the read is made after the request arrived, so it sees every change
 * committed before. A caller that asks while a read is under way waits for the next one, made
 * after it asked. Under load, one read serves the requests of a turn (tens, at 50 connections)
 * where each made its own; alone, a request waits for the end of its turn.
 */
export function sharedRead<T>(read: () => MaybePromise<T>): () => Promise<T> {
  let next: Promise<T> | undefined
  const made = (resolve: (value: MaybePromise<T>) => void, reject: (error: unknown) => void) => {
    setImmediate(() => {
      // (from here on, a caller waits for a read made after it asked)
      next = undefined
      try {
        resolve(read())
      } catch (error) {
        reject(error)
      }
    })
  }
  return () => (next ??= new Promise<T>(made))
}

/** Resolves at the end of the current turn of the event loop: the same promise for every caller of a turn. */
export const endOfTurn: () => Promise<void> = sharedRead(() => undefined)

/**
 * sharedRead of values by key: the keys asked during a turn of the event loop are read together,
 * in one call of `readMany` at its end (which answers each of them), and each caller gets its
 * key's value. As fresh as a read of its own, as above.
 */
export function sharedReadOf<V>(readMany: (keys: readonly string[]) => MaybePromise<ReadonlyMap<string, V>>): (key: string) => Promise<V> {
  let keys = new Set<string>()
  const read = sharedRead(() => {
    const asked = [...keys]
    keys = new Set()
    return readMany(asked)
  })
  return (key) => {
    keys.add(key)
    return read().then((values) => values.get(key)!)
  }
}
