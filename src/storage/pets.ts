import type { components } from '../../generated/api.js'
import type { MaybePromise } from '../maybe-async.js'
import type { Dialect } from './database.js'
import { type GroupCommitStats, groupCommit } from './group-commit.js'
import type { Outbox } from './outbox.js'
import { type Sql, type Statements, select } from './sql.js'

export type Pet = components['schemas']['Pet']
export type PetStatus = components['schemas']['PetStatus']
/** A pet to store: a createPet body after validation, which filled in the default `status`. */
export type NewPet = components['schemas']['NewPet'] & { status: PetStatus }

export interface PetQuery {
  limit: number
  status?: PetStatus | undefined
  /** only pets whose id is greater */
  after?: number | undefined
}

/** The catalogue, whatever the database: handlers see only this. Reads answer at once where
 * the database does (SQLite), else by a promise. */
export interface PetRepository {
  /** pets in ascending id order */
  list(query: PetQuery): MaybePromise<Pet[]>
  create(pet: NewPet): Promise<Pet>
  find(id: number): MaybePromise<Pet | undefined>
  /** SQLite only: how creates were grouped into commits so far (for the metrics) */
  commitStats?(): GroupCommitStats
}

export const petColumns = 'id, name, category_id, status'
export const petOf = ([id, name, categoryId, status]: [number, string, number, PetStatus]): Pet => ({ id, name, categoryId, status })

// listPets pages by id: with a status, the (status, id) index serves it; without, the primary key.
const listAll = select(`select ${petColumns} from pets where id > $1 order by id limit $2`, petOf)
const listByStatus = select(`select ${petColumns} from pets where status = $1 and id > $2 order by id limit $3`, petOf)
const findOne = select(`select ${petColumns} from pets where id = $1`, petOf)
const insertOne = 'insert into pets (name, category_id, status) values ($1, $2, $3) returning id'

export function petRepository(sql: Sql, dialect: Dialect, outbox: Outbox): PetRepository {
  const insert = async (executor: Statements, { name, categoryId, status }: NewPet): Promise<Pet> => {
    const { id } = (await executor.row<{ id: number }>(insertOne, [name, categoryId, status]))!
    return { id, name, categoryId, status }
  }
  // (with its event, in the same transaction)
  const insertIn = async (tx: Statements, pet: NewPet): Promise<Pet> => {
    const created = await insert(tx, pet)
    await outbox.record(tx, [{ type: 'pet.created', data: created }])
    return created
  }
  const reads = {
    list: ({ limit, status, after = 0 }: PetQuery) => (status === undefined ? sql.all(listAll, [after, limit]) : sql.all(listByStatus, [status, after, limit])),
    find: (id: number) => sql.one(findOne, [id]),
  }
  // PostgreSQL takes creates in parallel on its pool, and groups commits itself. While no
  // subscription takes pet.created, a create is one statement that says so as it inserts;
  // else a transaction that records the event.
  if (dialect === 'postgres') {
    const insertUntaken = `insert into pets (name, category_id, status) select $1, $2, $3 where ${outbox.noneTakes('pet.created')} returning id`
    const create = async (pet: NewPet): Promise<Pet> => {
      const row = await sql.row<{ id: number }>(insertUntaken, [pet.name, pet.categoryId, pet.status])
      return row === undefined ? sql.transaction((tx) => insertIn(tx, pet)) : { id: row.id, name: pet.name, categoryId: pet.categoryId, status: pet.status }
    }
    return { ...reads, create }
  }
  // SQLite has one writer and pays an fsync per commit: concurrent creates share a commit.
  const create = groupCommit((batch: NewPet[]) =>
    sql.transaction(async (tx) => {
      const created: Pet[] = []
      for (const pet of batch) created.push(await insertIn(tx, pet))
      return created
    }),
  )
  return { ...reads, create, commitStats: create.stats }
}
