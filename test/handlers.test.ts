import t from 'tap'
import { ApiError } from '../src/core/errors.js'
import type { OperationHandlers } from '../src/http/handlers.js'
import { loadContract } from '../src/contract/load.js'
import { orderHandlers } from '../src/orders/handlers.js'
import { petHandlers } from '../src/pets/handlers.js'
import type { OrderRepository } from '../src/storage/orders.js'
import type { PetRepository } from '../src/storage/pets.js'
import type { WebhookRepository } from '../src/storage/webhooks.js'
import { webhookHandlers } from '../src/webhooks/handlers.js'

const pets = petHandlers({} as PetRepository, { petsUrl: '/v1/pets', petUrl: (id) => `/v1/pets/${id}` })
const orders = orderHandlers({} as OrderRepository, {
  ordersUrl: '/v1/store/orders',
  orderUrl: (id) => `/v1/store/orders/${id}`,
  scopeOf: (request) => request.principal,
  idempotencyKeyHours: 24,
})
const hooks = webhookHandlers({} as WebhookRepository, {
  policy: { allowHttp: false, allowPrivate: false },
  maxPerKey: 10,
  secretOverlapMs: 0,
  webhookUrl: (id) => `/v1/webhooks/${id}`,
  deliveriesUrl: (id) => `/v1/webhooks/${id}/deliveries`,
  dueNow: () => {},
  eventRoles: () => [],
  retryAfterSeconds: 5,
})

t.test('there is exactly one handler per operation of openapi.yaml', async (t) => {
  t.strictSame(Object.keys({ ...pets, ...orders, ...hooks }).sort(), [...loadContract().operations.keys()].sort())
})

// Compile-time checks (npm run typecheck runs over test/ too): each @ts-expect-error fails the
// build if the error it expects does not happen, i.e. if the handler map stopped being checked.
const { listPets, createPet, getPet } = pets

export const complete: OperationHandlers = { ...pets, ...orders, ...hooks }

// @ts-expect-error a missing handler is a compile error
export const missing: OperationHandlers = { ...orders, ...hooks, listPets, createPet }

// @ts-expect-error the handlers of one concern alone are not all of them
export const petsOnly: OperationHandlers = pets

// @ts-expect-error an operationId the spec does not have is a compile error
export const extra: OperationHandlers = { ...orders, ...hooks, listPets, createPet, getPet, deletePet: getPet }

export const mistyped: OperationHandlers = {
  ...orders,
  ...hooks,
  listPets,
  createPet,
  // @ts-expect-error a handler typed for another operation (other params, other replies) is a compile error
  getPet: createPet,
}

export const wrongReply: OperationHandlers = {
  ...orders,
  ...hooks,
  listPets,
  getPet,
  // @ts-expect-error a body that is not the documented Pet is a compile error
  createPet: async (_request, _reply, answer) => answer(201, { id: 'one', name: 'Rex', categoryId: 1 }),
}

const rex = { id: 1, name: 'Rex', categoryId: 1, status: 'available' } as const

export const undocumentedStatus: OperationHandlers = {
  ...orders,
  ...hooks,
  listPets,
  getPet,
  // @ts-expect-error a status the operation does not document (createPet answers 201, not 200) is a compile error
  createPet: async (_request, _reply, answer) => answer(200, rex),
}

export const undocumentedHeader: OperationHandlers = {
  ...orders,
  ...hooks,
  listPets,
  getPet,
  // @ts-expect-error a header the status does not document is a compile error
  createPet: async (_request, _reply, answer) => answer(201, rex, { Location: '/v1/pets/1', 'X-Total-Count': '1' }),
}

export const undocumentedRefusal: OperationHandlers = {
  ...pets,
  ...orders,
  ...hooks,
  // @ts-expect-error a refusal whose status the operation does not document (listPets has no 409) is a compile error
  listPets: () => new ApiError('pet_unavailable', 'no'),
}

export const documentedAnswers: OperationHandlers = {
  ...orders,
  ...hooks,
  listPets: (_request, _reply, answer) => answer(200, [rex], { Link: '</v1/pets?after=1>; rel="next"' }),
  createPet: async (_request, _reply, answer) => answer(201, rex, { Location: '/v1/pets/1' }),
  getPet: () => new ApiError('not_found', 'Pet 1 not found'),
}

export const sentNotAnswered: OperationHandlers = {
  ...pets,
  ...orders,
  ...hooks,
  // @ts-expect-error a handler gives its answer: one that sends it itself and answers the reply is a compile error
  getPet: (_request, reply) => reply.code(200).send({ id: 1, name: 'Rex', categoryId: 1 }),
}

export const errorAsSuccess: OperationHandlers = {
  ...pets,
  ...orders,
  ...hooks,
  // @ts-expect-error an error is an ApiError given back, not an Error body answered as if it were a success
  getPet: (_request, _reply, answer) => answer(200, { code: 'not_found', message: 'no', status: 404 }),
}

export const literalAnswer: OperationHandlers = {
  ...pets,
  ...orders,
  ...hooks,
  // @ts-expect-error an answer is made by `answer`, not written as a literal (whose headers would go unchecked)
  getPet: () => ({ status: 200, body: rex }),
}

export const wrongOrder: OperationHandlers = {
  ...pets,
  ...orders,
  ...hooks,
  // @ts-expect-error an Order without placedAt is a compile error
  getOrder: (_request, _reply, answer) => answer(200, { id: 1, petId: 1, status: 'placed' }),
}

export const typedHeader: OperationHandlers = {
  ...pets,
  ...orders,
  ...hooks,
  async placeOrder(request, _reply, answer) {
    // the spec's header parameters are typed, by their lower-case names: a string, not Node's
    // string | string[] of any header
    const key: string | undefined = request.headers['idempotency-key']
    // @ts-expect-error and an operation without header parameters has none of them
    const other: string | undefined = ({} as Parameters<OperationHandlers['listPets']>[0]).headers['x-other']
    return answer(201, { id: 1, petId: 1, status: 'placed', placedAt: `${key}${other}` }, { Location: '/v1/store/orders/1' })
  },
}
