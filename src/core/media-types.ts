/** What the service names JSON in a Content-Type, as Fastify does: a string a route sends with
 * it is sent as it is, not serialized again (Fastify serializes only what is not a string). */
export const jsonType = 'application/json; charset=utf-8'
