/**
 * The README is a promise: its first start's text is what the server prints, and its version 2
 * walk-through works on a fresh store with the key that first start printed, each answer as the
 * README writes it. The server is started as `npm start` starts it (src/server.ts, a store of its
 * own), and the README's commands are run by bash and curl, as a reader would paste them.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../src/core/paths.js'
import { startServer, within } from './helpers/processes.js'

const readme = readFileSync(join(projectRoot, 'README.md'), 'utf8')

/** The README's code block whose info string names `id` (```sh v2-walk-through). */
function readmeBlock(id: string): string {
  const found = [...readme.matchAll(/^```\w+ ([\w-]+)\n([\s\S]*?)\n```$/gm)].filter(([, name]) => name === id)
  if (found.length !== 1) throw new Error(`README.md has ${found.length} code blocks named ${id}`)
  return found[0]![2]!
}

/** Where the README's samples say the server is, and the key they show. */
const readmeUrl = 'http://127.0.0.1:3000'
const readmeKey = 'pet_0e3b7c1a_…'

/** A shell script's commands (a line ending in `\` goes on), each with the comment line after
 * it: what the README says it prints. */
function commands(script: string): { command: string; printed: string }[] {
  const lines = script.replace(/\\\n/g, '').split('\n')
  const found: { command: string; printed: string }[] = []
  for (const [i, line] of lines.entries()) {
    if (!line.startsWith('curl ')) continue
    const printed = lines[i + 1]
    if (printed?.startsWith('# ') !== true) throw new Error(`README.md: no answer written after ${line}`)
    found.push({ command: line, printed: printed.slice(2) })
  }
  return found
}

/** Runs a bash script; resolves to what it printed on stdout. */
function bash(script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })))
}

t.test('the README on a fresh store: the first start prints its text, and the version 2 walk-through works with that key', async (t) => {
  const store = join(mkdtempSync(join(tmpdir(), 'petstore-readme-')), 'petstore.db')
  const server = await startServer(t, { DATABASE_URL: `sqlite:${store}`, API_KEYS: '' })
  // (the key is printed once the server listens)
  await within(
    15_000,
    (async () => {
      while (!server.stdout().includes('Manage keys with')) await new Promise((resolve) => setTimeout(resolve, 20))
    })(),
  )
  const key = /API key: {2}(\S+)/.exec(server.stdout())![1]!
  const printed = /^No API key was set up[\s\S]*?\nManage keys with: .*$/m.exec(server.stdout())![0]
  t.equal(printed.replaceAll(key, readmeKey).replaceAll(server.url, readmeUrl), readmeBlock('first-start'), "the first start's text, as the README shows it")

  const walk = readmeBlock('v2-walk-through')
  const steps = commands(walk)
  t.equal(steps.length, 3, 'a category, a pet in it, the pet read back')
  const [keyLine] = walk.split('\n')
  t.match(keyLine, `KEY=${readmeKey}`, 'the walk-through starts with the printed key')
  for (const { command, printed } of steps) {
    t.match(command, readmeUrl, 'each command is of the server the README starts')
    const run = await bash(`KEY='${key}'\n${command.replaceAll(readmeUrl, server.url)}`)
    t.equal(run.code, 0, command, { stderr: run.stderr })
    t.equal(run.stdout, printed, `${command}\n  prints ${printed}`)
  }
})
