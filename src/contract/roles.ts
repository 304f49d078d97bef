/**
 * The roles of API keys, as the contract declares them: the catalogue (`x-roles` of the bearer
 * scheme), what each operation's `security` asks, what each event's `x-roles` asks. Who holds
 * which roles, and what a request may do with them, is src/auth/access.ts's.
 */
import type { Problems } from './problems.js'

/** A role of the catalogue, as the spec describes it. */
export interface Role {
  description: string
  /** given to a key issued without naming its roles */
  default: boolean
  /** given to the key a first start creates too (`categories:write`: its owner fills an empty
   * catalogue), beside the default roles */
  firstKey?: boolean
  /** store staff: sees and moves every client's orders, not only its own */
  seesEveryOrder?: boolean
}

/**
 * What an operation's `security` asks of a key's roles: one of the lists (OpenAPI's security
 * requirements are alternatives), every role of that list. Empty: no role is needed.
 */
export type RoleRequirement = readonly (readonly string[])[]

export interface RoleCatalogue {
  /** every role, by name, in the order the spec lists them */
  roles: ReadonlyMap<string, Role>
  /** the roles a key holds when none are named */
  defaults: readonly string[]
  /** the roles of the key a first start creates: the defaults and those marked `firstKey` */
  firstKey: readonly string[]
  /** the roles that see every client's orders (staff) */
  staff: readonly string[]
  /** the names of `roles` that are not in the catalogue */
  unknown(roles: readonly string[]): string[]
}

/** The bearer scheme, whose `x-roles` is the catalogue. */
export const bearerScheme = 'bearerAuth'

/** The catalogue of `x-roles` in the document's bearer scheme. */
export function readCatalogue(document: { components?: { securitySchemes?: Record<string, unknown> } }, problems: Problems): RoleCatalogue {
  const declared = (document.components?.securitySchemes?.[bearerScheme] as { 'x-roles'?: Record<string, Role> } | undefined)?.['x-roles'] ?? {}
  const roles = new Map(Object.entries(declared))
  for (const [name, role] of roles) {
    if (typeof role?.default !== 'boolean') {
      problems.add(
        'roles',
        ['components', 'securitySchemes', bearerScheme, 'x-roles', name],
        `role ${name}`,
        `role ${name} of ${bearerScheme} must say whether it is given by default (default: true or false)`,
      )
    }
    if (role?.firstKey !== undefined && typeof role.firstKey !== 'boolean') {
      problems.add(
        'roles',
        ['components', 'securitySchemes', bearerScheme, 'x-roles', name, 'firstKey'],
        `role ${name}`,
        `role ${name} of ${bearerScheme}: firstKey is true or false, not ${JSON.stringify(role.firstKey)}`,
      )
    }
  }
  return {
    roles,
    defaults: [...roles].filter(([, role]) => role?.default === true).map(([name]) => name),
    firstKey: [...roles].filter(([, role]) => role?.default === true || role?.firstKey === true).map(([name]) => name),
    staff: [...roles].filter(([, role]) => role?.seesEveryOrder === true).map(([name]) => name),
    unknown: (names) => names.filter((name) => !roles.has(name)),
  }
}

/** What `security` (an operation's, or the document's) asks of the bearer scheme's roles; a
 * role the catalogue lacks is reported: a typo would lock every key out. */
export function readRequirement(
  security: readonly Record<string, readonly string[]>[],
  catalogue: RoleCatalogue,
  at: readonly (string | number)[],
  where: string,
  problems: Problems,
): RoleRequirement {
  const requirement = security.map((alternative) => alternative[bearerScheme] ?? [])
  const missing = catalogue.unknown(requirement.flat())
  if (missing.length > 0) problems.add('roles', at, where, `needs ${missing.join(', ')}, which ${bearerScheme}'s x-roles does not list`)
  return requirement
}

/** An event's `x-roles`: the roles a key needs to receive it. */
export function readEventRoles(
  value: unknown,
  catalogue: RoleCatalogue,
  at: readonly (string | number)[],
  where: string,
  problems: Problems,
): readonly string[] {
  const roles = value ?? []
  if (!Array.isArray(roles) || roles.some((role) => typeof role !== 'string')) {
    problems.add('roles', at, where, 'x-roles must be a list of role names')
    return []
  }
  const missing = catalogue.unknown(roles)
  if (missing.length > 0) problems.add('roles', at, where, `needs ${missing.join(', ')}, which ${bearerScheme}'s x-roles does not list`)
  return roles as string[]
}
