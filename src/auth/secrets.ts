import { hash, randomBytes } from 'node:crypto'

/** A new API key, `pet_<8 hex>_<32 base64url>`: bearer-token safe, 192 random bits, and a
 * recognisable prefix (its first part) for logs and leaked-secret scanners. */
export function newApiKey(): { key: string; prefix: string } {
  const prefix = `pet_${randomBytes(4).toString('hex')}`
  return { key: `${prefix}_${randomBytes(24).toString('base64url')}`, prefix }
}

/** How a key is known without being kept: its SHA-256, in hex. */
export const hashKey = (key: string) => hash('sha256', key)
