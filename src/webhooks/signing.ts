import { createHmac, randomBytes } from 'node:crypto'

const secretPrefix = 'whsec_'

/** A signing secret as Standard Webhooks writes it: `whsec_` and the Base64 of 32 random bytes. */
export const newSecret = () => `${secretPrefix}${randomBytes(32).toString('base64')}`

/**
 * The Standard Webhooks headers of one attempt to deliver `body` (event `id`), signed at `now`
 * with each of `secrets`: `v1,` and the Base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed
 * with the bytes the secret encodes, space-separated when there are two (a rotation's overlap).
 */
export function signedHeaders(id: string, body: string, secrets: readonly string[], now = Date.now()): Record<string, string> {
  const timestamp = String(Math.floor(now / 1000))
  const signatures = secrets.map((secret) => {
    const key = Buffer.from(secret.slice(secretPrefix.length), 'base64')
    return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
  })
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') }
}
