import t from 'tap'
import type { OperationHandlers } from '../src/contract/operations.js'
import { loadContract } from '../src/contract/spec.js'
import { petHandlers } from '../src/pets/handlers.js'
import type { PetRepository } from '../src/storage/pets.js'

const unused = {} as PetRepository

t.test('there is exactly one handler per operation of openapi.yaml', async (t) => {
  t.strictSame(Object.keys(petHandlers(unused)).sort(), [...loadContract().operations.keys()].sort())
})

// Compile-time checks (npm run typecheck runs over test/ too): each @ts-expect-error fails the
// build if the error it expects does not happen, i.e. if the handler map stopped being checked.
const { listPets, createPet, getPet } = petHandlers(unused)

// @ts-expect-error a missing handler is a compile error
export const missing: OperationHandlers = { listPets, createPet }

// @ts-expect-error an operationId the spec does not have is a compile error
export const extra: OperationHandlers = { listPets, createPet, getPet, deletePet: getPet }

export const mistyped: OperationHandlers = {
  listPets,
  createPet,
  // @ts-expect-error a handler typed for another operation (other params, other replies) is a compile error
  getPet: createPet,
}

export const wrongReply: OperationHandlers = {
  listPets,
  getPet,
  // @ts-expect-error a body that is not the documented Pet is a compile error
  createPet: async (_request, reply) => reply.code(201).send({ id: 'one', name: 'Rex', categoryId: 1 }),
}
