import type { components } from '../../generated/api.js'
import type { MaybePromise } from '../core/maybe-async.js'
import { mapping } from './columns.js'
import type { Dialect } from './database.js'
import { type GroupCommitStats, groupCommit } from './group-commit.js'
import type { Outbox } from './outbox.js'
import { type Sql, type Statements, select } from './sql.js'

type Schemas = components['schemas']
type PetSchema = Schemas['Pet']
/** The API's Pet (an interface of its own name, for the compiler's messages) */
export interface Pet extends PetSchema {}
export type PetStatus = Schemas['PetStatus']
/** A pet to store: a createPet body after validation, which filled in the default `status`. */
export type NewPet = Schemas['NewPet'] & { status: PetStatus }

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

/** Each property of the API's Pet and the column of `pets` that holds it: the selects and the
 * insert below are made from this map, and a property the spec adds fails typecheck here until
 * it names its column (which a new migration adds). */
export const petColumns = mapping<Pet>('pets', {
  id: 'id',
  name: 'name',
  categoryId: 'category_id',
  status: 'status',
})

// listPets pages by id: with a status, the (status, id) index serves it; without, the primary key.
const listAll = select(`select ${petColumns.list} from pets where id > $1 order by id limit $2`, petColumns.read)
const listByStatus = select(`select ${petColumns.list} from pets where status = $1 and id > $2 order by id limit $3`, petColumns.read)
const findOne = select(`select ${petColumns.list} from pets where id = $1`, petColumns.read)
const insertOne = petColumns.insert()

export function petRepository(sql: Sql, dialect: Dialect, outbox: Outbox): PetRepository {
  const insert = async (executor: Statements, pet: NewPet): Promise<Pet> => (await executor.one(insertOne, petColumns.values(pet)))!
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
    const insertUntaken = petColumns.insert([], outbox.noneTakes('pet.created'))
    const create = async (pet: NewPet): Promise<Pet> =>
      (await sql.one(insertUntaken, petColumns.values(pet))) ?? sql.transaction((tx) => insertIn(tx, pet))
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
