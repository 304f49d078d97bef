import type { EventFields, EventType } from '../events/outbox.js'
import type { StoredRow } from '../storage/columns.js'
import { petOf } from './handlers.js'
import { petColumns } from './repository.js'

/** The pet events as the newest version shows them: their pet, recorded as its table holds it
 * (a change records it so), shown as the API shows a pet (its category as `{id, name}`). */
const showPet = (fields: EventFields): EventFields => ({ ...fields, data: petOf(petColumns.fromStored(fields.data as StoredRow)) })

export const petEvents = {
  'pet.created': showPet,
  'pet.status_changed': showPet,
} satisfies Partial<Record<EventType, (fields: EventFields) => EventFields>>
