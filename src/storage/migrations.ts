import { randomBytes } from 'node:crypto'
import { type Kysely, type Migration, type MigrationResultSet, Migrator, sql } from 'kysely'
import { OperatorError } from '../core/errors.js'
import { lookAlikeKey, nameKey } from '../core/names.js'
import type { Database, Dialect } from './database.js'
import { keysChannel } from './key-changes.js'

/**
 * The tables whose rows API reads show, and the columns of each whose change they show (all
 * where undefined): what the store's revision counts (migrations 0013 and 0014). Not the internal
 * ones: outbox events (a delivery shows its event, written with it and never changed), usage,
 * rate limits, keys (a key's view is the tag's own part), Idempotency-Keys; nor a delivery's
 * lease, which no read shows and which changes at every claim.
 */
const revisedTables = {
  pets: undefined,
  categories: undefined,
  orders: undefined,
  webhook_subscriptions: undefined,
  webhook_deliveries: [
    'subscription_id',
    'event_id',
    'status',
    'attempts',
    'next_attempt_at',
    'give_up_at',
    'last_status',
    'last_error',
    'created_at',
    'finished_at',
  ],
} satisfies Record<string, string[] | undefined>

/**
 * The schema's history, oldest first. A released migration is never edited: a change is a new
 * entry. Kysely applies the pending ones in one transaction while holding a lock (an advisory
 * lock on PostgreSQL; on SQLite the write lock that BEGIN IMMEDIATE takes, see database.ts), so
 * instances starting together apply each exactly once, and a failure leaves the schema as it was.
 */
