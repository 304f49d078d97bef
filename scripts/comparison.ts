/**
 * The comparison of two contracts that the breaking-change gate holds the version changes to and
 * that every changelog entry lists (one engine for both; docs/compatibility.md).
 *
 * It is redocly diff (its diff-recommended rules, contract/redocly-diff.yaml) of the two documents
 * with every `$ref` of their operations and events written out in place. Redocly reports a change
 * of a shared component once, at the first place it meets it; written out, a change of `Pet` is
 * reported at every place a client meets it: each operation, its request body, its answer of each
 * status, each parameter, each event's payload (events as `webhooks`, which redocly judges as
 * what clients receive). Each finding's pointer is then put back where it is written
 * (`#/components/schemas/Pet/properties/category`), as the reviewed exceptions and the version
 * changes name it. A 4xx answer that an operation of the older document gains is a refusal, rated
 * breaking: a request that version took may now be refused.
 */
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { keysOf, pointerTo, resolvePointer } from '../src/contract/pointer.js'
import { projectRoot } from '../src/core/paths.js'

const diffConfig = join(projectRoot, 'contract', 'redocly-diff.yaml')

/** One finding of `redocly diff --format json` (its report version 1). */
export interface Verdict {
  ruleId: string
  impact: Impact
  message: string
  location: { pointer: string }
}
export interface Change {
  path: string
  kind: string
  impact: Impact
  verdicts: Verdict[]
}
export type Impact = 'major' | 'minor' | 'patch'

type Node = Record<string, unknown>
const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null
const refOf = (node: unknown) => (isNode(node) && typeof node.$ref === 'string' ? node.$ref : undefined)

/** "GET /pets" for a change inside an operation, "event pet.created" inside an event, else the
 * top-level part ("servers", "info"). */
export function whereOf(pointer: string): string {
  const [section, path, method] = keysOf(pointer)
  if (section === 'webhooks' && path !== undefined) return `event ${path}`
  if (section !== 'paths') return section!
  return method === undefined ? path! : `${method.toUpperCase()} ${path}`
}

/** Where redocly's reports are kept, named by what made them (see `diff`). */
const reportCache = join(projectRoot, 'node_modules', '.cache', 'petstore', 'redocly-diff')
const cliPackage = createRequire(import.meta.url).resolve('@redocly/cli/package.json')

/** The file redocly's report from `base` to `revision` is kept in: a hash of both documents, the
 * rules and redocly's version. */
export function keptReport(base: string, revision: string): string {
  const hash = createHash('sha256')
  for (const file of [cliPackage, diffConfig, base, revision]) hash.update(readFileSync(file)).update('\0')
  return join(reportCache, `${hash.digest('hex')}.json`)
}

/**
 * The changes redocly diff finds from the document in file `base` to the one in `revision`, every
 * one rated. Both are whole documents (bundled, every `$ref` local), so their text, the rules and
 * redocly's version are all a report depends on: a report is kept under their hash and read back
 * for the same inputs. The gate, the changelog and `npm run generate` compare the same pairs again
 * and again (every release, every generate of an unchanged contract, the tests), and each
 * comparison is a redocly process of half a second or more.
 */
export async function diff(base: string, revision: string): Promise<Change[]> {
  const kept = keptReport(base, revision)
  if (existsSync(kept)) return (JSON.parse(readFileSync(kept, 'utf8')) as { changes: Change[] }).changes
  const cli = join(dirname(cliPackage), 'bin', 'cli.js')
  const dir = mkdtempSync(join(tmpdir(), 'petstore-diff-'))
  try {
    const report = join(dir, 'diff.json')
    // (a program of its own: this process's NODE_OPTIONS, a loader or a test runner's hooks, are not for it)
    const { NODE_OPTIONS: _, ...env } = process.env
    // --fail-on none: the verdict is ours, from the report; an exit status other than 0 is
    // redocly failing to read a document
    await promisify(execFile)(
      process.execPath,
      [cli, 'diff', base, revision, '--format=json', '--fail-on=none', `--config=${diffConfig}`, `--output=${report}`],
      {
        cwd: projectRoot,
        env: { ...env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' },
        timeout: 60_000,
      },
    )
    // (what a Change holds: the report also names the files compared, which another pair of the
    // same documents would not share)
    const changes = (JSON.parse(readFileSync(report, 'utf8')) as { changes: Change[] }).changes.map(({ path, kind, impact, verdicts }) => ({
      path,
      kind,
      impact,
      verdicts: verdicts.map(({ ruleId, impact, message, location }) => ({ ruleId, impact, message, location: { pointer: location.pointer } })),
    }))
    // (whole or not at all: runs side by side may keep the same report at once)
    mkdirSync(reportCache, { recursive: true })
    const written = `${kept}.${process.pid}.${randomBytes(4).toString('hex')}`
    writeFileSync(written, JSON.stringify({ changes }))
    renameSync(written, kept)
    return changes
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** `node` with every local `$ref` in it written out; a `$ref` inside what it names (a recursive
 * schema) stays a `$ref`, which the kept components resolve. */
function writtenOut(document: unknown, node: unknown, within: readonly string[] = []): unknown {
  if (Array.isArray(node)) return node.map((item) => writtenOut(document, item, within))
  if (!isNode(node)) return node
  const ref = refOf(node)
  if (ref !== undefined && !within.includes(ref)) return writtenOut(document, resolvePointer(document, ref), [...within, ref])
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, writtenOut(document, value, within)]))
}

/** A document whose operations and events hold every part they use in place. */
export const inPlace = (document: Node): Node => ({
  ...document,
  paths: writtenOut(document, document.paths),
  webhooks: writtenOut(document, document.webhooks),
})

