import type { Kysely } from 'kysely'
import type { components } from '../../generated/api.js'
import type { Dialect, Tables } from './database.js'
import { groupCommit } from './group-commit.js'

export type Pet = components['schemas']['Pet']
export type NewPet = components['schemas']['NewPet']
export type PetStatus = components['schemas']['PetStatus']

export interface PetQuery {
  limit: number
  status?: PetStatus | undefined
  /** only pets whose id is greater */
  after?: number | undefined
}

/** The catalogue, whatever the database: handlers see only this. */
export interface PetRepository {
  /** pets in ascending id order */
  list(query: PetQuery): Promise<Pet[]>
  create(pet: NewPet): Promise<Pet>
  find(id: number): Promise<Pet | undefined>
}

export function petRepository(db: Kysely<Tables>, dialect: Dialect): PetRepository {
  const pets = () => db.selectFrom('pets').select(['id', 'name', 'category_id as categoryId', 'status'])

  const insert = async (executor: Kysely<Tables>, { name, categoryId, status }: NewPet): Promise<Pet> => {
    const { id } = await executor
      .insertInto('pets')
      .values({ name, category_id: categoryId, status })
      .returning('id')
      .executeTakeFirstOrThrow()
    return { id, name, categoryId, status }
  }
  // SQLite has one writer and pays an fsync per commit: concurrent creates share a commit.
  // PostgreSQL takes them in parallel on its pool, and groups commits itself.
  const create =
    dialect === 'sqlite'
      ? groupCommit((batch: NewPet[]) =>
          db.transaction().execute(async (trx) => {
            const created: Pet[] = []
            for (const pet of batch) created.push(await insert(trx, pet))
            return created
          }),
        )
      : (pet: NewPet) => insert(db, pet)

  return {
    async list({ limit, status, after }) {
      let query = pets().orderBy('id').limit(limit)
      if (status !== undefined) query = query.where('status', '=', status)
      if (after !== undefined) query = query.where('id', '>', after)
      return (await query.execute()) as Pet[]
    },
    create,
    async find(id) {
      return (await pets().where('id', '=', id).executeTakeFirst()) as Pet | undefined
    },
  }
}
