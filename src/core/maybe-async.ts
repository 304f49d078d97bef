/** A value now, or a promise of it: what a step answers when it usually knows at once. */
export type MaybePromise<T> = T | Promise<T>

/**
 * `next` of `value`: at once when `value` is no promise, else when it resolves. The hot path of
 * a request (a known key, a count kept in memory) then costs no promise and no turn of the
 * microtask queue; a value that must be waited for (a key store, Redis) is waited for.
 */
export function andThen<T, R>(value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return value instanceof Promise ? value.then(next) : next(value)
}
