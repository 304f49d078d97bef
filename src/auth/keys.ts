import type { Dialect } from '../storage/database.js'
import type { KeyChanges } from '../storage/key-changes.js'
import type { Sql, Statements } from '../storage/sql.js'
import { type Grant, storedKeyPrincipal } from './access.js'
import { hashKey, newApiKey } from './secrets.js'

export interface ApiKeyRecord {
  id: number
  name: string
  /** the key's first characters: enough to recognise it, useless to an attacker */
  prefix: string
  /** the roles it holds (openapi.yaml's x-roles), in the order given */
  roles: string[]
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
  /** a key holding `roles` (checked against the catalogue by the caller) */
  issue(name: string, roles: readonly string[]): Promise<IssuedKey>
  /** issues a key only if the store holds none yet (first start); safe when instances race */
  issueFirst(name: string, roles: readonly string[]): Promise<IssuedKey | undefined>
  list(): Promise<ApiKeyRecord[]>
  revoke(id: number): Promise<RevokeOutcome>
  /** gives an active key these roles instead of its own, on every instance from its next
   * request on; 'not found' for an unknown key, 'revoked' for a revoked one */
  setRoles(id: number, roles: readonly string[]): Promise<'updated' | 'revoked' | 'not found'>
  /** the roles of the active key `id`, read now; undefined for a revoked or unknown key */
  activeRoles(id: number): Promise<ReadonlySet<string> | undefined>
  /** the grant of the active key whose SHA-256 (hashKey) this is, or undefined; notes the use.
   * A key it has seen is answered at once, not by a promise: a read's path awaits nothing for it. */
  authenticate(digest: string): Grant | Promise<Grant | undefined>
  /** as authenticate, but only from what is known without a query (the keys seen, active):
   * undefined for any other, without asking the store */
  known(digest: string): Grant | undefined
  /** writes down when keys were last used (done every minute, and on close) */
  recordUses(): Promise<void>
  /** writes down when keys were last used, and stops */
  close(): Promise<void>
}

/** When keys were used is written down this often, in one transaction, never by a request. */
const lastUsedFlushMs = 60_000

interface KeyRow {
  id: number
  name: string
  prefix: string
  roles: string
  created_at: number
  last_used_at: number | null
  revoked_at: number | null
}

const asRecord = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  roles: rolesInText(row.roles),
  createdAt: new Date(row.created_at),
  lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
  revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
})

const columns = 'id, name, prefix, roles, created_at, last_used_at, revoked_at'

/** Roles are kept as one text, space-separated, as OAuth writes scopes (a role holds no space). */
const rolesText = (roles: readonly string[]) => [...new Set(roles)].join(' ')
const rolesInText = (text: string) => text.split(' ').filter((role) => role !== '')

export function keyRepository(sql: Sql, dialect: Dialect, changes: KeyChanges): KeyRepository {
  async function insert(executor: Statements, name: string, roles: readonly string[]): Promise<IssuedKey> {
    const { key, prefix } = newApiKey()
    const row = await executor.row<KeyRow>(`insert into api_keys (name, prefix, hash, roles, created_at) values ($1, $2, $3, $4, $5) returning ${columns}`, [
      name,
      prefix,
      hashKey(key),
      rolesText(roles),
      Date.now(),
    ])
    return { record: asRecord(row!), key }
  }

  // Active keys by hash, with their roles, so that a request with a known key costs no query. A
  // revocation or a change of roles elsewhere reaches it through `changes`, checked before every
  // use; `generation` keeps a lookup that began before a change from caching its outdated
  // answer after it.
  const cached = new Map<string, Grant & { id: number }>()
  let generation = 0
  const forget = () => {
    cached.clear()
    generation++
  }

  // When each key was last used, written down in the background (never on a request's path).
  let used = new Map<number, number>()
  async function recordUses() {
    const batch = used
    used = new Map()
    if (batch.size === 0) return
    try {
      await sql.transaction(async (tx) => {
        for (const [id, at] of batch) {
          await tx.run('update api_keys set last_used_at = $2 where id = $1 and (last_used_at is null or last_used_at < $2)', [id, at])
        }
      })
    } catch {
      // the store is unavailable: keep the times for the next try
      for (const [id, at] of batch) used.set(id, Math.max(at, used.get(id) ?? 0))
    }
  }
  // (recordUses never rejects: a failure keeps the times for the next try)
  const flusher = setInterval(() => void recordUses(), lastUsedFlushMs).unref()

  async function lookUp(digest: string): Promise<Grant | undefined> {
    const lookedUpIn = generation
    const row = await sql.row<{ id: number; roles: string }>('select id, roles from api_keys where hash = $1 and revoked_at is null', [digest])
    if (row === undefined) return undefined
    const id = Number(row.id)
    const grant = { id, principal: storedKeyPrincipal(id), roles: new Set(rolesInText(row.roles)) }
    // (only active keys are cached, never guesses: the cache is as large as the key store)
    if (lookedUpIn === generation) cached.set(digest, grant)
    used.set(id, Date.now())
    return grant
  }

  function known(digest: string): Grant | undefined {
    if (changes.changed()) forget()
    // Looked up by hash: equal hashes mean equal keys, and timing reveals nothing of the key.
    const grant = cached.get(digest)
    if (grant !== undefined) used.set(grant.id, Date.now())
    return grant
  }

  return {
    issue: (name, roles) => insert(sql, name, roles),

    issueFirst: (name, roles) =>
      sql.transaction(async (tx) => {
        // Two instances starting on one empty PostgreSQL: the lock lets only one of them look
        // and insert at a time. (SQLite transactions are serialised already.)
        if (dialect === 'postgres') await tx.run("select pg_advisory_xact_lock(hashtext('petstore.api_keys.first'))")
        const existing = await tx.row('select id from api_keys limit 1')
        return existing === undefined ? insert(tx, name, roles) : undefined
      }),

    async list() {
      return (await sql.rows<KeyRow>(`select ${columns} from api_keys order by id`)).map(asRecord)
    },

    async revoke(id) {
      const revoked = await sql.run('update api_keys set revoked_at = $1 where id = $2 and revoked_at is null', [Date.now(), id])
      forget()
      if (revoked > 0) {
        // done when every instance refuses the key from its next request on
        await changes.propagated()
        return 'revoked'
      }
      const row = await sql.row('select id from api_keys where id = $1', [id])
      return row === undefined ? 'not found' : 'already revoked'
    },

    async setRoles(id, roles) {
      const updated = await sql.run('update api_keys set roles = $1 where id = $2 and revoked_at is null', [rolesText(roles), id])
      forget()
      if (updated > 0) {
        // done when every instance holds the key to its new roles from its next request on
        await changes.propagated()
        return 'updated'
      }
      const row = await sql.row('select id from api_keys where id = $1', [id])
      return row === undefined ? 'not found' : 'revoked'
    },

    async activeRoles(id) {
      const row = await sql.row<{ roles: string }>('select roles from api_keys where id = $1 and revoked_at is null', [id])
      return row && new Set(rolesInText(row.roles))
    },

    authenticate: (digest) => known(digest) ?? lookUp(digest),

    known,

    recordUses,

    async close() {
      clearInterval(flusher)
      await recordUses()
    },
  }
}
