/**
 * Version 2 made categories a resource: a pet shows its `category` as `{id, name}` where
 * version 1 showed `categoryId`, and createPet refuses a category that does not exist, where
 * version 1 took any id (and still does: `categoriesFrom`).
 */
import type { components as V1 } from '../../../generated/v1/api.js'
import type { components as V2 } from '../../../generated/v2/api.js'
import type { EventFields } from '../../events/outbox.js'
import type { ChangedAnswer, VersionChange } from '../change.js'

type V1Pet = V1['schemas']['Pet']
type V2Pet = V2['schemas']['Pet']

/** A pet as version 1 shows it. */
export const v1Pet = ({ id, name, category, status }: V2Pet): V1Pet =>
  // (two literals, not a spread: this runs for every pet version 1 reads)
  status === undefined ? { id, name, categoryId: category.id } : { id, name, categoryId: category.id, status }

const onePet = (answer: ChangedAnswer): ChangedAnswer => ({ ...answer, body: v1Pet(answer.body as V2Pet) })
const eventPet = (fields: EventFields): EventFields => ({ ...fields, data: v1Pet(fields.data as V2Pet) })

export const categoryObject: VersionChange = {
  version: 1,
  description: 'a pet shows `categoryId` (version 2: `category`, `{id, name}`), and createPet takes any categoryId (version 2: one that exists)',
  operations: {
    listPets: { down: (answer) => ({ ...answer, body: (answer.body as V2Pet[]).map(v1Pet) }) },
    createPet: { down: onePet },
    getPet: { down: onePet },
  },
  events: { 'pet.created': eventPet, 'pet.status_changed': eventPet },
}

/** The major version from which categories are a resource, the one after this change's: createPet
 * checks that a pet's category exists, and a pet shows its category's name (the pets of an older
 * version are read without it). */
export const categoriesFrom = categoryObject.version + 1
