import type { HandlersOf } from '../contract/operations.js'
import { ApiError } from '../core/errors.js'
import { pageOf } from '../http/pagination.js'
import { andThen } from '../core/maybe-async.js'
import type { PetRepository } from '../storage/pets.js'

/** The operations of openapi.yaml over the pet catalogue. Requests arrive authenticated and
 * valid (defaults filled in); what leaves is serialized by the spec's response schemas. Reads
 * answer at once when the repository does. */
export function petHandlers(
  pets: PetRepository,
  /** the URL of the list (for its next page) and that of a pet (the Location of a 201), from the spec */
  { petsUrl, petUrl }: { petsUrl: string; petUrl: (petId: number) => string },
): HandlersOf<'listPets' | 'createPet' | 'getPet'> {
  return {
    listPets(request, reply) {
      const { limit, status, after } = request.query
      return andThen(pets.list({ limit: limit + 1, status, after }), (items) => {
        const { page, link } = pageOf(items, { url: petsUrl, limit, status })
        if (link !== undefined) reply.header('Link', link)
        return page
      })
    },

    async createPet(request, reply) {
      const pet = await pets.create(request.body)
      reply.header('Location', petUrl(pet.id)).code(201)
      return pet
    },

    getPet(request) {
      return andThen(pets.find(request.params.petId), (pet) => {
        if (pet === undefined) throw new ApiError('not_found', `Pet ${request.params.petId} not found`)
        return pet
      })
    },
  }
}
