import type { KeyRepository } from '../storage/keys.js'

/** The roles a principal (request.principal) holds now, or undefined when its key is accepted
 * no more (revoked, or gone from API_KEYS): for what is done on its behalf outside a request,
 * such as the events sent to its subscriptions. */
export type PrincipalRoles = (principal: string) => Promise<ReadonlySet<string> | undefined>

/** `key:<id>` is asked of the key store at each call (a revocation or a change of roles made on
 * any instance counts at once); `env:…` is looked up in `staticPrincipals` (bearer.ts). */
export function principalRoles(staticPrincipals: ReadonlyMap<string, ReadonlySet<string>>, keys: Pick<KeyRepository, 'activeRoles'>): PrincipalRoles {
  return async (principal) => {
    const stored = /^key:(\d+)$/.exec(principal)
    return stored ? keys.activeRoles(Number(stored[1])) : staticPrincipals.get(principal)
  }
}
