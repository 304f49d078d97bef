import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'

/** Whether a token is an accepted API key. A store that cannot answer throws: no answer is no access. */
export type KeyCheck = (token: string) => boolean | Promise<boolean>

const realm = 'Bearer realm="petstore"'

/** `Bearer <token68>`, the scheme in any case (RFC 7235), the token as RFC 6750 allows it. */
const credentials = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i

/** The API key in `Authorization`, or the 401 that answers its absence or its form. */
export function bearerToken(authorization: string | undefined): string {
  if (authorization === undefined || authorization === '') {
    throw new ApiError('unauthorized', 'Missing API key: send Authorization: Bearer <API_KEY>', { 'WWW-Authenticate': realm })
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
export function bearerAuth(isValidKey: KeyCheck) {
  return async function authenticate(request: FastifyRequest) {
    if (!(await isValidKey(bearerToken(request.headers.authorization)))) {
      throw new ApiError('unauthorized', 'Invalid API key', { 'WWW-Authenticate': `${realm}, error="invalid_token"` })
    }
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest()

/** Keys given in the environment, compared in constant time: every configured key is compared,
 * always, and digests of equal length hide how much of a key matched. */
export function staticKeys(keys: readonly string[]): KeyCheck {
  const digests = keys.map(digest)
  return (token) => {
    const candidate = digest(token)
    let found = false
    for (const known of digests) found = timingSafeEqual(candidate, known) || found
    return found
  }
}

/** Accepted when any of the checks accepts, tried in order. */
export function anyOf(...checks: KeyCheck[]): KeyCheck {
  return async (token) => {
    for (const check of checks) if (await check(token)) return true
    return false
  }
}
