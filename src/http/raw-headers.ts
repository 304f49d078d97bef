/** How many times a header (its name in lower case) appears among a request's raw name/value
 * pairs: Node keeps only the first of some repeated headers (Host, Authorization). */
export function occurrences(rawHeaders: readonly string[], name: string): number {
  let count = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.length === name.length && rawHeaders[i]!.toLowerCase() === name) count++
  }
  return count
}
