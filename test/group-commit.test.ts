import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { groupCommit } from '../src/storage/group-commit.js'
import { openStorage } from '../src/storage/index.js'

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
})

t.test('on SQLite, concurrent creates share commits and keep their order', async (t) => {
  const storage = await openStorage(`sqlite:${join(mkdtempSync(join(tmpdir(), 'petstore-group-')), 'pets.db')}`, { poolSize: 1 })
  t.teardown(() => storage.close())
  const created = await Promise.all(
    Array.from({ length: 100 }, (_, i) => storage.pets.create({ name: `Pet ${i}`, categoryId: i + 1, status: 'available' })),
  )
  t.strictSame(
    created.map(({ id, categoryId }) => [id, categoryId]),
    Array.from({ length: 100 }, (_, i) => [i + 1, i + 1]),
    'ids follow the order of the calls',
  )
  const stored = await storage.pets.list({ limit: 100 })
  t.strictSame(stored, created, 'every create is stored as answered')
})
