import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { HandlersOf } from '../http/handlers.js'
import { type PetOperation, petHandlers } from './handlers.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** the handlers of the catalogue's operations, for the operations plugin */
    petOperations: HandlersOf<PetOperation>
  }
}

/** The pet catalogue: its operations, on the store's pets, at the newest contract's URLs. */
async function petsPlugin(app: FastifyInstance) {
  const { contract, storage } = app
  app.decorate('petOperations', petHandlers(storage.pets, storage.categories, { petsUrl: contract.urlOf('listPets') }))
}

export default fp(petsPlugin, { name: 'pets', fastify: '5.x', dependencies: ['storage'], decorators: { fastify: ['contract'] } })
