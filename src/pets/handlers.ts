import { ApiError } from '../core/errors.js'
import { andThen } from '../core/maybe-async.js'
import type { HandlersOf } from '../http/handlers.js'
import { pageOf } from '../http/pagination.js'
import type { PetRepository } from '../storage/pets.js'

export type PetOperation = 'listPets' | 'createPet' | 'getPet'

/** The operations of openapi.yaml over the pet catalogue. Requests arrive authenticated and
 * valid (defaults filled in); what leaves is serialized by the spec's response schemas. Reads
 * answer at once when the repository does. */
export function petHandlers(
  pets: PetRepository,
  /** the URL of the list (for its next page) and that of a pet (the Location of a 201), from the spec */
  { petsUrl, petUrl }: { petsUrl: string; petUrl: (petId: number) => string },
): HandlersOf<PetOperation> {
  return {
    listPets(request, _reply, answer) {
      const { limit, status, after } = request.query
      return andThen(pets.list({ limit: limit + 1, status, after }), (items) => {
        const { page, link } = pageOf(items, { url: petsUrl, limit, status })
        return answer(200, page, link === undefined ? undefined : { Link: link })
      })
    },

    async createPet(request, _reply, answer) {
      const pet = await pets.create(request.body)
      return answer(201, pet, { Location: petUrl(pet.id) })
    },

    getPet(request, _reply, answer) {
      return andThen(pets.find(request.params.petId), (pet) => (pet === undefined ? new ApiError('not_found', `Pet ${request.params.petId} not found`) : answer(200, pet)))
    },
  }
}