export function migrations(dialect: Dialect): Record<string, Migration> {
  // The one difference between the dialects: how a table numbers its rows.
  const tableWithId = (db: Kysely<unknown>, table: string) =>
    dialect === 'postgres'
      ? db.schema.createTable(table).addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
      : db.schema.createTable(table).addColumn('id', 'integer', (c) => c.primaryKey())

  return {
    '0001_pets': {
      async up(db) {
        await tableWithId(db, 'pets')
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('category_id', 'bigint', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .execute()
        // listPets filters by status and pages in id order: this index serves both.
        await db.schema.createIndex('pets_status_id').on('pets').columns(['status', 'id']).execute()
      },
    },
    '0002_api_keys': {
      async up(db) {
        await tableWithId(db, 'api_keys')
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('prefix', 'text', (c) => c.notNull())
          .addColumn('hash', 'text', (c) => c.notNull().unique())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('last_used_at', 'bigint')
          .addColumn('revoked_at', 'bigint')
          .execute()
      },
    },
    '0003_api_keys_notify': {
      // Instances cache the keys they have seen: on PostgreSQL a revocation (or deletion) tells
      // every one of them at once. SQLite needs nothing: its data_version tells (key-changes.ts).
      async up(db) {
        if (dialect !== 'postgres') return
        await sql`create function petstore_api_keys_changed() returns trigger language plpgsql as $$
          begin perform pg_notify(${sql.lit(keysChannel)}, ''); return null; end $$`.execute(db)
        await sql`create trigger api_keys_changed after update of revoked_at or delete on api_keys
          for each statement execute function petstore_api_keys_changed()`.execute(db)
      },
    },
    '0004_orders': {
      async up(db) {
        await tableWithId(db, 'orders')
          .addColumn('pet_id', 'bigint', (c) => c.notNull().references('pets.id'))
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('placed_at', 'bigint', (c) => c.notNull())
          .execute()
        // listOrders filters by status and pages in id order.
        await db.schema.createIndex('orders_status_id').on('orders').columns(['status', 'id']).execute()
        // No double sale, whatever the code does: a pet has at most one order that is not
        // cancelled (placed, or delivered).
        await db.schema
          .createIndex('orders_one_live_per_pet')
          .unique()
          .on('orders')
          .column('pet_id')
          .where(sql<boolean>`status <> 'cancelled'`)
          .execute()
        // placeOrder's Idempotency-Key, per API key (principal), with the outcome it was answered
        // (JSON); rows older than 24 h are forgotten (orders/idempotency.ts), by created_at.
        await db.schema
          .createTable('idempotency_keys')
          .addColumn('principal', 'text', (c) => c.notNull())
          .addColumn('idempotency_key', 'text', (c) => c.notNull())
          .addColumn('fingerprint', 'text', (c) => c.notNull())
          .addColumn('outcome', 'text')
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('idempotency_keys_pk', ['principal', 'idempotency_key'])
          .execute()
        await db.schema.createIndex('idempotency_keys_created_at').on('idempotency_keys').column('created_at').execute()
      },
    },
    '0007_webhooks': {
      async up(db) {
        // Ids are never reused, on SQLite too (AUTOINCREMENT): an event's id is the webhook-id
        // receivers tell repeats by, and its sequence only grows.
        const tableWithLastingId = (table: string) =>
          dialect === 'postgres' ? tableWithId(db, table) : db.schema.createTable(table).addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
        // A subscription, its secret (and the previous one, while a rotation overlaps), and the
        // event types it takes (as given, JSON) for display.
        await tableWithLastingId('webhook_subscriptions')
          .addColumn('owner', 'text', (c) => c.notNull())
          .addColumn('url', 'text', (c) => c.notNull())
          .addColumn('events', 'text', (c) => c.notNull())
          .addColumn('secret', 'text', (c) => c.notNull())
          .addColumn('previous_secret', 'text')
          .addColumn('previous_secret_expires_at', 'bigint')
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .execute()
        await db.schema.createIndex('webhook_subscriptions_owner').on('webhook_subscriptions').columns(['owner', 'id']).execute()
        // The same types, a row each: what a change reads, in its transaction, to know who takes its event.
        await db.schema
          .createTable('webhook_subscription_events')
          .addColumn('type', 'text', (c) => c.notNull())
          .addColumn('subscription_id', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('webhook_subscription_events_pk', ['type', 'subscription_id'])
          .execute()
        // The outbox: an event, written in the transaction of the change it reports (`fields`:
        // the JSON of its payload beyond id, sequence, type and occurredAt).
        await tableWithLastingId('webhook_events')
          .addColumn('type', 'text', (c) => c.notNull())
          .addColumn('occurred_at', 'bigint', (c) => c.notNull())
          .addColumn('fields', 'text', (c) => c.notNull())
          .execute()
        await db.schema.createIndex('webhook_events_occurred_at').on('webhook_events').column('occurred_at').execute()
        // One event for one subscription, and where it stands; an instance that attempts it holds
        // it for a while (lease_owner, lease_until), and another takes it over once that is past.
        await tableWithLastingId('webhook_deliveries')
          .addColumn('subscription_id', 'bigint', (c) => c.notNull())
          .addColumn('event_id', 'bigint', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull())
          .addColumn('next_attempt_at', 'bigint')
          .addColumn('give_up_at', 'bigint', (c) => c.notNull())
          .addColumn('last_status', 'integer')
          .addColumn('last_error', 'text')
          .addColumn('lease_owner', 'text')
          .addColumn('lease_until', 'bigint')
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('finished_at', 'bigint')
          .execute()
        const pending = sql<boolean>`status = 'pending'`
        // what is due (claims), the oldest waiting (the lag metric), a subscription's list, the
        // finished ones to forget, and whether an event still has any
        await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').column('next_attempt_at').where(pending).execute()
        await db.schema.createIndex('webhook_deliveries_backlog').on('webhook_deliveries').column('created_at').where(pending).execute()
        await db.schema.createIndex('webhook_deliveries_subscription').on('webhook_deliveries').columns(['subscription_id', 'id']).execute()
        await db.schema.createIndex('webhook_deliveries_finished').on('webhook_deliveries').column('finished_at').execute()
        await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').column('event_id').execute()
      },
    },
    '0008_roles_and_owners': {
      async up(db) {
        // A key's roles (openapi.yaml's x-roles), space-separated. The keys issued before roles
        // existed could call every operation: they get every role given by default when this
        // was written, so that no client loses an operation (staff, orders:admin, is not one).
        await db.schema
          .alterTable('api_keys')
          .addColumn('roles', 'text', (c) => c.notNull().defaultTo(''))
          .execute()
        await sql`update api_keys set roles = ${'pets:read pets:write orders:read orders:write webhooks:read webhooks:write'}`.execute(db)
        if (dialect === 'postgres') {
          // a change of roles reaches every instance's cache as a revocation does
          await sql`drop trigger api_keys_changed on api_keys`.execute(db)
          await sql`create trigger api_keys_changed after update of revoked_at, roles or delete on api_keys
            for each statement execute function petstore_api_keys_changed()`.execute(db)
        }
        // The principal that placed an order (`key:12`, `env:<hex>`): it alone sees it, with
        // staff. Orders placed before have none, and are seen by staff only.
        await db.schema.alterTable('orders').addColumn('owner', 'text').execute()
        // a client's orders, in id order, and by status: what listOrders reads
        await db.schema.createIndex('orders_owner_id').on('orders').columns(['owner', 'id']).execute()
        await db.schema.createIndex('orders_owner_status_id').on('orders').columns(['owner', 'status', 'id']).execute()
        // Whose subscriptions an event goes to: null, every subscription of its type (pets);
        // else only those of this principal (an order's events go to the order's owner).
        await db.schema.alterTable('webhook_events').addColumn('audience', 'text').execute()
      },
    },
    '0009_lifecycle_usage': {
      async up(db) {
        // Who calls deprecated and non-stable operations: per principal (`key:12`, `env:<hex>`)
        // and operationId, how often, first and last (ms), added to in batches (ops/usage.ts).
        await db.schema
          .createTable('lifecycle_usage')
          .addColumn('principal', 'text', (c) => c.notNull())
          .addColumn('operation', 'text', (c) => c.notNull())
          .addColumn('calls', 'bigint', (c) => c.notNull())
          .addColumn('first_call_at', 'bigint', (c) => c.notNull())
          .addColumn('last_call_at', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('lifecycle_usage_pk', ['principal', 'operation'])
          .execute()
      },
    },
    '0010_webhook_health': {
      async up(db) {
        // A subscription is `active` or `disabled` (its endpoint answered 410 Gone, or failed for
        // too long), and says why and since when. Its endpoint's health, shared by the instances:
        // the failed attempts in a row, since when they fail, how often its circuit opened in a
        // row, and until when no attempt is made (an open circuit, or a Retry-After).
        const subscriptions = () => db.schema.alterTable('webhook_subscriptions')
        await subscriptions()
          .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
          .execute()
        await subscriptions().addColumn('disabled_reason', 'text').execute()
        await subscriptions().addColumn('disabled_at', 'bigint').execute()
        await subscriptions()
          .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
          .execute()
        await subscriptions().addColumn('failing_since', 'bigint').execute()
        await subscriptions()
          .addColumn('circuit_openings', 'integer', (c) => c.notNull().defaultTo(0))
          .execute()
        await subscriptions().addColumn('paused_until', 'bigint').execute()
        // what is due, one subscription at a time: claims take each subscription's share
        await db.schema
          .createIndex('webhook_deliveries_subscription_due')
          .on('webhook_deliveries')
          .columns(['subscription_id', 'next_attempt_at'])
          .where(sql<boolean>`status = 'pending'`)
          .execute()
      },
    },
    '0011_categories_and_versions': {
      async up(db) {
        // Version 2's categories: a name unique whatever its case (name_key, the name in lower
        // case), numbered as pets are. A pet names its category by id (pets.category_id), which
        // version 1 took unchecked: no foreign key.
        await tableWithId(db, 'categories')
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('name_key', 'text', (c) => c.notNull().unique())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .execute()
        // listPets filters by category and pages in id order
        await db.schema.createIndex('pets_category_id').on('pets').columns(['category_id', 'id']).execute()
        // The version a subscription was made through: its events are rendered so.
        await db.schema
          .alterTable('webhook_subscriptions')
          .addColumn('api_version', 'integer', (c) => c.notNull().defaultTo(1))
          .execute()
        // Who calls what, by version too: the calls counted so far were version 1's.
        await db.schema
          .createTable('lifecycle_calls')
          .addColumn('principal', 'text', (c) => c.notNull())
          .addColumn('version', 'integer', (c) => c.notNull())
          .addColumn('operation', 'text', (c) => c.notNull())
          .addColumn('calls', 'bigint', (c) => c.notNull())
          .addColumn('first_call_at', 'bigint', (c) => c.notNull())
          .addColumn('last_call_at', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('lifecycle_calls_pk', ['principal', 'version', 'operation'])
          .execute()
        await sql`insert into lifecycle_calls (principal, version, operation, calls, first_call_at, last_call_at)
          select principal, 1, operation, calls, first_call_at, last_call_at from lifecycle_usage`.execute(db)
        await db.schema.dropTable('lifecycle_usage').execute()
      },
    },
    '0012_category_names_and_ids': {
      async up(db) {
        // One name per look-alike: a category's name is unique by name_fold (core/names.ts:
        // NFKC, full case folding, no characters that draw nothing), no longer by lower case.
        // Names stored before that now fold to one are not merged: the migration stops, naming
        // them, and the operator renames all but one of each.
        const stored = (await sql<{ id: number | string; name: string }>`select id, name from categories order by id`.execute(db)).rows
        const byFold = new Map<string, typeof stored>()
        for (const category of stored) {
          const fold = nameKey(category.name)
          byFold.set(fold, [...(byFold.get(fold) ?? []), category])
        }
        const alike = [...byFold.values()].filter((group) => group.length > 1)
        if (alike.length > 0) {
          const named = alike.map((group) => group.map(({ id, name }) => `${id} ${JSON.stringify(name)}`).join(' and ')).join('; ')
          throw new Error(
            `categories whose names are now one name (Unicode NFKC and case folding, invisible characters ignored): ${named}. ` +
              'Rename all but one of each in the database (categories.name, and name_key as its lower case), then migrate again',
          )
        }
        // A category id that a pet names is never given to a new category: version 1 takes any
        // category id for a pet, and such an id stays without a category (a row with no name,
        // which the API does not list), so that no category is given pets it never had. Ids are
        // chosen by the insert that adds a category (categories/repository.ts), not by a sequence,
        // and a row of either kind holds its id under the primary key: whichever commits first.
        if (dialect === 'postgres') {
          await sql`alter table categories alter column id drop identity`.execute(db)
          await sql`alter table categories alter column name drop not null`.execute(db)
          await db.schema.alterTable('categories').dropColumn('name_key').execute()
          await db.schema.alterTable('categories').addColumn('name_fold', 'text').execute()
        } else {
          // (SQLite alters no column's constraints: the table is made anew, ids kept)
          await db.schema
            .createTable('categories_new')
            .addColumn('id', 'integer', (c) => c.primaryKey())
            .addColumn('name', 'text')
            .addColumn('name_fold', 'text')
            .addColumn('created_at', 'bigint', (c) => c.notNull())
            .execute()
          await sql`insert into categories_new (id, name, created_at) select id, name, created_at from categories`.execute(db)
          await db.schema.dropTable('categories').execute()
          await db.schema.alterTable('categories_new').renameTo('categories').execute()
        }
        for (const [fold, [category]] of byFold) await sql`update categories set name_fold = ${fold} where id = ${category!.id}`.execute(db)
        await db.schema.createIndex('categories_name_fold').unique().on('categories').column('name_fold').execute()
        // the ids that pets name and no category has: kept from now on
        await sql`insert into categories (id, created_at)
          select distinct category_id, ${sql.lit(Date.now())} from pets where not exists (select 1 from categories where categories.id = pets.category_id)`.execute(
          db,
        )
      },
    },
    '0013_store_revision': {
      // The store's revision (storage/revision.ts): a counter that each change of the tables API
      // reads show adds to, in the change's own transaction, by trigger, so that no write
      // (the service's, or an operator's by hand) leaves it behind. A table made anew later (as
      // SQLite alters tables) needs its triggers made anew.
      async up(db) {
        await db.schema
          .createTable('store_revision')
          .addColumn('writer', 'integer', (c) => c.primaryKey())
          .addColumn('revision', 'bigint', (c) => c.notNull())
          .execute()
        const tables = Object.entries(revisedTables)
        // PostgreSQL: a writer adds to the row of its own connection (its backend's pid, made by
        // the first write), which no other transaction at the same time touches: writers at once
        // take no lock in common, so none waits for another's commit, and no two can deadlock
        // over the counter (were two to share a row, one holding it could wait for a row the
        // other locked first). A reader sums the rows. SQLite has one writer at a time, and one row.
        if (dialect === 'postgres') {
          // once per statement: a statement that changes many rows adds one
          await sql`create function petstore_revise() returns trigger language plpgsql as $$
            begin
              insert into store_revision (writer, revision) values (pg_backend_pid(), 1)
                on conflict (writer) do update set revision = store_revision.revision + 1;
              return null;
            end $$`.execute(db)
          for (const [table, columns] of tables) {
            const updates = columns === undefined ? 'update' : `update of ${columns.join(', ')}`
            await sql`create trigger ${sql.id(`${table}_revise`)} after insert or delete or truncate or ${sql.raw(updates)} on ${sql.table(table)}
              for each statement execute function petstore_revise()`.execute(db)
          }
        } else {
          await sql`insert into store_revision (writer, revision) values (0, 0)`.execute(db)
          // (SQLite's triggers are per row)
          for (const [table, columns] of tables) {
            for (const event of ['insert', 'delete', columns === undefined ? 'update' : `update of ${columns.join(', ')}`]) {
              await sql`create trigger ${sql.id(`${table}_revise_${event.split(' ')[0]}`)} after ${sql.raw(event)} on ${sql.table(table)}
                begin update store_revision set revision = revision + 1; end`.execute(db)
            }
          }
        }
      },
    },
    '0014_revision_of_changed_rows': {
      // PostgreSQL fires a statement's trigger whatever the statement changed, nothing included:
      // a periodic job's update that found nothing to do (the held deliveries', every few
      // seconds) moved the revision, and with it every page's tag, so that a client polling a
      // page was answered 200 where 304 was due. Each trigger now looks at the rows the statement
      // changed (its transition tables), and for a table whose reads show some columns only,
      // whether one of those changed. (SQLite's triggers are per row: they fire for rows changed.)
      async up(db) {
        if (dialect !== 'postgres') return
        const revise = sql`insert into store_revision (writer, revision) values (pg_backend_pid(), 1)
          on conflict (writer) do update set revision = store_revision.revision + 1;`
        await sql`create function petstore_revise_changed() returns trigger language plpgsql as $$
          begin
            if exists (select 1 from changed) then ${revise} end if;
            return null;
          end $$`.execute(db)
        for (const [table, columns] of Object.entries(revisedTables)) {
          const named = (event: string) => sql.id(`${table}_revise_${event}`)
          await sql`drop trigger ${sql.id(`${table}_revise`)} on ${sql.table(table)}`.execute(db)
          await sql`create trigger ${named('insert')} after insert on ${sql.table(table)}
            referencing new table as changed for each statement execute function petstore_revise_changed()`.execute(db)
          await sql`create trigger ${named('delete')} after delete on ${sql.table(table)}
            referencing old table as changed for each statement execute function petstore_revise_changed()`.execute(db)
          await sql`create trigger ${named('truncate')} after truncate on ${sql.table(table)} for each statement execute function petstore_revise()`.execute(db)
          if (columns === undefined) {
            await sql`create trigger ${named('update')} after update on ${sql.table(table)}
              referencing new table as changed for each statement execute function petstore_revise_changed()`.execute(db)
            continue
          }
          // (a trigger with transition tables takes no column list: the function compares them)
          const row = (alias: string) => sql.join(columns.map((column) => sql.ref(`${alias}.${column}`)))
          await sql`create function ${named('update')}() returns trigger language plpgsql as $$
            begin
              if exists (select 1 from changed n join before_rows o on n.id = o.id where (${row('n')}) is distinct from (${row('o')})) then ${revise} end if;
              return null;
            end $$`.execute(db)
          await sql`create trigger ${named('update')} after update on ${sql.table(table)}
            referencing old table as before_rows new table as changed for each statement execute function ${named('update')}()`.execute(db)
        }
      },
    },
    '0015_events_by_column': {
      // An event waiting in the outbox kept its pet or order by the API's property names of the
      // day (version 2's): a new major that renamed one would have sent those events without it.
      // It keeps them by the columns of their tables now (columns.ts, `stored`), which no new
      // major changes; the events written before are rewritten so, by the maps of that day
      // (written out here: a migration is never edited).
      async up(db) {
        const byColumn: Record<string, Record<string, string>> = {
          pet: { id: 'id', name: 'name', categoryId: 'category_id', status: 'status', categoryName: 'categoryName' },
          order: { id: 'id', petId: 'pet_id', status: 'status', placedAt: 'placed_at' },
        }
        for (let after = 0; ;) {
          const { rows } = await sql<{ id: number | string; type: string; fields: string }>`select id, type, fields from webhook_events
            where id > ${after} and type in ('pet.created', 'pet.status_changed', 'order.placed', 'order.status_changed') order by id limit 500`.execute(db)
          if (rows.length === 0) break
          for (const { id, type, fields } of rows) {
            const event = JSON.parse(fields) as { data: Record<string, unknown> }
            const columns = byColumn[type.slice(0, type.indexOf('.'))]!
            const data: Record<string, unknown> = {}
            for (const [property, value] of Object.entries(event.data)) data[columns[property]!] = value
            // (an order's time: milliseconds since the epoch in its table, an ISO date to the API)
            if (typeof data.placed_at === 'string') data.placed_at = Date.parse(data.placed_at)
            await sql`update webhook_events set fields = ${JSON.stringify({ ...event, data })} where id = ${id}`.execute(db)
          }
          after = Number(rows.at(-1)!.id)
        }
      },
    },
    '0016_category_names_by_skeleton': {
      async up(db) {
        // One name per look-alike of any script: a category's name_fold is its lookAlikeKey
        // (core/names.ts: nameKey's, then the confusable skeleton of UTS #39 and the marks that
        // show nothing more folded), no longer its nameKey. As in 0012, names stored before that
        // now share a key are not merged: the migration stops, naming them, and the operator
        // renames all but one of each (categories.name: this migration computes name_fold).
        const stored = (await sql<{ id: number | string; name: string }>`select id, name from categories where name is not null order by id`.execute(db)).rows
        const byKey = new Map<string, typeof stored>()
        for (const category of stored) {
          const key = lookAlikeKey(category.name)
          byKey.set(key, [...(byKey.get(key) ?? []), category])
        }
        const alike = [...byKey.values()].filter((group) => group.length > 1)
        if (alike.length > 0) {
          const named = alike.map((group) => group.map(({ id, name }) => `${id} ${JSON.stringify(name)}`).join(' and ')).join('; ')
          throw new Error(
            `categories whose names are now one name (look-alikes of any script, Unicode's confusable skeleton of UTS #39): ${named}. ` +
              'Rename all but one of each in the database (categories.name), then migrate again',
          )
        }
        // (emptied first: a name's new key may be another's old one, under the unique index)
        await sql`update categories set name_fold = null where name is not null`.execute(db)
        for (const [key, [category]] of byKey) await sql`update categories set name_fold = ${key} where id = ${category!.id}`.execute(db)
      },
    },
    '0017_revision_by_part': {
      // The store's one revision moved with every change anyone made, and a page's tag was a
      // hash of it that anyone could invert: a key saw another's orders and subscriptions move.
      // It is kept per part of the store a page shows now (storage/revision.ts names them): the
      // catalogue (pets and categories, which every key sees), every order (staff's view), and
      // each owner's orders. Subscriptions and deliveries count no more: no page is tagged by
      // them (theirs carry the tag of their bytes). On PostgreSQL each part has a row per
      // connection that writes it, as before, and a row (writer 0) that the rows of connections
      // gone are folded into (revision.ts, foldEndedWriters): the rows stay as many as the
      // connections alive. Pages are tagged with a key the database keeps (tag_secret), so that
      // no tag reveals a revision, and every instance on one database tags a page alike.
      async up(db) {
        for (const table of Object.keys(revisedTables)) {
          for (const event of dialect === 'postgres' ? ['insert', 'delete', 'truncate', 'update'] : ['insert', 'delete', 'update']) {
            await sql`drop trigger ${sql.id(`${table}_revise_${event}`)}${sql.raw(dialect === 'postgres' ? ` on ${table}` : '')}`.execute(db)
          }
        }
        if (dialect === 'postgres') {
          await sql`drop function webhook_deliveries_revise_update(), petstore_revise_changed(), petstore_revise()`.execute(db)
        }
        await db.schema.dropTable('store_revision').execute()
        await db.schema
          .createTable('page_revisions')
          .addColumn('part', 'text', (c) => c.notNull())
          .addColumn('writer', 'integer', (c) => c.notNull())
          .addColumn('revision', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('page_revisions_key', ['part', 'writer'])
          .execute()
        await db.schema
          .createTable('tag_secret')
          .addColumn('secret', 'text', (c) => c.notNull())
          .execute()
        await sql`insert into tag_secret (secret) values (${randomBytes(32).toString('base64url')})`.execute(db)
        if (dialect === 'postgres') await postgresPartTriggers(db)
        else await sqlitePartTriggers(db)
      },
    },
    '0018_event_trace': {
      // An event keeps the trace of the request that made it (W3C traceparent, tracing on;
      // null otherwise): each attempt to deliver it continues that trace (webhooks/dispatcher.ts).
      async up(db) {
        await db.schema.alterTable('webhook_events').addColumn('trace_parent', 'text').execute()
      },
    },
  }
}

/**
 * Migration 0017's triggers on PostgreSQL: once per statement that changed a row (its transition
 * table), a writer adds one to each part the rows were of, on its own connection's row (its
 * backend's pid): writers at once take no lock in common. A truncate of orders counts, before it
 * runs, for each owner whose orders it removes. (Written out: a migration is never edited.)
 */
async function postgresPartTriggers(db: Kysely<unknown>): Promise<void> {
  await sql`create function petstore_revise_parts(parts text[]) returns void language sql as $$
    insert into page_revisions (part, writer, revision)
      select distinct part, pg_backend_pid(), 1 from unnest(parts) part where part is not null order by 1
      on conflict (part, writer) do update set revision = page_revisions.revision + 1 $$`.execute(db)
  await sql`create function petstore_revise_catalogue() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from changed) then perform petstore_revise_parts(array['catalogue']); end if;
      return null;
    end $$`.execute(db)
  await sql`create function petstore_revise_catalogue_truncated() returns trigger language plpgsql as $$
    begin
      perform petstore_revise_parts(array['catalogue']);
      return null;
    end $$`.execute(db)
  for (const table of ['pets', 'categories']) {
    for (const event of ['insert', 'update', 'delete']) {
      const rows = event === 'delete' ? 'old' : 'new'
      await sql`create trigger ${sql.id(`${table}_revise_${event}`)} after ${sql.raw(event)} on ${sql.table(table)}
        referencing ${sql.raw(rows)} table as changed for each statement execute function petstore_revise_catalogue()`.execute(db)
    }
    await sql`create trigger ${sql.id(`${table}_revise_truncate`)} after truncate on ${sql.table(table)}
      for each statement execute function petstore_revise_catalogue_truncated()`.execute(db)
  }
  // an order is of every order's part, and of its owner's (orders placed before keys owned them have none)
  const ownersIn = (rows: string) => `array(select 'orders:' || owner from ${rows} where owner is not null)`
  await sql`create function petstore_revise_orders() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from changed) then perform petstore_revise_parts(array['orders'] || ${sql.raw(ownersIn('changed'))}); end if;
      return null;
    end $$`.execute(db)
  await sql`create function petstore_revise_orders_updated() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from changed) then
        perform petstore_revise_parts(array['orders'] || ${sql.raw(ownersIn('changed'))} || ${sql.raw(ownersIn('before_rows'))});
      end if;
      return null;
    end $$`.execute(db)
  await sql`create function petstore_revise_orders_truncated() returns trigger language plpgsql as $$
    begin
      perform petstore_revise_parts(array['orders'] || ${sql.raw(ownersIn('orders'))});
      return null;
    end $$`.execute(db)
  await sql`create trigger orders_revise_insert after insert on orders
    referencing new table as changed for each statement execute function petstore_revise_orders()`.execute(db)
  await sql`create trigger orders_revise_delete after delete on orders
    referencing old table as changed for each statement execute function petstore_revise_orders()`.execute(db)
  await sql`create trigger orders_revise_update after update on orders
    referencing old table as before_rows new table as changed for each statement execute function petstore_revise_orders_updated()`.execute(db)
  await sql`create trigger orders_revise_truncate before truncate on orders for each statement execute function petstore_revise_orders_truncated()`.execute(db)
  // (what the fold of the rows of ended connections scans: those rows alone, not the writer-0 ones)
  await sql`create index page_revisions_writers on page_revisions (writer) where writer <> 0`.execute(db)
}

/** Migration 0017's triggers on SQLite: per changed row, one writer at a time, one row per part. */
async function sqlitePartTriggers(db: Kysely<unknown>): Promise<void> {
  const add = (part: string, when = '1') =>
    `insert into page_revisions (part, writer, revision) select ${part}, 0, 1 where ${when} on conflict (part, writer) do update set revision = revision + 1;`
  for (const table of ['pets', 'categories']) {
    for (const event of ['insert', 'update', 'delete']) {
      await sql`create trigger ${sql.id(`${table}_revise_${event}`)} after ${sql.raw(event)} on ${sql.table(table)}
        begin ${sql.raw(add("'catalogue'"))} end`.execute(db)
    }
  }
  // (an update counts for the owner before it too, where it gave the order to another)
  const owners = {
    insert: [['new', '']],
    update: [
      ['new', ''],
      ['old', ' and old.owner is not new.owner'],
    ],
    delete: [['old', '']],
  }
  for (const [event, rows] of Object.entries(owners)) {
    const ownersOf = rows.map(([row, unless]) => add(`'orders:' || ${row}.owner`, `${row}.owner is not null${unless}`)).join('\n')
    await sql`create trigger ${sql.id(`orders_revise_${event}`)} after ${sql.raw(event)} on orders
      begin ${sql.raw(add("'orders'"))} ${sql.raw(ownersOf)} end`.execute(db)
  }
}

/** The schema could not be brought up to date; the process reports it in one line and exits. */
export class MigrationError extends OperatorError {}

/** Brings the schema up to date; returns the names of the migrations it applied. */
export async function migrate({ db, dialect }: Pick<Database, 'db' | 'dialect'>): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations(dialect) },
  })
  const { error, results = [] }: MigrationResultSet = await migrator.migrateToLatest()
  if (error !== undefined) {
    // Kysely's results list the migrations before the failing one as successes, but they ran
    // in its transaction and were rolled back with it: none is applied.
    const failed = results.find((result) => result.status === 'Error')
    const what = failed ? `migration ${failed.migrationName} failed` : 'cannot migrate'
    throw new MigrationError(`${what}: ${(error as Error).message}; no migration was applied`)
  }
  return results.map((result) => result.migrationName)
}
