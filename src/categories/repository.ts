import type { components } from '../../generated/newest.js'
import type { MaybePromise } from '../core/maybe-async.js'
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
  /** a new category, unless one has the name, whatever its case */
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

/** What makes two names the same category's: the same letters, whatever their case. */
const nameKey = (name: string) => name.toLowerCase()

const listPage = select(`select ${categoryColumns.list} from categories where id > $1 order by id limit $2`, categoryColumns.read)
const findOne = select(`select ${categoryColumns.list} from categories where id = $1`, categoryColumns.read)
const findByKey = select(`select ${categoryColumns.list} from categories where name_key = $1`, categoryColumns.read)
// (inserted only when no category has the key: two creates of one name at once make one)
const insertNew = categoryColumns.insert(['name_key', 'created_at'], undefined, 'name_key')

export function categoryRepository(sql: Sql): CategoryRepository {
  return {
    async create(name) {
      const key = nameKey(name)
      const created = await sql.one(insertNew, [name, key, Date.now()])
      if (created !== undefined) return { created }
      // (a category is never deleted: the one that holds the name is there)
      return { taken: (await sql.one(findByKey, [key]))! }
    },
    list: ({ limit, after = 0 }) => sql.all(listPage, [after, limit]),
    find: (id) => sql.one(findOne, [id]),
  }
}
