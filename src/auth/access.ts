/**
 * Who may do what: the one module that owns principals (the stable names of API keys), the roles
 * they hold against what operations and events ask (openapi.yaml's `security` and `x-roles`),
 * and the ownership scopes of what clients create. Storage keeps principals as it is given them;
 * the handlers ask this module, never the roles themselves.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Operation } from '../contract/model.js'
import type { RoleCatalogue, RoleRequirement } from '../contract/roles.js'
import { ApiError, OperatorError } from '../core/errors.js'
import type { MaybePromise } from '../core/maybe-async.js'

/** What an accepted key is let do: who it is (its principal) and its roles. */
export interface Grant {
  principal: string
  roles: ReadonlySet<string>
}

/** The principal of a key issued with `npm run keys`: `key:<id>`. */
export const storedKeyPrincipal = (id: number) => `key:${id}`

/** The principal of an API_KEYS key, given its SHA-256 in hex: `env:` and its first 12 digits
 * (a stable name that is not the secret). */
export const staticKeyPrincipal = (digest: string) => `env:${digest.slice(0, 12)}`

/** The id of the stored key a principal names, or undefined for an API_KEYS one. */
export function storedKeyIdOf(principal: string): number | undefined {
  const stored = /^key:(\d+)$/.exec(principal)
  return stored === null ? undefined : Number(stored[1])
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The principal of the API key the request was authenticated with; empty on operations
     * that need no key. What is kept per client is kept under it. */
    principal: string
    /** The roles of that key as it holds them now; null on operations that need no key. */
    roles: ReadonlySet<string>
  }
}

/** Whether `held` holds every role of one of the lists of `requirement` (on every request of
 * an operation that needs roles: loops, no closure). */
function meets(held: ReadonlySet<string>, requirement: RoleRequirement): boolean {
  for (const roles of requirement) {
    let all = true
    for (const role of roles) all &&= held.has(role)
    if (all) return true
  }
  return false
}

/** The roles of `needed` that `held` lacks, in the order `needed` names them. */
const lackingRoles = (held: ReadonlySet<string>, needed: readonly string[]): string[] => needed.filter((role) => !held.has(role))

/** A request's hook that lets it on, at once or by a promise, or refuses it by throwing. */
export type Guard = (request: FastifyRequest, reply: FastifyReply) => MaybePromise<void>

/**
 * `authenticate` (which sets request.principal and request.roles), then the roles the operation
 * asks: a key that lacks them is a 403, after a missing or wrong key's 401 and before any 400
 * (the body is not read yet). At once when authentication is.
 */
export function authorize(authenticate: Guard, operation: Operation): Guard {
  // (called for the operations that need a key, whose roles are read)
  const requirement = operation.roles!
  if (requirement.every((roles) => roles.length === 0)) return authenticate
  const check = (request: FastifyRequest) => {
    if (!meets(request.roles, requirement)) {
      throw new ApiError('forbidden', `This API key lacks the role ${lackingRoles(request.roles, requirement[0]!).join(' and ')}, which ${operation.id} needs`)
    }
  }
  return (request, reply) => {
    const authenticated = authenticate(request, reply)
    if (authenticated instanceof Promise) return authenticated.then(() => check(request))
    check(request)
  }
}

/** The 403 of a subscription to events that a key lacks the roles of, or undefined when it
 * holds them all. `eventRoles` gives an event's roles. */
export function subscriptionRefusal(
  held: ReadonlySet<string>,
  types: readonly string[],
  eventRoles: (type: string) => readonly string[],
): ApiError<'forbidden'> | undefined {
  for (const type of types) {
    const lacking = lackingRoles(held, eventRoles(type))
    if (lacking.length > 0) return new ApiError('forbidden', `This API key lacks the role ${lacking.join(' and ')}, which the event ${type} needs`)
  }
  return undefined
}

/** The roles a principal holds now, or undefined when its key is accepted no more (revoked, or
 * gone from API_KEYS): for what is done on its behalf outside a request, such as the events sent
 * to its subscriptions. */
export type PrincipalRoles = (principal: string) => Promise<ReadonlySet<string> | undefined>

/** A stored key is asked of the key store at each call (a revocation or a change of roles made
 * on any instance counts at once); an API_KEYS key is looked up among `staticRoles`. */
export function principalRoles(
  staticRoles: ReadonlyMap<string, ReadonlySet<string>>,
  activeRoles: (id: number) => Promise<ReadonlySet<string> | undefined>,
): PrincipalRoles {
  return async (principal) => {
    const id = storedKeyIdOf(principal)
    return id === undefined ? staticRoles.get(principal) : activeRoles(id)
  }
}

/**
 * Why the key of a subscription (its principal, `owner`) may not receive an event of `type`,
 * which needs the roles `needed`, or undefined when it may: the key is accepted no more, or lacks
 * a role. Cut to `maxLength` (what the spec allows a delivery's lastError).
 */
export async function eventWithheld(
  owner: string,
  type: string,
  rolesNow: PrincipalRoles,
  needed: readonly string[],
  maxLength: number,
): Promise<string | undefined> {
  const roles = await rolesNow(owner)
  if (roles === undefined) return 'not sent: the API key of this subscription is no longer accepted (revoked, or removed from API_KEYS)'.slice(0, maxLength)
  const lacking = lackingRoles(roles, needed)
  const why = lacking.length === 0 ? undefined : `not sent: the API key of this subscription no longer holds ${lacking.join(' and ')}, which ${type} needs`
  return why?.slice(0, maxLength)
}

/** Every order, whoever placed it: the scope of store staff. */
export const allOrders: unique symbol = Symbol('every order')

/** Whose orders a request sees: those of one principal (the key that placed them), or every
 * order (`allOrders`: store staff). */
export type OrderScope = string | typeof allOrders

/** Whose orders a request sees: every order for a key holding one of the catalogue's staff
 * roles (`seesEveryOrder`), else those of its own key. */
export function orderScope(catalogue: Pick<RoleCatalogue, 'staff'>): (request: FastifyRequest) => OrderScope {
  const staff = catalogue.staff
  return (request) => {
    for (const role of staff) if (request.roles.has(role)) return allOrders
    return request.principal
  }
}

/** The roles named in `roles` that the catalogue lacks, as the one line that refuses them. */
function unknownRolesError(roles: readonly string[], catalogue: RoleCatalogue, what: string): string | undefined {
  const unknown = catalogue.unknown(roles)
  return unknown.length === 0 ? undefined : `${what} names the role ${unknown.join(', ')}, which is not one of ${[...catalogue.roles.keys()].join(', ')}`
}

/** Refuses keys (API_KEYS) that name a role the catalogue lacks: checked before the server opens
 * anything (storage, Redis), which a refusal would leave open. */
export function refuseUnknownRoles(keys: readonly { roles?: readonly string[] }[], catalogue: RoleCatalogue): void {
  for (const { roles = [] } of keys) {
    const refused = unknownRolesError(roles, catalogue, 'API_KEYS')
    if (refused !== undefined) throw new OperatorError(`invalid configuration: ${refused}`)
  }
}
