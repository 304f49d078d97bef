import type { HandlersOf } from '../contract/operations.js'
import { ApiError } from '../errors.js'
import { pageOf } from '../http/pagination.js'
import type { PetRepository } from '../storage/pets.js'

/** The operations of openapi.yaml over the pet catalogue. Requests arrive authenticated and
 * valid (defaults filled in); what leaves is serialized by the spec's response schemas. */
export function petHandlers(pets: PetRepository): HandlersOf<'listPets' | 'createPet' | 'getPet'> {
  return {
    async listPets(request, reply) {
      const { limit, status, after } = request.query
      const { page, link } = pageOf(await pets.list({ limit: limit + 1, status, after }), { url: request.routeOptions.url!, limit, status })
      if (link !== undefined) reply.header('Link', link)
      return reply.code(200).send(page)
    },

    async createPet(request, reply) {
      const pet = await pets.create(request.body)
      return reply.header('Location', `${request.routeOptions.url}/${pet.id}`).code(201).send(pet)
    },

    async getPet(request, reply) {
      const pet = await pets.find(request.params.petId)
      if (pet === undefined) throw new ApiError('not_found', `Pet ${request.params.petId} not found`)
      return reply.code(200).send(pet)
    },
  }
}
