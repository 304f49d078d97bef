import type { FastifyRequest } from 'fastify'
import type { OpenAPIV3 } from 'openapi-types'
import { ApiError } from '../core/errors.js'
import type { MaybePromise } from '../core/maybe-async.js'
import type { Contract, Operation } from './spec.js'

/** A role of the catalogue, as openapi.yaml describes it. */
export interface Role {
  description: string
  /** given to a key issued without naming its roles */
  default: boolean
  /** store staff: sees and moves every client's orders, not only its own */
  seesEveryOrder?: boolean
}

/**
 * What an operation's `security` asks of a key's roles: one of the lists (OpenAPI's security
 * requirements are alternatives), every role of that list. Empty: no role is needed.
 */
export type RoleRequirement = readonly (readonly string[])[]

/** The roles of the bearer scheme, from openapi.yaml: the catalogue, and what each operation needs. */
export interface Roles {
  /** every role, by name, in the order the spec lists them */
  catalogue: ReadonlyMap<string, Role>
  /** the roles a key holds when none are named */
  defaults: readonly string[]
  /** the roles that see every client's orders (staff) */
  seeEveryOrder: readonly string[]
  /** what `operation` needs, read from its `security` (or the document's) */
  required(operation: Operation): RoleRequirement
  /** what a key needs to receive the event `type`: the `x-roles` of its entry under
   * `webhooks` (none when it names none) */
  ofEvent(type: string): readonly string[]
  /** the names of `roles` that are not in the catalogue */
  unknown(roles: readonly string[]): string[]
}

const scheme = 'bearerAuth'

/** The roles of openapi.yaml (the `x-roles` of its bearer scheme). A role that an operation
 * names but the catalogue lacks stops the start: a typo would lock every key out. */
export function rolesOf({ document, operations }: Pick<Contract, 'document' | 'operations'>): Roles {
  const declared = (document.components?.securitySchemes?.[scheme] as { 'x-roles'?: Record<string, Role> } | undefined)?.['x-roles'] ?? {}
  const catalogue = new Map(Object.entries(declared))
  for (const [name, role] of catalogue) {
    if (typeof role?.default !== 'boolean') throw new Error(`openapi.yaml: role ${name} of ${scheme} must say whether it is given by default (default: true or false)`)
  }
  const unknown = (roles: readonly string[]) => roles.filter((role) => !catalogue.has(role))
  const requirements = new Map<Operation, RoleRequirement>()
  for (const operation of operations.values()) {
    const security: OpenAPIV3.SecurityRequirementObject[] = operation.definition.security ?? document.security ?? []
    const requirement = security.map((alternative) => alternative[scheme] ?? [])
    const missing = unknown(requirement.flat())
    if (missing.length > 0) throw new Error(`openapi.yaml: ${operation.id} needs ${missing.join(', ')}, which ${scheme}'s x-roles does not list`)
    requirements.set(operation, requirement)
  }
  const events = new Map<string, readonly string[]>()
  for (const [type, pathItem] of Object.entries((document as { webhooks?: Record<string, unknown> }).webhooks ?? {})) {
    const roles = (pathItem as { post: { 'x-roles'?: unknown } }).post['x-roles'] ?? []
    if (!Array.isArray(roles) || roles.some((role) => typeof role !== 'string')) throw new Error(`openapi.yaml: x-roles of the event ${type} must be a list of role names`)
    const missing = unknown(roles)
    if (missing.length > 0) throw new Error(`openapi.yaml: the event ${type} needs ${missing.join(', ')}, which ${scheme}'s x-roles does not list`)
    events.set(type, roles)
  }
  return {
    catalogue,
    defaults: [...catalogue].filter(([, role]) => role.default).map(([name]) => name),
    seeEveryOrder: [...catalogue].filter(([, role]) => role.seesEveryOrder === true).map(([name]) => name),
    // (every operation of the contract is in the map)
    required: (operation) => requirements.get(operation)!,
    ofEvent: (type) => events.get(type) ?? [],
    unknown,
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
export const lackingRoles = (held: ReadonlySet<string>, needed: readonly string[]): string[] => needed.filter((role) => !held.has(role))

/** A request's hook that lets it on, at once or by a promise, or refuses it by throwing. */
type Guard<Args extends unknown[]> = (request: FastifyRequest, ...rest: Args) => MaybePromise<void>

/**
 * `authenticate` (which sets request.roles), then the roles `requirement` names: a key that lacks
 * them is a 403, after a missing or wrong key's 401 and before any 400 (the body is not read yet).
 * At once when authentication is.
 */
export function authorize<Args extends unknown[]>(authenticate: Guard<Args>, operation: Operation, requirement: RoleRequirement): Guard<Args> {
  if (requirement.every((roles) => roles.length === 0)) return authenticate
  const check = (request: FastifyRequest) => {
    if (!meets(request.roles, requirement)) {
      const lacking = lackingRoles(request.roles, requirement[0]!)
      throw new ApiError('forbidden', `This API key lacks the role ${lacking.join(' and ')}, which ${operation.id} needs`)
    }
  }
  return (request, ...rest) => {
    const authenticated = authenticate(request, ...rest)
    if (authenticated instanceof Promise) return authenticated.then(() => check(request))
    check(request)
  }
}
