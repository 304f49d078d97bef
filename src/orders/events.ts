import type { EventFields, EventType } from '../events/outbox.js'
import type { StoredRow } from '../storage/columns.js'
import { orderColumns } from './repository.js'

/** The order events as the newest version shows them: their order, recorded as its table holds
 * it (a change records it so), shown as the API shows an order. */
const showOrder = (fields: EventFields): EventFields => ({ ...fields, data: orderColumns.fromStored(fields.data as StoredRow) })

export const orderEvents = {
  'order.placed': showOrder,
  'order.status_changed': showOrder,
} satisfies Partial<Record<EventType, (fields: EventFields) => EventFields>>
