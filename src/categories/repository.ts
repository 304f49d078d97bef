import type { components } from '../../generated/newest.js'
import { StorageUnavailable } from '../core/errors.js'
import type { MaybePromise } from '../core/maybe-async.js'
import { lookAlikeKey } from '../core/names.js'
import { mapping } from '../storage/columns.js'
import { type Sql, select } from '../storage/sql.js'

type CategorySchema = components['schemas']['Category']
/** The API's Category (version 2) */
export interface Category extends CategorySchema {}

export interface CategoryQuery {
  limit: number
  /** only categories whose id is greater */
  after?: number | undefined
}

/** What adding a category came to: the category, or the one that has its name already. */
export type CategoryCreation = { created: Category } | { taken: Category }

/** The categories pets are grouped under (version 2). Reads answer at once where the database
 * does (SQLite), else by a promise. */
export interface CategoryRepository {
  /** a new category, unless one has a name that looks the same (core/names.ts) */
  create(name: string): Promise<CategoryCreation>
  /** categories in ascending id order */
  list(query: CategoryQuery): MaybePromise<Category[]>
  find(id: number): MaybePromise<Category | undefined>
}

/** Each property of the API's Category and the column of `categories` that holds it (see
 * petColumns). */
export const categoryColumns = mapping<Category>('categories', {
  id: 'id',
  name: 'name',
})

// (a row without a name holds an id that a pet names and no category has: not a category)
const listPage = select(`select ${categoryColumns.list} from categories where id > $1 and name is not null order by id limit $2`, categoryColumns.read)
const findOne = select(`select ${categoryColumns.list} from categories where id = $1 and name is not null`, categoryColumns.read)
const findByFold = select(`select ${categoryColumns.list} from categories where name_fold = $1`, categoryColumns.read)

/** The id a new category is given: the first after the last category's that no row holds (an id
 * that a pet names is held by a row without a name). */
const nextId = `(select case when exists (select 1 from categories where id = last.id + 1)
    then (select min(c.id) + 1 from categories c where c.id > last.id and not exists (select 1 from categories d where d.id = c.id + 1))
    else last.id + 1 end
  from (select coalesce(max(id), 0) as id from categories where name is not null) last)`
// (inserted only when no row holds its id or its name's fold: two creates of one name at once
// make one; of two names at once, or of a name and a pet's id, one takes the id and the other
// chooses again. `where true`: SQLite reads an insert's select with `on conflict` so.)
const insertNew = select(
  `insert into categories (id, name, name_fold, created_at) select ${nextId}, $1, $2, $3 where true on conflict do nothing returning ${categoryColumns.list}`,
  categoryColumns.read,
)

/** SQL that keeps the category id a new pet names (the parameters `$id` and `$at`, the time in
 * ms): a row without a name, unless a row holds the id already. A category added later never
 * takes it, so it never shows pets named before it was added. */
export const keepCategoryId = (id: string, at: string) => `insert into categories (id, created_at) values (${id}, ${at}) on conflict do nothing`

/** How many ids a create chooses, each taken by another writer before its insert, before it
 * answers 503 (try again): each loss is another create's success, so more than a few is a storm
 * that a request should not wait out. */
const idChoices = 8

export function categoryRepository(sql: Sql): CategoryRepository {
  return {
    async create(name) {
      const fold = lookAlikeKey(name)
      for (let choice = 1; choice <= idChoices; choice++) {
        const created = await sql.one(insertNew, [name, fold, Date.now()])
        if (created !== undefined) return { created }
        // (a category is never deleted: when one holds the name, it is there)
        const taken = await sql.one(findByFold, [fold])
        if (taken !== undefined) return { taken }
        // the id was taken between the choice and the insert (PostgreSQL, by another instance
        // or connection): choose again
      }
      throw new StorageUnavailable(new Error(`adding a category lost its id to another writer ${idChoices} times in a row`))
    },
    list: ({ limit, after = 0 }) => sql.all(listPage, [after, limit]),
    find: (id) => sql.one(findOne, [id]),
  }
}
