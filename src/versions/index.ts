import type { VersionChange } from './change.js'
import { categoryObject } from './changes/category-object.js'
import { getPetFromList } from './changes/get-pet.js'

/**
 * Every version change, newest first: a request of an older version goes up through them from
 * the last that applies to it, an answer comes down through them from the first. A new major
 * version puts its changes at the head.
 */
export const changes: readonly VersionChange[] = [getPetFromList, categoryObject]
