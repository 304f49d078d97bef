/**
 * npm's postinstall: builds tap with the plugins .taprc names (`tap build`), once, at install.
 *
 * tap builds its plugin set when a run finds it differs from .taprc's, but too late for that run's
 * own test processes: the first run after `npm ci` loaded the loaders .taprc turns off
 * (docs/development.md, "tap is built at install", has the figures). A production install
 * (`npm ci --omit=dev`) has no tap: nothing to build.
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
