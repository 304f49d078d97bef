/**
 * The log's destination: every line written, in order, however fast they come; at most the
 * buffer's bytes held when they cannot be written.
 */
import fs, { mkdtempSync, openSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { logDestination } from '../src/ops/log-destination.js'

t.test('lines that come faster than one write can take are all written, whole and in order', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'petstore-log-')), 'log')
  const fd = openSync(file, 'w')
  const log = logDestination(16 * 1024 * 1024, fd)
  // the writes to the file, counted where sonic-boom makes them (fs.write, looked up at each call)
  let writes = 0
  const write = fs.write
  fs.write = ((target: number, ...rest: unknown[]) => {
    if (target === fd) writes++
    return (write as (...args: unknown[]) => void)(target, ...rest)
  }) as typeof fs.write
  t.teardown(() => {
    fs.write = write
  })
  let dropped = 0
  log.onDrop(() => dropped++)
  // 20,000 lines of 200 bytes in one turn of the event loop: 4 MB, 250 times sonic-boom's default write
  const line = (i: number) => `${JSON.stringify({ i, pad: 'x'.repeat(180) })}\n`
  const started = performance.now()
  for (let i = 0; i < 20_000; i++) log.write(line(i))
  // written in the background, in a few writes
  while (readFileSync(file, 'utf8').length < 20_000 * line(0).length && performance.now() - started < 10_000)
    await new Promise((resolve) => setTimeout(resolve, 10))
  t.ok(performance.now() - started < 5_000, `written in ${Math.round(performance.now() - started)} ms`)
  const lines = readFileSync(file, 'utf8').split('\n').slice(0, -1)
  t.equal(lines.length, 20_000)
  t.ok(
    lines.every((text, i) => JSON.parse(text).i === i),
    'each whole, in order',
  )
  t.equal(dropped, 0)
  // sonic-boom's defaults take 16 KiB a write: some 250 writes for these 4 MB
  t.ok(writes <= 5, `in ${writes} writes: each takes what came during the one before`)
})

t.test('a line alone, with none after it, is written within the 50 ms tick', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'petstore-log-')), 'log')
  const log = logDestination(16 * 1024 * 1024, openSync(file, 'w'))
  const line = `${JSON.stringify({ msg: 'alone' })}\n`
  log.write(line)
  const started = performance.now()
  while (readFileSync(file, 'utf8') === '' && performance.now() - started < 2_000) await new Promise((resolve) => setTimeout(resolve, 5))
  t.equal(readFileSync(file, 'utf8'), line)
  t.ok(performance.now() - started < 500, `written after ${Math.round(performance.now() - started)} ms`)
})
