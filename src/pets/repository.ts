import type { components } from '../../generated/newest.js'
import { keepCategoryId } from '../categories/repository.js'
import { andThen, type MaybePromise } from '../core/maybe-async.js'
import type { Outbox } from '../events/outbox.js'
import { mapping } from '../storage/columns.js'
import type { Dialect } from '../storage/database.js'
import { type GroupCommitStats, type KeepContext, transactions } from '../storage/group-commit.js'
import { type Select, type Sql, type Statements, select } from '../storage/sql.js'

type Schemas = components['schemas']
type PetSchema = Omit<Schemas['Pet'], 'category'>
/** A pet as the store keeps it: the API's Pet (version 2, the newest), its category by id and,
 * when a category with that id exists, by name (the handlers show them as `category`). An
 * interface of its own name, for the compiler's messages. */
export interface Pet extends PetSchema {
  categoryId: number
  categoryName?: string
}
export type PetStatus = Schemas['PetStatus']
/** A pet to store: a createPet body after validation, which filled in the default `status`. */
export type NewPet = Schemas['NewPet'] & { status: PetStatus }

export interface PetQuery {
  limit: number
  status?: PetStatus | undefined
  /** only the pet with this id */
  id?: number | undefined
  /** only the pets of this category */
  categoryId?: number | undefined
  /** only pets whose id is greater */
  after?: number | undefined
  /** false: without the category names (read as NULL), for a version that does not show them */
  named?: boolean | undefined
}

/** The catalogue, whatever the database: handlers see only this. Reads answer at once where
 * the database does (SQLite), else by a promise. */
export interface PetRepository {
  /** pets in ascending id order */
  list(query: PetQuery): MaybePromise<Pet[]>
  create(pet: NewPet): Promise<Pet>
  /** SQLite only: how creates were grouped into commits so far (for the metrics) */
  commitStats?(): GroupCommitStats
}

/** Each property of the API's Pet and the column of `pets` that holds it: the selects and the
 * insert below are made from this map, and a property the spec adds fails typecheck here until
 * it names its column (which a new migration adds). */
export const petColumns = mapping<Pet, 'categoryName'>(
  'pets',
  {
    id: 'id',
    name: 'name',
    categoryId: 'category_id',
    status: 'status',
  },
  // the category's name, when it exists (version 1 took any id); the API shows both as `category`
  { computed: { categoryName: '(select name from categories where categories.id = pets.category_id)' }, shown: ['category'] },
)

/**
 * listPets pages by id, with its filters: the primary key serves `id`; with a status, the
 * (status, id) index; with a category, the (category_id, id) one. A statement for each set of
 * filters, made once, and the parameters it takes.
 */
type Filter = 'id' | 'status' | 'categoryId'
const filters: [Filter, string][] = [
  ['id', 'id'],
  ['status', 'status'],
  ['categoryId', 'category_id'],
]
const listings = new Map<number, { statement: Select<Pet>; given: Filter[] }>()
function listing(query: PetQuery) {
  let key = query.named === false ? 1 << filters.length : 0
  for (let i = 0; i < filters.length; i++) if (query[filters[i]![0]] !== undefined) key |= 1 << i
  let found = listings.get(key)
  if (found === undefined) {
    const given = filters.filter((_, i) => (key & (1 << i)) !== 0)
    // (the parameters in the order they appear, the limit last: SQLite's binding would otherwise
    // reorder them at each call)
    const conditions = ['id > $1', ...given.map(([, column], i) => `${column} = $${i + 2}`)]
    // (the limit cast: with a bare parameter, SQLite's one-pet lookup by id took 5.7 µs instead
    // of 0.7, measured with better-sqlite3 on 10,000 pets; the same plan either way)
    // (without the names, `ownList`: on PostgreSQL the category name of each of a page's 21 rows
    // cost the service 14-22 µs a page to read, for a version that does not show it)
    const columns = query.named === false ? petColumns.ownList : petColumns.list
    const text = `select ${columns} from pets where ${conditions.join(' and ')} order by id limit cast($${given.length + 2} as integer)`
    found = { statement: select(text, petColumns.read), given: given.map(([filter]) => filter) }
    listings.set(key, found)
  }
  return found
}
const insertOne = petColumns.insert()

/** `keepContext`: what keeps each create in its own request's context in a shared commit (tracing on). */
export function petRepository(sql: Sql, dialect: Dialect, outbox: Outbox, keepContext?: KeepContext): PetRepository {
  // (with its event, and the category id it names kept, in the same transaction)
  const insertIn = async (tx: Statements, pet: NewPet): Promise<Pet> => {
    await tx.run(keepCategoryId('$1', '$2'), [pet.categoryId, Date.now()])
    const created = (await tx.one(insertOne, petColumns.values(pet)))!
    await outbox.record(tx, [{ type: 'pet.created', data: petColumns.stored(created) }])
    return created
  }
  const reads = {
    list(query: PetQuery) {
      const { statement, given } = listing(query)
      const params: unknown[] = [query.after ?? 0]
      for (const filter of given) params.push(query[filter])
      params.push(query.limit)
      // (a page by id holds one pet at most, read as one row: SQLite's list of one cost 1.7 µs
      // more, version 1's getPet being that page)
      if (query.id !== undefined) return andThen(sql.one(statement, params), (pet) => (pet === undefined ? [] : [pet]))
      return sql.all(statement, params)
    },
  }
  // PostgreSQL takes creates in parallel on its pool, and groups commits itself. While no
  // subscription takes pet.created, a create is one statement that says so as it inserts;
  // else a transaction that records the event.
  if (dialect === 'postgres') {
    const untaken = petColumns.insert([], outbox.noneTakes('pet.created'))
    // (the category id kept by the same statement: of the pet's values, in the map's order, the
    // category id's; the time follows them)
    const written = Object.keys(petColumns.byProperty).filter((property) => property !== 'id')
    const keep = keepCategoryId(`$${written.indexOf('categoryId') + 1}`, `$${written.length + 1}`)
    const insertUntaken = select(`with kept as (${keep}) ${untaken.text}`, untaken.row)
    const create = async (pet: NewPet): Promise<Pet> =>
      (await sql.one(insertUntaken, [...petColumns.values(pet), Date.now()])) ?? sql.transaction((tx) => insertIn(tx, pet))
    return { ...reads, create }
  }
  // SQLite has one writer and pays an fsync per commit: concurrent creates share a commit.
  const write = transactions(sql, true, keepContext)
  return { ...reads, create: (pet) => write((tx) => insertIn(tx, pet)), commitStats: write.stats }
}
