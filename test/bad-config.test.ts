/**
 * A database the server cannot use: it says so in one line on stderr, `petstore: ` and what is
 * wrong, and exits 1, without a stack trace, whatever the cause.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import t, { type Test } from 'tap'
import { projectRoot } from '../src/core/paths.js'
import { databaseTimeoutMs, DatabaseConfigError, parseDatabaseUrl } from '../src/storage/database.js'
import { sqliteProblem } from '../src/storage/sqlite.js'
import { testKey } from './helpers/app.js'
import { adminUrl, postgresMissing } from './helpers/postgres.js'
import { run, startServer } from './helpers/processes.js'

// Each case starts a server process (seconds under the TypeScript loader): they run side by side.
t.jobs = 4

/** The test server's URL with some parts replaced. */
function postgresUrl(parts: { username?: string; pathname?: string; port?: string }): string {
  const url = new URL(adminUrl)
  Object.assign(url, parts)
  return url.toString()
}

async function failsInOneLine(t: Test, DATABASE_URL: string, message: RegExp) {
  const { code, stdout, stderr } = await run(t, 'src/server.ts', [], { DATABASE_URL })
  t.equal(code, 1, 'exit code 1')
  t.match(stderr, /^petstore: [^\n]+\n$/, 'exactly one line, no stack trace')
  t.match(stderr, message, 'it names the problem')
  t.equal(stdout, '', 'and nothing else')
}

/** A new folder, removed when the test ends. */
function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bad-config-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('PostgreSQL that nothing listens for', async (t) => {
  await failsInOneLine(
    t,
    'postgres://postgres@127.0.0.1:1/petstore',
    /^petstore: cannot connect to PostgreSQL 127\.0\.0\.1:1\/petstore: connect ECONNREFUSED 127\.0\.0\.1:1\n/,
  )
})

t.test('a PostgreSQL that never answers (a host that drops packets): a timeout, not a hang', async (t) => {
  // A listener that accepts connections and stays silent, as a firewalled host would.
  const sockets = new Set<Socket>()
  const silent = createServer((socket) => sockets.add(socket))
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    silent.close()
  })
  const { port } = silent.address() as { port: number }
  const started = Date.now()
  await failsInOneLine(t, `postgres://postgres@127.0.0.1:${port}/petstore`, /cannot connect to PostgreSQL .+: .*timeout/i)
  t.ok(Date.now() - started >= databaseTimeoutMs, `it waited the ${databaseTimeoutMs} ms of the connection timeout`)
  t.equal(sockets.size, 1, 'the server did try to connect')
})

t.test('a server that does not speak TLS, asked for it (sslmode=verify-full)', async (t) => {
  // answers PostgreSQL's SSLRequest as a server without TLS does: "N"
  const plain = createServer((socket) => socket.once('data', () => socket.end('N')))
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
  t.teardown(() => plain.close())
  const { port } = plain.address() as { port: number }
  await failsInOneLine(
    t,
    `postgres://postgres@127.0.0.1:${port}/petstore?sslmode=verify-full`,
    /^petstore: cannot connect to PostgreSQL 127\.0\.0\.1:\d+\/petstore: The server does not support SSL connections\n/,
  )
})

// Trust authentication is on for the test server, so a wrong password cannot be tested here; a
// role that does not exist is the same failure (PostgreSQL refuses the login: 28000, FATAL).
t.test('a PostgreSQL role that does not exist', { skip: postgresMissing }, async (t) => {
  await failsInOneLine(t, postgresUrl({ username: 'no_such_role' }), /^petstore: cannot connect to PostgreSQL .+: role "no_such_role" does not exist\n/)
})

t.test('a PostgreSQL database that does not exist (URL without a port: 5432)', { skip: postgresMissing }, async (t) => {
  await failsInOneLine(
    t,
    postgresUrl({ pathname: '/no_such_database', port: '' }),
    /^petstore: cannot connect to PostgreSQL [^ ]+:5432\/no_such_database: database "no_such_database" does not exist\n/,
  )
})

t.test('a postgres URL that cannot be parsed', async (t) => {
  // the URL is not echoed: it may hold a password
  await failsInOneLine(t, 'postgres://postgres:secret@127.0.0.1:99999/petstore', /^petstore: DATABASE_URL: not a valid postgres:\/\/ URL\n$/)
})

t.test('an unknown scheme', async (t) => {
  await failsInOneLine(t, 'redis://127.0.0.1/0', /^petstore: DATABASE_URL: unknown scheme "redis:"; use sqlite:PATH, sqlite::memory: or postgres:/)
})

t.test('a SQLite path that is a directory', async (t) => {
  const dir = tempDir(t)
  await failsInOneLine(t, `sqlite:${dir}`, new RegExp(`^petstore: cannot open SQLite ${dir}: it is a directory, not a file\\n$`))
})

