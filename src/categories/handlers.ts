import { ApiError } from '../core/errors.js'
import { misplacedJoiner } from '../core/joiners.js'
import { andThen } from '../core/maybe-async.js'
import { fromStoreAlone } from '../core/store-read.js'
import type { HandlersOf } from '../http/handlers.js'
import { pageOf } from '../http/pagination.js'
import { storeParts } from '../storage/revision.js'
import type { CategoryRepository } from './repository.js'

/** What every key sees alike: the categories (with the pets, storage/revision.ts). */
const inTheCatalogue = () => storeParts.catalogue

export type CategoryOperation = 'listCategories' | 'createCategory' | 'getCategory'

/** The categories pets are grouped under (version 2). Reads answer at once when the repository
 * does. */
export function categoryHandlers(
  categories: CategoryRepository,
  /** the URL of the list (for its next page) and of a category (the Location of a 201), from the spec */
  { categoriesUrl, categoryUrl }: { categoriesUrl: string; categoryUrl: (categoryId: number) => string },
): HandlersOf<CategoryOperation> {
  return {
    listCategories: fromStoreAlone((request, _reply, answer) => {
      const { limit, after } = request.query
      return andThen(categories.list({ limit: limit + 1, after }), (items) => {
        const { page, headers } = pageOf(items, { url: categoriesUrl, limit })
        return answer(200, page, headers)
      })
    }, inTheCatalogue),

    async createCategory(request, _reply, answer) {
      // (the rule of CategoryName that its pattern cannot say: where a joiner may stand)
      const misplaced = misplacedJoiner(request.body.name)
      if (misplaced !== undefined) return new ApiError('invalid_request', `body/name is not valid: ${misplaced}`)
      const outcome = await categories.create(request.body.name)
      if ('taken' in outcome) {
        return new ApiError('category_name_taken', `A category named ${JSON.stringify(outcome.taken.name)} exists already (category ${outcome.taken.id})`)
      }
      return answer(201, outcome.created, { Location: categoryUrl(outcome.created.id) })
    },

    getCategory: fromStoreAlone(
      (request, _reply, answer) =>
        andThen(categories.find(request.params.categoryId), (category) =>
          category === undefined ? new ApiError('not_found', `Category ${request.params.categoryId} not found`) : answer(200, category),
        ),
      inTheCatalogue,
    ),
  }
}
