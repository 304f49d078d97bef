import type { PrincipalRoles } from '../auth/principals.js'
import { lackingRoles } from '../contract/roles.js'

/**
 * Why the key of a subscription (its principal, `owner`) may not receive an event of `type`,
 * which needs the roles `needed` (its x-roles in openapi.yaml), or undefined when it may: the
 * key is accepted no more, or lacks a role. (At most 200 characters: the spec's lastError.)
 */
export async function eventWithheld(owner: string, type: string, rolesOf: PrincipalRoles, needed: readonly string[]): Promise<string | undefined> {
  const roles = await rolesOf(owner)
  if (roles === undefined) return 'not sent: the API key of this subscription is no longer accepted (revoked, or removed from API_KEYS)'
  const lacking = lackingRoles(roles, needed)
  return lacking.length === 0 ? undefined : `not sent: the API key of this subscription no longer holds ${lacking.join(' and ')}, which ${type} needs`
}