t.test('a SQLite file in a place where no file can be created', async (t) => {
  // /proc: not even root may create files there (the tests may run as root, whom file modes do not stop)
  await failsInOneLine(
    t,
    'sqlite:/proc/petstore.db',
    /^petstore: cannot open SQLite \/proc\/petstore\.db: unable to open database file \(SQLITE_CANTOPEN\); the file and its folder must be writable\n$/,
  )
})

t.test('a SQLite path whose folder cannot be made: a file is in the way', async (t) => {
  const file = join(tempDir(t), 'notes.txt')
  writeFileSync(file, 'a file, not a folder\n')
  await failsInOneLine(t, `sqlite:${file}/pets.db`, /^petstore: cannot open SQLite .+notes\.txt\/pets\.db: .+notes\.txt is a file, not a folder\n$/)
})

t.test('a SQLite path whose folder cannot be made for another reason: the reason', async (t) => {
  const file = join(tempDir(t), 'x'.repeat(300), 'pets.db')
  await failsInOneLine(t, `sqlite:${file}`, /^petstore: cannot open SQLite .+\/pets\.db: ENAMETOOLONG: name too long, mkdir '.+'\n$/)
})

t.test('a SQLite path in a folder whose parent does not exist (a typo): reported, nothing made', async (t) => {
  const dir = tempDir(t)
  const file = join(dir, 'petstre', 'data', 'pets.db')
  await failsInOneLine(t, `sqlite:${file}`, new RegExp(`^petstore: cannot open SQLite ${file}: folder ${join(dir, 'petstre')} does not exist\\n$`))
  t.notOk(existsSync(join(dir, 'petstre')), 'no folder was made')
})

t.test("a SQLite file's own folder is made when missing, and the log names the file by its whole path", async (t) => {
  const dir = tempDir(t)
  const file = join(dir, 'data', 'pets.db')
  // given relative to the working folder (the project's), as ./data/petstore.db is by default
  const server = await startServer(t, { DATABASE_URL: `sqlite:${relative(projectRoot, file)}`, API_KEYS: testKey })
  t.ok(existsSync(file), 'data/ and the file were made')
  t.match(server.stdout(), `"storage":"SQLite ${file}","msg":"listening on ${server.url}"`)
  t.equal(server.stdout().match(/listening/gi)?.length, 1, 'one line says where it listens')
  server.child.kill('SIGTERM')
  t.equal((await server.exited).code, 0)
})

t.test('better-sqlite3 built for another Node.js: one line that says what to do', async (t) => {
  // Node's own message, as it loads the addon of a node_modules installed with Node 20 under Node 22
  const loadError = new Error(
    `The module '${join(projectRoot, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node')}'\n` +
      'was compiled against a different Node.js version using\nNODE_MODULE_VERSION 115. This version of Node.js requires\n' +
      'NODE_MODULE_VERSION 127. Please try re-compiling or re-installing\nthe module (for instance, using `npm rebuild` or `npm install`).',
  )
  t.equal(
    sqliteProblem(join(tmpdir(), 'any.db'), loadError),
    `better-sqlite3 was built for another Node.js (NODE_MODULE_VERSION 115; Node.js ${process.version} needs 127): run npm rebuild with the Node.js that runs the server`,
  )
  const file = join(tmpdir(), 'any.db')
  t.equal(sqliteProblem(file, new TypeError('something else')), `cannot open SQLite ${file}: something else`, 'anything else is said as it is')
})

t.test('a SQLite path to a file that is not a database', async (t) => {
  const file = join(tempDir(t), 'notes.txt')
  writeFileSync(file, 'not a database, but long enough to have a header that SQLite reads and refuses\n'.repeat(20))
  await failsInOneLine(t, `sqlite:${file}`, /^petstore: cannot open SQLite .+notes\.txt: file is not a database \(SQLITE_NOTADB\)\n$/)
})

function refusalOf(url: string): Error | undefined {
  try {
    parseDatabaseUrl(url)
  } catch (error) {
    return error as Error
  }
  return undefined
}

t.test('DATABASE_URL values that name no usable database are refused before anything is opened', async (t) => {
  // What the server reports as above, checked without a process each.
  const cases: [string, RegExp][] = [
    ['./data/petstore.db', /^DATABASE_URL: no scheme; use sqlite:PATH, sqlite::memory: or postgres:/],
    ['user:secret@db.example/petstore', /^DATABASE_URL: unknown scheme "user:"; use/],
    ['sqlite:', /^DATABASE_URL: sqlite: needs a file path/],
    ['postgresql://u:secret@[::1/x', /^DATABASE_URL: not a valid postgres:\/\/ URL$/],
  ]
  for (const [url, message] of cases) {
    const error = refusalOf(url)
    t.ok(error instanceof DatabaseConfigError, `${url}: a DatabaseConfigError, reported in one line`)
    t.match(error?.message, message)
    t.notMatch(error?.message, 'secret', 'no password is repeated')
  }
  t.strictSame(parseDatabaseUrl('postgresql://u@h/db'), { dialect: 'postgres', url: 'postgresql://u@h/db' })
  t.strictSame(parseDatabaseUrl('sqlite::memory:'), { dialect: 'sqlite', file: ':memory:' })
})
