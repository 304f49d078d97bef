/**
 * The wait a `Retry-After` value asks for (RFC 9110, 10.2.3), in ms from `now`: delta-seconds, or
 * an HTTP-date (a date already past asks for none); undefined when it is neither.
 */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  const text = value?.trim() ?? ''
  if (/^\d+$/.test(text)) return Number(text) * 1000
  // (an HTTP-date names its day: a bare number that Date.parse would read as a year is not one)
  const at = /^[A-Za-z]{3}/.test(text) ? Date.parse(text) : Number.NaN
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}
