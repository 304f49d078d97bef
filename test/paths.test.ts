import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { findProjectRoot, projectRoot, specPath } from '../src/core/paths.js'

t.test('the project root is the folder with package.json and openapi.yaml', async (t) => {
  t.ok(existsSync(join(projectRoot, 'package.json')))
  t.ok(existsSync(specPath))
  t.equal(findProjectRoot(join(projectRoot, 'src', 'contract')), projectRoot)
})

t.test('a folder with no package.json above it is an error, not an endless search', async (t) => {
  t.throws(() => findProjectRoot(join(tmpdir(), 'no-such-project')), /no package.json at or above/)
})
