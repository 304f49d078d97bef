import t from 'tap'
import { ApiError } from '../src/core/errors.js'
import type { OperationHandlers } from '../src/http/handlers.js'
import { loadContract, newestSpecPath } from '../src/contract/load.js'
import { categoryHandlers } from '../src/categories/handlers.js'
import { orderHandlers } from '../src/orders/handlers.js'
import { type PetHandlerOptions, petHandlers } from '../src/pets/handlers.js'
import type { CategoryRepository } from '../src/categories/repository.js'
import type { OrderRepository } from '../src/orders/repository.js'
import type { PetRepository } from '../src/pets/repository.js'
import type { WebhookRepository } from '../src/webhooks/repository.js'
import { webhookHandlers } from '../src/webhooks/handlers.js'
import { api } from './helpers/app.js'

// (the options as far as these checks need them: the handler maps are what they are about)
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- an option added later (the new operation's walk of docs/changing-the-api.md adds one) is not these checks' business
const pets = petHandlers({} as PetRepository, {} as CategoryRepository, { petsUrl: `${api}/pets` } as PetHandlerOptions)
const categories = categoryHandlers({} as CategoryRepository, { categoriesUrl: `${api}/categories`, categoryUrl: (id) => `${api}/categories/${id}` })
const orders = orderHandlers({} as OrderRepository, {
  ordersUrl: `${api}/store/orders`,
  orderUrl: (id) => `${api}/store/orders/${id}`,
  scopeOf: (request) => request.principal,
  idempotencyKeyHours: 24,
})
const hooks = webhookHandlers({} as WebhookRepository, {
  policy: { allowHttp: false, allowPrivate: false },
  maxPerKey: 10,
  secretOverlapMs: 0,
  webhookUrl: (id) => `${api}/webhooks/${id}`,
  deliveriesUrl: (id) => `${api}/webhooks/${id}/deliveries`,
  dueNow: () => {},
  eventRoles: () => [],
  retryAfterSeconds: 5,
  eventIdPrefix: 'evt_',
})

t.test('there is exactly one handler per operation of the newest document, where handlers are written', async (t) => {
  t.strictSame(Object.keys({ ...pets, ...categories, ...categories, ...orders, ...hooks }).sort(), [...loadContract(newestSpecPath).operations.keys()].sort())
})

// Compile-time checks (npm run typecheck runs over test/ too): each @ts-expect-error fails the
// build if the error it expects does not happen, i.e. if the handler map stopped being checked.
const { createCategory } = categories
/** Every handler, which each check below starts from (an operation added leaves them as they are). */
const all = { ...pets, ...categories, ...orders, ...hooks }

export const complete: OperationHandlers = { ...pets, ...categories, ...orders, ...hooks }

const { getCategory: _left, ...withoutOne } = all
// @ts-expect-error a missing handler is a compile error
export const missing: OperationHandlers = withoutOne

// @ts-expect-error the handlers of one concern alone are not all of them
export const petsOnly: OperationHandlers = pets

// @ts-expect-error an operationId the spec does not have is a compile error
export const extra: OperationHandlers = { ...all, deletePet: pets.listPets }

export const mistyped: OperationHandlers = {
  ...all,
  // @ts-expect-error a handler typed for another operation (other params, other replies) is a compile error
  getCategory: createCategory,
}

export const wrongReply: OperationHandlers = {
  ...all,
  // @ts-expect-error a body that is not the documented Pet is a compile error
  createPet: async (_request, _reply, answer) => answer(201, { id: 'one', name: 'Rex', categoryId: 1 }),
}

const rex = { id: 1, name: 'Rex', category: { id: 1, name: 'Bird' }, status: 'available' } as const

export const undocumentedStatus: OperationHandlers = {
  ...all,
  // @ts-expect-error a status the operation does not document (createPet answers 201, not 200) is a compile error
  createPet: async (_request, _reply, answer) => answer(200, rex),
}

export const undocumentedHeader: OperationHandlers = {
  ...all,
  // @ts-expect-error a header the status does not document is a compile error
  createPet: async (_request, _reply, answer) => answer(201, rex, { Location: '/v2/pets?id=1', 'X-Total-Count': '1' }),
}

export const undocumentedRefusal: OperationHandlers = {
  ...all,
  // @ts-expect-error a refusal whose status the operation does not document (listPets has no 409) is a compile error
  listPets: () => new ApiError('pet_unavailable', 'no'),
}

export const documentedAnswers: OperationHandlers = {
  ...all,
  listPets: (_request, _reply, answer) => answer(200, [rex], { Link: '</v2/pets?after=1>; rel="next"' }),
  createPet: async (_request, _reply, answer) => answer(201, rex, { Location: '/v2/pets?id=1' }),
  getCategory: () => new ApiError('not_found', 'Category 1 not found'),
}

export const sentNotAnswered: OperationHandlers = {
  ...all,
  // @ts-expect-error a handler gives its answer: one that sends it itself and answers the reply is a compile error
  getCategory: (_request, reply) => reply.code(200).send({ id: 1, name: 'Bird' }),
}

export const errorAsSuccess: OperationHandlers = {
  ...all,
  // @ts-expect-error an error is an ApiError given back, not an Error body answered as if it were a success
  getCategory: (_request, _reply, answer) => answer(200, { code: 'not_found', message: 'no', status: 404 }),
}

export const literalAnswer: OperationHandlers = {
  ...all,
  // @ts-expect-error an answer is made by `answer`, not written as a literal (whose headers would go unchecked)
  getCategory: () => ({ status: 200, body: { id: 1, name: 'Bird' } }),
}

export const wrongOrder: OperationHandlers = {
  ...all,
  // @ts-expect-error an Order without placedAt is a compile error
  getOrder: (_request, _reply, answer) => answer(200, { id: 1, petId: 1, status: 'placed' }),
}

export const typedHeader: OperationHandlers = {
  ...all,
  async placeOrder(request, _reply, answer) {
    // the spec's header parameters are typed, by their lower-case names: a string, not Node's
    // string | string[] of any header
    const key: string | undefined = request.headers['idempotency-key']
    // @ts-expect-error and an operation without header parameters has none of them
    const other: string | undefined = ({} as Parameters<OperationHandlers['listPets']>[0]).headers['x-other']
    return answer(201, { id: 1, petId: 1, status: 'placed', placedAt: `${key}${other}` }, { Location: `${api}/store/orders/1` })
  },
}
