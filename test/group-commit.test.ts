import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { openStorage } from '../src/repositories.js'
import { groupCommit, transactions } from '../src/storage/group-commit.js'
import { connect } from '../src/storage/index.js'
import type { Sql } from '../src/storage/sql.js'

t.test('writes of one turn of the event loop are written together, each answered with its own result', async (t) => {
  const batches: number[][] = []
  const write = groupCommit(async (items: number[]) => {
    batches.push(items)
    return items.map((item) => item * 10)
  })
  const first = await Promise.all([write(1), write(2), write(3)])
  const second = await write(4)
  t.strictSame(first, [10, 20, 30])
  t.equal(second, 40)
  t.strictSame(batches, [[1, 2, 3], [4]])
  t.match(write.stats(), { batches: 2, writes: 4, seconds: Number, queued: 0 }, 'counted for the metrics')
  const pending = write(5)
  t.equal(write.stats().queued, 1, 'a write waiting for the next commit')
  await pending
})

t.test('when a batch fails, every write in it fails, and the next batch is not affected', async (t) => {
  const write = groupCommit(async (items: string[]) => {
    if (items.includes('bad')) throw new Error('disk full')
    return items
  })
  const results = await Promise.allSettled([write('good'), write('bad')])
  t.strictSame(
    results.map((result) => result.status),
    ['rejected', 'rejected'],
  )
  t.equal(await write('later'), 'later')
  t.match(write.stats(), { batches: 2, writes: 3 }, 'a failed batch counts too')
})

t.test('on SQLite, concurrent creates share commits and keep their order', async (t) => {
  const storage = await openStorage(`sqlite:${join(mkdtempSync(join(tmpdir(), 'petstore-group-')), 'pets.db')}`, { poolSize: 1 })
  t.teardown(() => storage.close())
  const created = await Promise.all(Array.from({ length: 100 }, (_, i) => storage.pets.create({ name: `Pet ${i}`, categoryId: i + 1, status: 'available' })))
  t.strictSame(
    created.map(({ id, categoryId }) => [id, categoryId]),
    Array.from({ length: 100 }, (_, i) => [i + 1, i + 1]),
    'ids follow the order of the calls',
  )
  const stored = await storage.pets.list({ limit: 100 })
  t.strictSame(stored, created, 'every create is stored as answered')
})

t.test('transactions(): on SQLite, works that arrive together share one transaction, and each resolves after its commit', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-group-'))
  const file = join(dir, 'pets.db')
  const storage = await openStorage(`sqlite:${file}`, { poolSize: 1 })
  t.teardown(() => storage.close())
  const database = await connect(`sqlite:${file}`, { poolSize: 1 })
  t.teardown(() => database.close())
  // the real statements, with the transactions counted
  let begun = 0
  const counted: Sql = { ...database.sql, transaction: (work) => (begun++, database.sql.transaction(work)) }
  const write = transactions(counted, true)
  // another connection to the file sees only what is committed
  const reader = new SQLite(file, { readonly: true })
  t.teardown(() => reader.close())
  const stored = () => reader.prepare("select count(*) from pets where name like 'Grouped %'").pluck().get()

  const ids = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      write(async (tx) => {
        const row = await tx.row<{ id: number }>("insert into pets (name, category_id, status) values ($1, 1, 'available') returning id", [`Grouped ${i}`])
        return row!.id
      }).then((id) => {
        t.equal(stored(), 20, `write ${i} resolves once all twenty are committed`)
        return id
      }),
    ),
  )
  t.equal(begun, 1, 'one transaction for the twenty')
  t.strictSame(
    ids,
    Array.from({ length: 20 }, (_, i) => ids[0]! + i),
    'each in its order, with its own result',
  )

  // a failing work fails its whole transaction: nothing of it is stored
  const failed = await Promise.allSettled([
    write(async (tx) => tx.run("insert into pets (name, category_id, status) values ('Lost', 1, 'available')")),
    write(async (tx) => tx.run('insert into no_such_table values (1)')),
  ])
  t.strictSame(
    failed.map((result) => result.status),
    ['rejected', 'rejected'],
  )
  t.equal(reader.prepare("select count(*) from pets where name = 'Lost'").pluck().get(), 0)
})

t.test('transactions(): ungrouped (PostgreSQL), each work has a transaction of its own', async (t) => {
  const database = await connect('sqlite::memory:', { poolSize: 1 })
  t.teardown(() => database.close())
  let begun = 0
  const counted: Sql = { ...database.sql, transaction: (work) => (begun++, database.sql.transaction(work)) }
  const write = transactions(counted, false)
  t.strictSame(await Promise.all([write(async () => 1), write(async () => 2)]), [1, 2])
  t.equal(begun, 2)
})
