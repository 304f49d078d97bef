import type { VersionChange } from './change.js'
import { categoryObject } from './changes/category-object.js'
import { getPetFromList } from './changes/get-pet.js'

/**
 * Every version change. Within one version, a request goes up through its changes from the last
 * to the first, an answer down from the first to the last. A new major version adds its
 * changes, each with the version it leads to.
 */
export const changes: readonly VersionChange[] = [getPetFromList, categoryObject]

/** The schemas of version `major` that the changes between it and version `newest` make of the
 * newest's (version 1's Pet): what they hold comes from those changes. */
export const derivedSchemas = (major: number, newest: number): ReadonlySet<string> =>
  new Set(changes.filter(({ version }) => version >= major && version < newest).flatMap((change) => Object.keys(change.schemas)))
