import type { FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import { occurrences } from '../http/raw-headers.js'
import { hashKey, type KeyRepository } from '../storage/keys.js'

/** Whether a key, given as its SHA-256 (hashKey), is accepted. A store that cannot answer
 * throws: no answer is no access. */
export type KeyCheck = (digest: string) => boolean | Promise<boolean>

const realm = 'Bearer realm="petstore"'

/** `Bearer <token68>`, the scheme in any case (RFC 7235), the token as RFC 6750 allows it. */
const credentials = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i

/** The API key in `Authorization`, or the 401 that answers its absence or its form. */
export function bearerToken(request: FastifyRequest): string {
  const authorization = request.headers.authorization
  if (authorization === undefined || authorization === '') {
    throw new ApiError('unauthorized', 'Missing API key: send Authorization: Bearer <API_KEY>', { 'WWW-Authenticate': realm })
  }
  // Node keeps the first of several Authorization headers; which one the client meant is unknown.
  if (occurrences(request.raw.rawHeaders, 'authorization') > 1) {
    throw new ApiError('unauthorized', 'Send one Authorization header, not several', {
      'WWW-Authenticate': `${realm}, error="invalid_request"`,
    })
  }
  const match = credentials.exec(authorization)
  if (!match) {
    const bearer = /^bearer(\s|$)/i.test(authorization)
    throw new ApiError(
      'unauthorized',
      bearer ? 'Malformed bearer token: expected Bearer <API_KEY>' : 'Unsupported authorization scheme: send Authorization: Bearer <API_KEY>',
      // RFC 6750: a request without bearer credentials gets the bare challenge
      { 'WWW-Authenticate': bearer ? `${realm}, error="invalid_token"` : realm },
    )
  }
  return match[1] as string
}

/** The onRequest hook of every operation that requires bearerAuth: it runs before the body is
 * read or anything validated, so an unauthenticated request is a 401 whatever else is wrong. */
export function bearerAuth(check: KeyCheck) {
  return async function authenticate(request: FastifyRequest) {
    // hashed once: every check looks keys up by hash
    if (!(await check(hashKey(bearerToken(request))))) {
      throw new ApiError('unauthorized', 'Invalid API key', { 'WWW-Authenticate': `${realm}, error="invalid_token"` })
    }
  }
}

/** Keys given in the environment. Looked up by SHA-256: what a guess costs in time depends on
 * its hash, which tells nothing of the keys. */
export function staticKeys(keys: readonly string[]): KeyCheck {
  const digests = new Set(keys.map(hashKey))
  return (digest) => digests.has(digest)
}

/** Keys issued with `npm run keys`, kept in the store. */
export function storedKeys(keys: KeyRepository): KeyCheck {
  return async (digest) => (await keys.authenticate(digest)) !== undefined
}

/** Accepted when any of the checks accepts, tried in order. */
export function anyOf(...checks: KeyCheck[]): KeyCheck {
  return async (digest) => {
    for (const check of checks) if (await check(digest)) return true
    return false
  }
}
