/**
 * Version 2 has no getPet (version 1 deprecated it for listPets): version 1's getPet is listPets
 * with the pet's id, its one pet answered (404 when there is none), and a pet's Location is its
 * own path, `/v1/pets/{id}` (version 2: `/v2/pets?id={id}`).
 */
import type { Version as V1 } from '../../../generated/v1/version.js'
import type { Version as V2 } from '../../../generated/v2/version.js'
import { ApiError } from '../../core/errors.js'
import { versionChange } from '../change.js'

export const getPetFromList = versionChange<V1, V2>()({
  name: 'get-pet',
  version: 1,
  description: 'getPet reads one pet at /pets/{petId} (version 2: listPets with `id`), the Location of a new pet is that path',
  servedBy: { getPet: 'listPets' },
  operations: {
    getPet: {
      up(request) {
        request.query = { id: request.params.petId, limit: 1 }
      },
      down(answer, request) {
        // (listPets' page, its pets made version 1's)
        const [pet] = answer.body
        return pet === undefined ? new ApiError('not_found', `Pet ${request.params.petId} not found`) : { status: 200, body: pet }
      },
    },
    createPet: {
      down: (answer, _request, { urlOf }) => ({ ...answer, headers: { ...answer.headers, Location: urlOf('getPet', { petId: answer.body.id }) } }),
    },
  },
})
