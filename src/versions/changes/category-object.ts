/**
 * Version 2 made categories a resource: a pet shows its `category` as `{id, name}` where
 * version 1 showed `categoryId`, and createPet refuses a category that does not exist, where
 * version 1 took any id (and still does: the pet handlers ask whether this change is in force).
 */
import type { Version as V1 } from '../../../generated/v1/version.js'
import type { Version as V2 } from '../../../generated/v2/version.js'
import { versionChange } from '../change.js'

export const categoryObject = versionChange<V1, V2>()({
  name: 'category-object',
  version: 1,
  description: 'a pet shows `categoryId` (version 2: `category`, `{id, name}`), and createPet takes any categoryId (version 2: one that exists)',
  schemas: {
    // (every other property carried as it is: one the spec adds is shown in both versions)
    Pet: { down: ({ category, ...pet }) => ({ ...pet, categoryId: category.id }) },
  },
  sideEffects: {
    createPet: 'takes a category that does not exist (version 2 refuses it: 422)',
    listPets: "reads pets without their category's name, which version 1 does not show",
  },
})
