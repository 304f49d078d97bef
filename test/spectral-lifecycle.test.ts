/**
 * The lifecycle rules of .spectral.yaml (npm run lint:owasp, in CI): openapi.yaml passes them,
 * and each fails on a copy of it that breaks it.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { parse, stringify } from 'yaml'
import { projectRoot, specPath } from '../src/core/paths.js'

t.setTimeout(300_000)
t.jobs = 2

interface Finding {
  code: string
  message: string
  path: string[]
  severity: number
}

/** Spectral's errors (severity 0) of the lifecycle rules on `document`, run as CI runs it. */
async function lifecycleErrors(document: unknown): Promise<Finding[]> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-spectral-'))
  try {
    const file = join(dir, 'openapi.yaml')
    writeFileSync(file, stringify(document))
    const cli = join(projectRoot, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js')
    const { stdout } = await promisify(execFile)(process.execPath, [cli, 'lint', file, '--ruleset', '.spectral.yaml', '--format', 'json', '--fail-severity', 'hint', '--quiet'], {
      cwd: projectRoot,
      timeout: 120_000,
    }).catch((error: { stdout: string }) => ({ stdout: error.stdout }))
    return (JSON.parse(stdout) as Finding[]).filter((finding) => finding.code.startsWith('petstore-lifecycle') && finding.severity === 0)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const spec = () => parse(readFileSync(specPath, 'utf8'))
const getPet = (document: any) => document.paths['/pets/{petId}'].get

t.test('openapi.yaml keeps every lifecycle rule', async (t) => {
  t.strictSame(await lifecycleErrors(spec()), [])
})

const cases: [string, (document: any) => void, string, RegExp][] = [
  ['x-stability is one of the levels', (d) => (d.paths['/pets'].get['x-stability'] = 'alpha'), 'petstore-lifecycle-stability', /alpha/],
  ['a deprecated operation carries x-deprecated-at', (d) => delete getPet(d)['x-deprecated-at'], 'petstore-lifecycle-deprecated-at', /x-deprecated-at/],
  ['x-sunset is there', (d) => delete getPet(d)['x-sunset'], 'petstore-lifecycle-sunset-notice', /needs x-sunset/],
  ['x-sunset honours the stable notice (180 days)', (d) => (getPet(d)['x-sunset'] = '2027-05-19'), 'petstore-lifecycle-sunset-notice', /x-sunset 2027-05-19 is less than 180 days \(the stable notice period/],
  [
    'x-sunset honours the beta notice (30 days)',
    (d) => Object.assign(getPet(d), { 'x-stability': 'beta', 'x-sunset': '2026-12-20' }),
    'petstore-lifecycle-sunset-notice',
    /less than 30 days \(the beta notice period/,
  ],
  ['x-successor names an operation', (d) => (getPet(d)['x-successor'] = 'findPets'), 'petstore-lifecycle-successor', /x-successor findPets names no operation/],
  ['no x-successor needs a reason', (d) => delete getPet(d)['x-successor'], 'petstore-lifecycle-successor', /x-successor-reason/],
  ['the 410 is documented', (d) => delete getPet(d).responses['410'], 'petstore-lifecycle-documented', /documents its 410/],
  ['every response documents Deprecation, Sunset and Link', (d) => delete getPet(d).responses['200'].headers.Sunset, 'petstore-lifecycle-documented', /response 200 does not document Sunset/],
]

for (const [name, edit, rule, message] of cases) {
  t.test(`${rule}: ${name}`, async (t) => {
    const document = spec()
    edit(document)
    const errors = await lifecycleErrors(document)
    t.ok(errors.length > 0, 'fails')
    t.match(errors, [{ code: rule, message }])
  })
}

t.test('a documented reason stands for a successor', async (t) => {
  const document = spec()
  delete getPet(document)['x-successor']
  getPet(document)['x-successor-reason'] = 'listPets with a filter replaces it'
  t.strictSame(await lifecycleErrors(document), [])
})
