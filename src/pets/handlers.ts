import type { OperationHandlers } from '../contract/operations.js'
import { ApiError } from '../errors.js'
import type { PetRepository } from '../storage/pets.js'

/** The operations of openapi.yaml over the pet catalogue. Requests arrive authenticated and
 * valid (defaults filled in); what leaves is serialized by the spec's response schemas. */
export function petHandlers(pets: PetRepository): OperationHandlers {
  return {
    async listPets(request, reply) {
      const { limit, status, after } = request.query
      // one more than asked tells whether a next page exists
      const page = await pets.list({ limit: limit + 1, status, after })
      if (page.length > limit) {
        page.length = limit
        const next = new URLSearchParams({ limit: String(limit), ...(status && { status }), after: String(page.at(-1)!.id) })
        reply.header('Link', `<${request.routeOptions.url}?${next}>; rel="next"`)
      }
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
