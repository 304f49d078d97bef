import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { sqliteKeyChanges } from '../src/storage/key-changes.js'

t.test("SQLite: data_version is asked at most once a window, and a change waits out the window before it is done", async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'petstore-key-changes-')), 'keys.db')
  const [ours, theirs] = [new SQLite(file), new SQLite(file)]
  t.teardown(() => {
    ours.close()
    theirs.close()
  })
  for (const connection of [ours, theirs]) connection.pragma('journal_mode = WAL')
  theirs.exec('create table api_keys (id integer primary key)')
  const windowMs = 200
  const changes = sqliteKeyChanges(ours, windowMs)

  const began = performance.now()
  theirs.exec('insert into api_keys default values')
  t.equal(changes.changed(), false, 'within the window of the last answer: that answer stands')
  await changes.propagated()
  t.ok(performance.now() - began >= windowMs, 'propagated waits out the window')
  t.equal(changes.changed(), true, 'once the window is over, a commit made before is seen')
  t.equal(changes.changed(), false, 'and reported once')

  await new Promise((resolve) => setTimeout(resolve, windowMs + 1))
  t.equal(changes.changed(), false, 'no commit since: no change')
  ours.exec('insert into api_keys default values')
  await new Promise((resolve) => setTimeout(resolve, windowMs + 1))
  t.equal(changes.changed(), false, "the connection's own commits do not count")
  await changes.close()
})
