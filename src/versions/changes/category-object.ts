/**
 * Version 2 made categories a resource: a pet shows its `category` as `{id, name}` where
 * version 1 showed `categoryId`, and createPet refuses a category that does not exist, where
 * version 1 took any id (and still does: the pet handlers ask whether this change is in force).
 */
import type { Version as V1 } from '../../../generated/v1/version.js'
import type { Version as V2 } from '../../../generated/v2/version.js'
import type { Every } from '../../core/every.js'
import { versionChange } from '../change.js'

export const categoryObject = versionChange<V1, V2>()({
  name: 'category-object',
  version: 1,
  description: 'a pet shows `categoryId` (version 2: `category`, `{id, name}`), and createPet takes any categoryId (version 2: one that exists)',
  schemas: {
    // (every property of version 1's Pet written: one the spec adds fails the typecheck here
    // until version 1 shows it too)
    Pet: { down: ({ id, name, category, status }): Every<V1['components']['schemas']['Pet']> => ({ id, name, categoryId: category.id, status }) },
  },
  sideEffects: {
    createPet: 'takes a category that does not exist (version 2 refuses it: 422)',
    listPets: "reads pets without their category's name, which version 1 does not show",
  },
})
