import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Operation } from '../contract/model.js'
import { authorize, type Guard, type OrderScope, orderScope, type PrincipalRoles, principalRoles } from './access.js'
import { anyOf, bearerAuth, type StaticKey, staticKeys, staticPrincipals, storedKeys } from './bearer.js'

declare module 'fastify' {
  interface FastifyInstance {
    access: {
      /** what an operation's requests go through first: the key and the roles its `security`
       * asks, within the key's rate limit; the rate limit of requests without a key when it
       * needs none */
      guardOf: (operation: Operation) => Guard
      /** the roles a principal holds now, for what is done on its behalf outside a request */
      rolesNow: PrincipalRoles
      /** whose orders a request sees */
      orderScope: (request: FastifyRequest) => OrderScope
    }
  }
}

/**
 * Keys and who may do what: the keys of API_KEYS (each with its roles, from the contract's
 * catalogue) and those of the store, checked by the bearer scheme within the rate limits, then
 * the roles each operation asks (src/auth/access.ts).
 */
async function accessPlugin(app: FastifyInstance, { apiKeys }: { apiKeys: readonly StaticKey[] }) {
  const { contract, storage, rateLimits } = app
  const catalogue = contract.roles
  app.decorateRequest('principal', '')
  // (set by authentication with the key's own set; none on operations that need no key)
  app.decorateRequest('roles', null as unknown as ReadonlySet<string>)
  const authenticate = rateLimits.around(bearerAuth(anyOf(staticKeys(apiKeys, catalogue.defaults), storedKeys(storage.keys))))
  app.decorate('access', {
    guardOf: (operation: Operation) => (operation.roles === undefined ? rateLimits.anonymous : authorize(authenticate, operation)),
    rolesNow: principalRoles(staticPrincipals(apiKeys, catalogue.defaults), (id) => storage.keys.activeRoles(id)),
    orderScope: orderScope(catalogue),
  })
}

export default fp(accessPlugin, { name: 'access', fastify: '5.x', dependencies: ['storage', 'rate-limits'], decorators: { fastify: ['contract'] } })
