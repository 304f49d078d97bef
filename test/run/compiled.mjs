/**
 * node --import=./test/run/compiled.mjs: a `.ts` file of the project, asked for by name (tap's
 * test file, a server or script a test starts), is loaded as its compiled twin in .build/
 * (test/run/compile.mjs made it; tap's `before` runs it). What those files import is already
 * compiled JavaScript beside them, found as usual: only the entry point is sent there.
 */
import { register } from 'node:module'
import { relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))
register(new URL('./compiled-hooks.mjs', import.meta.url))

// A script knows it is the program run (`process.argv[1] === import.meta.filename`): the
// program is its twin.
const [, main] = process.argv
if (main?.endsWith('.ts')) {
  const source = relative(root, resolve(main))
  if (!source.startsWith('..') && !source.startsWith(`.build${sep}`)) process.argv[1] = resolve(root, '.build', source.replace(/\.ts$/, '.js'))
}
