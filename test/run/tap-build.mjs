/**
 * npm's postinstall: builds tap with the plugins .taprc names (`tap build`), once, at install.
 *
 * tap builds its plugin set when a run finds it differs from .taprc's, but the run that finds it
 * has already chosen its test processes' loaders from the set installed: the first run after
 * `npm ci` (CI's every run) loaded tap's TypeScript and mock loaders into every test file and
 * every server or script a test starts, the ones .taprc turns off. One file, test/auth.test.ts,
 * took 20.6 s on that first run and 9.3 s on the next (`npx tap --disable-coverage
 * test/auth.test.ts` twice in a fresh clone). A production install (`npm ci --omit=dev`) has no
 * tap: nothing to build.
 */
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

const require = createRequire(import.meta.url)
let tapPackage
try {
  tapPackage = require.resolve('tap/package.json')
} catch {
  process.exit(0)
}
const { bin } = require(tapPackage)
const built = spawnSync(process.execPath, [join(dirname(tapPackage), bin.tap), 'build'], { stdio: 'inherit' })
process.exit(built.status ?? 1)
