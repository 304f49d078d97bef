/**
 * sharedRead: one read for the callers of a turn, never one made before a caller asked.
 */
import t from 'tap'
import { sharedRead } from '../src/core/shared-read.js'

t.test('the callers of one turn share one read, made after the last of them asked', async (t) => {
  let value = 0
  let reads = 0
  const read = sharedRead(() => {
    reads++
    return value
  })
  const first = read()
  value = 1
  const second = read()
  t.equal(first, second, 'one promise for both')
  t.equal(reads, 0, 'nothing read while the turn goes on')
  t.strictSame(await Promise.all([first, second]), [1, 1], 'both see the value as it was after the second asked')
  t.equal(reads, 1, 'one read')
  value = 2
  t.equal(await read(), 2, 'a caller of a later turn gets a read of its own')
  t.equal(reads, 2)
})

t.test('a caller that asks while a read is under way waits for the next one', async (t) => {
  const made: { resolve: (value: number) => void }[] = []
  const read = sharedRead(() => new Promise<number>((resolve) => made.push({ resolve })))
  const early = read()
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(made.length, 1, 'the read is under way')
  const late = read()
  t.not(late, early, 'the late caller does not join it')
  made[0]!.resolve(1)
  t.equal(await early, 1)
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(made.length, 2, 'a second read, made after the late caller asked')
  made[1]!.resolve(2)
  t.equal(await late, 2)
})

t.test('a read that fails fails for each of its callers, and the next turn reads again', async (t) => {
  let fail: 'throw' | 'reject' | undefined = 'throw'
  const read = sharedRead(() => {
    if (fail === 'throw') throw new Error('store down')
    if (fail === 'reject') return Promise.reject(new Error('store gone'))
    return 'r1'
  })
  await t.rejects(Promise.all([read(), read()]), /store down/, 'a read that throws')
  fail = 'reject'
  await t.rejects(read(), /store gone/, 'a read that rejects')
  fail = undefined
  t.equal(await read(), 'r1', 'then a read that answers')
})
