import type { EventFields } from '../events/outbox.js'
import { petOf } from './handlers.js'
import type { Pet } from './repository.js'

/** The pet events as the newest version shows them: their pet as stored (a change records it so)
 * shown as the API shows a pet (its category as `{id, name}`). */
const showPet = (fields: EventFields): EventFields => ({ ...fields, data: petOf(fields.data as Pet) })

export const petEvents: Readonly<Record<string, (fields: EventFields) => EventFields>> = {
  'pet.created': showPet,
  'pet.status_changed': showPet,
}
