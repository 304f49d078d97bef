import { createHash, randomBytes } from 'node:crypto'
import { type Kysely, sql } from 'kysely'
import type { Dialect, Tables } from './database.js'

export interface ApiKeyRecord {
  id: number
  name: string
  /** the key's first characters: enough to recognise it, useless to an attacker */
  prefix: string
  createdAt: Date
  lastUsedAt: Date | null
  revokedAt: Date | null
}

export interface IssuedKey {
  record: ApiKeyRecord
  /** the secret itself: shown once, stored only as a hash */
  key: string
}

export type RevokeOutcome = 'revoked' | 'already revoked' | 'not found'

/** API keys, kept beside the pets. Only a SHA-256 of each key is stored. */
export interface KeyRepository {
  issue(name: string): Promise<IssuedKey>
  /** issues a key only if the store holds none yet (first start); safe when instances race */
  issueFirst(name: string): Promise<IssuedKey | undefined>
  list(): Promise<ApiKeyRecord[]>
  revoke(id: number): Promise<RevokeOutcome>
  /** whether this is an active key; records when it was last used */
  authenticate(key: string): Promise<boolean>
}

/** last_used_at is written at most this often per key, so reads do not become writes. */
const lastUsedResolutionMs = 60_000

/** Keys read `pet_<8 hex>_<32 base64url>`: bearer-token safe, 192 random bits, and a
 * recognisable prefix for logs of leaked-secret scanners. */
function newKey(): { key: string; prefix: string } {
  const prefix = `pet_${randomBytes(4).toString('hex')}`
  return { key: `${prefix}_${randomBytes(24).toString('base64url')}`, prefix }
}

export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex')

const asRecord = (row: {
  id: number
  name: string
  prefix: string
  created_at: number
  last_used_at: number | null
  revoked_at: number | null
}): ApiKeyRecord => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  createdAt: new Date(row.created_at),
  lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
  revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
})

export function keyRepository(db: Kysely<Tables>, dialect: Dialect): KeyRepository {
  async function insert(executor: Kysely<Tables>, name: string): Promise<IssuedKey> {
    const { key, prefix } = newKey()
    const row = await executor
      .insertInto('api_keys')
      .values({ name, prefix, hash: hashKey(key), created_at: Date.now() })
      .returningAll()
      .executeTakeFirstOrThrow()
    return { record: asRecord(row), key }
  }

  return {
    issue: (name) => insert(db, name),

    issueFirst: (name) =>
      db.transaction().execute(async (trx) => {
        // Two instances starting on one empty PostgreSQL: the lock lets only one of them look
        // and insert at a time. (SQLite transactions are serialised already.)
        if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext('petstore.api_keys.first'))`.execute(trx)
        const existing = await trx.selectFrom('api_keys').select('id').limit(1).executeTakeFirst()
        return existing === undefined ? insert(trx, name) : undefined
      }),

    async list() {
      const rows = await db.selectFrom('api_keys').selectAll().orderBy('id').execute()
      return rows.map(asRecord)
    },

    async revoke(id) {
      const { numUpdatedRows } = await db
        .updateTable('api_keys')
        .set({ revoked_at: Date.now() })
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .executeTakeFirstOrThrow()
      if (numUpdatedRows > 0n) return 'revoked'
      const row = await db.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst()
      return row === undefined ? 'not found' : 'already revoked'
    },

    async authenticate(key) {
      // Looked up by hash: equal hashes mean equal keys, and timing reveals nothing of the key.
      const row = await db
        .selectFrom('api_keys')
        .select(['id', 'last_used_at'])
        .where('hash', '=', hashKey(key))
        .where('revoked_at', 'is', null)
        .executeTakeFirst()
      if (row === undefined) return false
      const now = Date.now()
      if (now - (row.last_used_at ?? 0) >= lastUsedResolutionMs) {
        await db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', row.id).execute()
      }
      return true
    },
  }
}
