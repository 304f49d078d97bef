import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { testKey } from './helpers/app.js'
import { run, startServer } from './helpers/processes.js'

const tempDir = () => mkdtempSync(join(tmpdir(), 'petstore-server-'))

t.test('the server logs its URL, answers, and on SIGTERM finishes and exits 0', async (t) => {
  const dir = tempDir()
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'pets.db')}`, API_KEYS: testKey })
  const response = await fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${testKey}` } })
  t.equal(response.status, 200)
  server.child.kill('SIGTERM')
  const { code } = await server.exited
  t.equal(code, 0)
  t.match(server.stdout(), /"msg":"shutting down"/)
  t.notMatch(server.stdout() + server.stderr(), testKey, 'the key is never logged')
})

t.test('bad configuration: one clear line on stderr, exit 1', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: '99999' }, /^petstore: invalid configuration: PORT must be <= 65535\n$/],
    [{ LOG_LEVEL: 'loud' }, /^petstore: invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent\n$/],
    [{ DATABASE_URL: 'mysql://localhost/pets' }, /^petstore: DATABASE_URL: unknown scheme "mysql:"/],
  ]
  for (const [env, message] of cases) {
    const { code, stderr } = await run(t, 'src/server.ts', [], env)
    t.equal(code, 1, JSON.stringify(env))
    t.match(stderr, message)
  }
})
