/**
 * What a script takes from its process (src/core/command-io.ts): whether it was run or imported,
 * and the process's own environment and outputs. Each script's `main` is tested with its own
 * (test/helpers/main.ts), and once as a real process.
 */
import { mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { isEntry, processIo } from '../src/core/command-io.js'
import { reportFailure } from '../src/core/failure.js'
import { ConfigError } from '../src/core/config.js'
import { runMain } from './helpers/main.js'

t.test('isEntry: the module the process was started with, named as given or through a symbolic link', async (t) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'petstore-entry-')))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const script = join(dir, 'script.ts')
  writeFileSync(script, '')
  writeFileSync(join(dir, 'other.ts'), '')
  symlinkSync(dir, join(dir, 'link'))
  t.ok(isEntry(script, script), 'started with it')
  t.ok(isEntry(script, join(dir, 'link', 'script.ts')), 'started with it through a link')
  t.notOk(isEntry(script, join(dir, 'other.ts')), 'started with another module: imported')
  t.notOk(isEntry(script, join(dir, 'gone.ts')), 'an entry that is no file')
  t.notOk(isEntry(script, undefined), 'no entry (node -e, the REPL)')
  t.notOk(isEntry(script), 'the entry of this process is this test')
})

t.test("processIo: the process's environment; a failure reported to a writer, one line or with its stack", async (t) => {
  t.equal(processIo.env, process.env)
  const lines: (string | Error)[] = []
  reportFailure('petstore tool', new ConfigError('invalid configuration: PORT must be <= 65535'), (line) => lines.push(line))
  const bug = new TypeError('x is undefined')
  reportFailure('petstore tool', bug, (line) => lines.push(line))
  t.strictSame(lines, ['petstore tool: invalid configuration: PORT must be <= 65535', bug])
  const run = await runMain(async (_, io) => {
    io.stdout('out')
    io.stderr(bug)
    return 3
  })
  t.equal(run.code, 3)
  t.equal(run.stdout, 'out\n')
  t.match(run.stderr, /^TypeError: x is undefined\n +at /, 'an Error with its stack, as the console writes it')
})
