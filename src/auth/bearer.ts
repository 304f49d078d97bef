import type { Socket } from 'node:net'
import type { FastifyRequest } from 'fastify'
import { ApiError } from '../core/errors.js'
import { occurrences } from '../http/raw-headers.js'
import { type Grant, staticKeyPrincipal } from './access.js'
import { hashKey } from './secrets.js'

/** Who a key, given as its SHA-256 (hashKey), belongs to (its principal) and the roles it
 * holds, or undefined when it is not accepted: at once when known without asking a store, else
 * by a promise. A store that cannot answer throws: no answer is no access. */
export interface KeyCheck {
  (digest: string): Grant | undefined | Promise<Grant | undefined>
  /** the same, from what is known without asking a store alone, at once: undefined for a key
   * it would have to ask a store about */
  known(digest: string): Grant | undefined
}

/** Sets request.principal, or throws: at once, or by a promise when a store is asked. */
export interface Authenticate {
  (request: FastifyRequest): void | Promise<void>
  /** the same, at once, from what is known without asking a store (KeyCheck.known) */
  known(request: FastifyRequest): void
}

const keyCheck = (check: (digest: string) => ReturnType<KeyCheck>, known: KeyCheck['known']): KeyCheck => Object.assign(check, { known })

const realm = 'Bearer realm="petstore"'

/** `Bearer <token68>`, the scheme in any case (RFC 7235), the token as RFC 6750 allows it. */
const credentials = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i

/** The last Authorization of each connection that held a well-formed bearer token, and the
 * token's SHA-256: a client sends the same key with each request of a connection, and the hash
 * was the largest part of the check. (Only the digest is kept: whether it is accepted is asked
 * anew at each request.) */
const lastBearer = new WeakMap<Socket, { authorization: string; digest: string }>()

/** The SHA-256 (hashKey) of the API key in `Authorization`, or the 401 that answers its
 * absence or its form: the digest of the connection's last request when it sent the same. */
function bearerDigest(request: FastifyRequest): string {
  const authorization = bearerAuthorization(request)
  const socket = request.raw.socket
  const last = lastBearer.get(socket)
  if (last !== undefined && last.authorization === authorization) return last.digest
  const digest = hashKey(bearerToken(authorization))
  lastBearer.set(socket, { authorization, digest })
  return digest
}

/** The request's one Authorization header, or the 401 that answers its absence or repetition. */
function bearerAuthorization(request: FastifyRequest): string {
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
  return authorization
}

/** The API key of an Authorization value, or the 401 that answers its form. */
function bearerToken(authorization: string): string {
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
export function bearerAuth(check: KeyCheck): Authenticate {
  function authenticate(request: FastifyRequest): void | Promise<void> {
    // hashed once: every check looks keys up by hash
    const checked = check(bearerDigest(request))
    // (a key known at once costs no promise: most requests come with one)
    if (checked instanceof Promise) return checked.then((found) => grant(request, found))
    grant(request, checked)
  }
  return Object.assign(authenticate, { known: (request: FastifyRequest) => grant(request, check.known(bearerDigest(request))) })
}

/** Gives the request what the key's grant allows, or refuses a key that has none. */
function grant(request: FastifyRequest, found: Grant | undefined): void {
  if (found === undefined) {
    throw new ApiError('unauthorized', 'Invalid API key', { 'WWW-Authenticate': `${realm}, error="invalid_token"` })
  }
  request.principal = found.principal
  request.roles = found.roles
}

/** A key of API_KEYS and the roles it holds: `KEY` (the default roles) or `KEY:role+role`. */
export interface StaticKey {
  key: string
  /** undefined: the default roles */
  roles?: readonly string[]
}

/** An entry of API_KEYS read: the key before the first `:` (a bearer token holds none), then
 * its roles joined by `+` (a role name holds none). */
export function staticKey(entry: string): StaticKey {
  const colon = entry.indexOf(':')
  return colon === -1 ? { key: entry } : { key: entry.slice(0, colon), roles: entry.slice(colon + 1).split('+') }
}

/** The grant of each key of API_KEYS, by the key's SHA-256: its principal (`env:` and the
 * hash's first 12 hex digits, a stable name that is not the secret) and its roles (`defaults`
 * when it names none). */
function staticGrants(keys: readonly StaticKey[], defaults: readonly string[]): Map<string, Grant> {
  return new Map(
    keys.map(({ key, roles = defaults }) => {
      const digest = hashKey(key)
      return [digest, { principal: staticKeyPrincipal(digest), roles: new Set(roles) }] as const
    }),
  )
}

/** Keys given in the environment, each with its roles (`defaults` when it names none). Looked
 * up by SHA-256: what a guess costs in time depends on its hash, which tells nothing of the keys. */
export function staticKeys(keys: readonly StaticKey[], defaults: readonly string[]): KeyCheck {
  const grants = staticGrants(keys, defaults)
  const check = (digest: string) => grants.get(digest)
  return keyCheck(check, check)
}

/** The roles each key of API_KEYS holds, by its principal. */
export function staticPrincipals(keys: readonly StaticKey[], defaults: readonly string[]): ReadonlyMap<string, ReadonlySet<string>> {
  return new Map([...staticGrants(keys, defaults).values()].map(({ principal, roles }) => [principal, roles]))
}

/** The key store, as authentication asks it (keys.ts's KeyRepository). */
export interface StoredKeys {
  /** the grant of an active key by its SHA-256, at once when known, else by a promise */
  authenticate(digest: string): Grant | Promise<Grant | undefined>
  /** the same, from what is known without a query: undefined for any other */
  known(digest: string): Grant | undefined
}

/** Keys issued with `npm run keys`, kept in the store (known at once: those in use, cached). */
export function storedKeys(keys: StoredKeys): KeyCheck {
  return keyCheck(
    (digest) => keys.authenticate(digest),
    (digest) => keys.known(digest),
  )
}

/** Accepted when any of the checks accepts, tried in order; at once when every check it needs
 * answers at once. */
export function anyOf(...checks: KeyCheck[]): KeyCheck {
  const from = (first: number, digest: string): ReturnType<KeyCheck> => {
    for (let i = first; i < checks.length; i++) {
      const grant = checks[i]!(digest)
      if (grant instanceof Promise) return grant.then((found) => found ?? from(i + 1, digest))
      if (grant !== undefined) return grant
    }
    return undefined
  }
  return keyCheck(
    (digest) => from(0, digest),
    (digest) => {
      for (const check of checks) {
        const grant = check.known(digest)
        if (grant !== undefined) return grant
      }
      return undefined
    },
  )
}