/**
 * Where the place at `pointer` (of the document as written out) is written in `document`: every
 * `$ref` on the way followed, so `#/paths/~1pets/get/responses/200/.../properties/category` is
 * `#/components/schemas/Pet/properties/category`. Undefined where `document` has no such place.
 */
export function writtenAt(document: unknown, pointer: string): string | undefined {
  let node = document
  let at: string[] = []
  for (const key of keysOf(pointer)) {
    // (a cycle of $refs is not a document anyone could serve: ten hops end it)
    for (let hops = 0; refOf(node) !== undefined && hops < 10; hops++) {
      at = keysOf(refOf(node)!)
      node = resolvePointer(document, refOf(node)!)
    }
    if (!isNode(node) || !(key in node)) return undefined
    node = node[key]
    at = [...at, key]
  }
  return pointerTo(at)
}

/** Where `pointer` is written in the first of `documents` that has its place; as it is where none does. */
export const writtenIn = (documents: readonly unknown[], pointer: string): string =>
  documents.map((document) => writtenAt(document, pointer)).find((found) => found !== undefined) ?? pointer

/** The sections of `components` that the written-out operations and events hold in place: a
 * change there is reported where it is used. */
const inlinedSections = new Set(['schemas', 'parameters', 'responses', 'headers', 'requestBodies', 'examples', 'links', 'callbacks', 'pathItems'])

/** The status of a 4xx answer added to an operation (redocly reports a new operation as one
 * addition, never its answers one by one), or undefined. */
function refusal(change: Change): string | undefined {
  const [section, , , responses, status, ...deeper] = keysOf(change.path)
  return change.kind === 'added' && section === 'paths' && responses === 'responses' && /^4\d\d$/.test(String(status)) && deeper.length === 0
    ? status
    : undefined
}

/**
 * Every change from `older` to `newer` (two documents as served), rated as redocly rates it, at
 * every place a client meets it, each verdict's pointer where it is written (in `newer`, or in
 * `older` for what `newer` no longer has); a 4xx added to an operation `older` has is rated major
 * (rule `response-added`): a request `older` took may be refused.
 */
export async function compareDocuments(older: Node, newer: Node): Promise<Change[]> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-compare-'))
  try {
    // (as JSON, which redocly reads as it reads YAML: the documents written out are large, and
    // JSON is written and read a hundred times faster)
    const [before, after] = [join(dir, 'older.json'), join(dir, 'newer.json')]
    writeFileSync(before, JSON.stringify(inPlace(older)))
    writeFileSync(after, JSON.stringify(inPlace(newer)))
    const changes: Change[] = []
    for (const change of await diff(before, after)) {
      const [section, kind] = keysOf(change.path)
      if (section === 'components' && inlinedSections.has(kind!)) continue
      const refused = refusal(change)
      if (refused !== undefined) {
        const message = `Response ${refused} was added: a request version ${String((older.info as Node | undefined)?.version)} took may be refused.`
        changes.push({ ...change, impact: 'major', verdicts: [{ ruleId: 'response-added', impact: 'major', message, location: { pointer: change.path } }] })
        continue
      }
      const verdicts = change.verdicts.map((verdict) => {
        const pointer = verdict.location.pointer
        return { ...verdict, location: { pointer: writtenIn([newer, older], pointer) } }
      })
      changes.push({ ...change, verdicts })
    }
    return changes
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The place of `path` inside its operation or event, for people: `parameter \`id\` (query)`,
 * `request body \`name\``, `response 201 body \`category\``, `response 201 header Location`,
 * `payload \`data.category\``; undefined for the operation or event itself. `document` names the
 * parameters (the newer document, or the older for a parameter it removed). */
export function partOf(path: string, ...documents: readonly unknown[]): string | undefined {
  const keys = keysOf(path)
  if (keys[0] !== 'paths' && keys[0] !== 'webhooks') return undefined
  const rest = keys.slice(3)
  const fields = (from: string[]) => {
    const names: string[] = []
    for (const [i, key] of from.entries()) if (from[i - 1] === 'properties') names.push(key)
    return names.length === 0 ? '' : ` \`${names.join('.')}\``
  }
  const inBody = (from: string[]) => fields(from.slice(from.indexOf('schema') + 1))
  if (rest[0] === 'parameters' && rest[1] !== undefined) {
    const parameter = documents.map((document) => parameterAt(document, keys.slice(0, 5))).find((found) => found !== undefined)
    return parameter === undefined ? `parameter ${rest[1]}` : `parameter \`${parameter.name}\` (${parameter.in})`
  }
  if (rest[0] === 'requestBody') return `${keys[0] === 'webhooks' ? 'payload' : 'request body'}${inBody(rest)}`
  if (rest[0] === 'responses' && rest[1] !== undefined) {
    if (rest[2] === 'headers' && rest[3] !== undefined) return `response ${rest[1]} header ${rest[3]}`
    return `response ${rest[1]}${rest[2] === 'content' ? ` body${inBody(rest)}` : ''}`
  }
  return rest.length === 0 ? undefined : rest.join('/')
}

/** The parameter at `keys` (`paths`, path, method, `parameters`, index), its `$ref` followed. */
function parameterAt(document: unknown, keys: readonly string[]): { name: string; in: string } | undefined {
  let node = resolvePointer(document, pointerTo(keys))
  for (let hops = 0; refOf(node) !== undefined && hops < 10; hops++) node = resolvePointer(document, refOf(node)!)
  return isNode(node) && typeof node.name === 'string' ? { name: node.name, in: String(node.in) } : undefined
}

/** `POST /pets, response 201 body`: where a change is, its place in its operation named. */
export function placeOf(path: string, ...documents: readonly unknown[]): string {
  const part = partOf(path, ...documents)
  return part === undefined ? whereOf(path) : `${whereOf(path)}, ${part}`
}
