/**
 * The server team's walk-through (docs/changing-the-api.md), held to what it says: the
 * property its step 1 adds to NewPet and Pet, on a copy of openapi.yaml, passes `npm run
 * lint:owasp` without a finding, and `npm run check:breaking` takes it as a compatible change.
 * (test/columns.test.ts walks the typecheck; test/schema-check.test.ts what a start says.)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { parse, stringify } from 'yaml'
import { checkBreaking } from '../scripts/check-breaking.js'
import { loadContract, newestSpecPath } from '../src/contract/load.js'
import { projectRoot } from '../src/core/paths.js'
import { owaspFindings } from './helpers/lint.js'

t.setTimeout(300_000)

/** The YAML of step 1: the new property, by its name. */
function stepOne(): Record<string, object> {
  const walk = readFileSync(join(projectRoot, 'docs', 'changing-the-api.md'), 'utf8')
  return parse(/```yaml\n([\s\S]*?)\n\s*```/.exec(walk)![1]!) as Record<string, object>
}

t.test("the walk-through's new field: lint:owasp finds nothing in it, check:breaking takes it", async (t) => {
  const added = stepOne()
  t.strictSame(Object.keys(added), ['tag'], 'the field step 1 adds')
  // (the newest version's document, where the team works)
  const spec = structuredClone(loadContract(newestSpecPath).document) as any
  for (const schema of ['NewPet', 'Pet']) Object.assign(spec.components.schemas[schema].properties, added)
  const dir = mkdtempSync(join(tmpdir(), 'petstore-readme-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'openapi-v2.yaml')
  writeFileSync(file, stringify(spec))
  t.strictSame(await owaspFindings(file), [], 'no error, no warning')
  const gate = await checkBreaking({ spec: file })
  t.ok(gate.ok, gate.lines.join('\n'))
})
