import type { components, operations } from '../../generated/newest.js'
import type { CategoryRepository } from '../categories/repository.js'
import { ApiError } from '../core/errors.js'
import type { Every } from '../core/every.js'
import { andThen } from '../core/maybe-async.js'
import { fromStoreAlone } from '../core/store-read.js'
import type { HandlersOf } from '../http/handlers.js'
import { pageOf } from '../http/pagination.js'
import { storeParts } from '../storage/revision.js'
import { categoryObject } from '../versions/changes/category-object.js'
import type { Pet, PetRepository } from './repository.js'

export type PetOperation = 'listPets' | 'createPet'

/** listPets' filter by id (a name of the spec's, checked by the typecheck): a new pet's Location is
 * the list of that one pet. */
const idFilter = 'id' satisfies keyof NonNullable<operations['listPets']['parameters']['query']>

/** A pet as the API shows it (its category as `{id, name}`, the name when the category exists). */
export type ApiPet = components['schemas']['Pet']

/** The API's pet, of the stored one: its category as `{id, name}`. Every property of the API's
 * Pet is written here: one the spec adds fails the typecheck until it is shown. */
export function petOf({ id, name, categoryId, categoryName, status }: Pet): Every<ApiPet> {
  return { id, name, category: categoryName === undefined ? { id: categoryId } : { id: categoryId, name: categoryName }, status }
}

/** What every key sees alike: the pets, and their categories' names. */
const inTheCatalogue = () => storeParts.catalogue

export interface PetHandlerOptions {
  /** the URL of the list (for its next page, and the Location of a 201: the list of one pet) */
  petsUrl: string
}

/** The newest version's operations over the pet catalogue (an older version's are derived from
 * them, src/versions/). Requests arrive authenticated and
 * valid (defaults filled in); what leaves is serialized by the spec's response schemas. Reads
 * answer at once when the repository does. */
export function petHandlers(pets: PetRepository, categories: CategoryRepository, { petsUrl }: PetHandlerOptions): HandlersOf<PetOperation> {
  return {
    listPets: fromStoreAlone((request, _reply, answer) => {
      const { limit, id, status, categoryId, after } = request.query
      // (while pets show `categoryId` alone, their category's name is not read)
      return andThen(pets.list({ limit: limit + 1, id, status, categoryId, after, named: !categoryObject.inForce(request) }), (items) => {
        const { page, headers } = pageOf(items, { url: petsUrl, limit, id, status, categoryId })
        return answer(200, page.map(petOf), headers)
      })
    }, inTheCatalogue),

    async createPet(request, _reply, answer) {
      const { categoryId } = request.body
      // (while categories are not a resource, a pet takes any category id)
      if (!categoryObject.inForce(request) && (await categories.find(categoryId)) === undefined) {
        return new ApiError('category_not_found', `Category ${categoryId} not found: add it first (createCategory)`)
      }
      const pet = await pets.create(request.body)
      return answer(201, petOf(pet), { Location: `${petsUrl}?${idFilter}=${pet.id}` })
    },
  }
}
