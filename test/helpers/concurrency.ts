/** `work(0)` … `work(count - 1)`, at most `limit` at a time; the results in index order. */
export async function atMost<R>(limit: number, count: number, work: (i: number) => Promise<R>): Promise<R[]> {
  const results: R[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < count) {
        const i = next++
        results[i] = await work(i)
      }
    }),
  )
  return results
}

/** A pause of `ms`. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
