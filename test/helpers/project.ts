/**
 * A copy of the project to change as the server team would, and its commands run in it: what
 * the walk-throughs of docs/changing-the-api.md are held to.
 */
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { Test } from 'tap'
import { projectRoot } from '../../src/core/paths.js'
import type { Check } from './checks.js'
import { binOf, type Step, step } from './sdk.js'

export interface ProjectCopy {
  dir: string
  /** a file of the copy, as text */
  read(file: string): string
  write(file: string, text: string): void
  /** `file` with `text` put in just before `before`, or after `after` (each must be found once) */
  insert(file: string, text: string, place: { before: string } | { after: string }): void
  /** the copy put back as it was made (what git ignores kept: the compiled .build/, the
   * typecheck's build info), for the next walk */
  reset(): void
  /** `npm run generate`, `npm run typecheck`, `npm run check:breaking`, in the copy */
  generate(): Promise<Step>
  typecheck(): Promise<Step>
  checkBreaking(): Promise<Step>
  /** npm run new-major in the copy */
  newMajor(): Promise<Step>
  /** `npm run lint:owasp` on the generated documents, failing on a warning too */
  lint(): Promise<Step>
  /** a TypeScript program run in the copy, given as its text: a module of test/ (it imports
   * `../src/app.js`, `./helpers/app.js`), compiled with the copy */
  run(program: string): Promise<Step>
  /** a program run as `run` does (or a program of the project's, `{ file }`: test/walks/), whose
   * `t` is test/helpers/checks.ts's `checker()`: each check it made, asserted in `t` as one (the
   * failures with what differed); those checks */
  checks(t: Test, what: string, program: string | { file: string }): Promise<Check[]>
}

/** `dir` made a git repository of its own, its files committed as they are; resolves to what
 * puts them back so (what a walk changed or added undone; what git ignores, such as compiled
 * code and build info, kept). */
export function keptAsMade(dir: string): () => void {
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=walk', '-c', 'user.email=walk@localhost', '-c', 'core.hooksPath=/dev/null', ...args], { cwd: dir, stdio: 'pipe' })
  git('init', '-q')
  git('add', '-A')
  git('commit', '-q', '--no-gpg-sign', '-m', 'the project, as the walks start from it')
  return () => {
    git('checkout', '-q', '--', '.')
    git('clean', '-fdq')
  }
}

/**
 * The project's files as git knows them (those of the working tree), in a folder of their own,
 * node_modules linked: one copy for the walks of a test file, each walk made in it in turn from
 * the copy as it was made (`reset()` before each: the walks of the file run one at a time).
 * The copy is a git repository of its own (one commit), so that a reset puts back only what a
 * walk changed and keeps what git ignores, the work of the walks before: the JavaScript compiled
 * from the copy (.build/, test/run/compile.mjs), which the copy's scripts and programs run as,
 * and the typecheck's build info (`--incremental`: a check re-checks what changed since the one
 * before, in this walk or the last).
 */
export function projectCopy(t: Test): ProjectCopy {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-walk-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: projectRoot, encoding: 'utf8' })
  for (const file of files.split('\0').filter((file) => file !== '' && existsSync(join(projectRoot, file)))) {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    copyFileSync(join(projectRoot, file), join(dir, file))
  }
  symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'), 'dir')
  const putBack = keptAsMade(dir)
  // (compiled again before a compiled script or program runs, when a TypeScript file changed)
  let changes = 1
  let compiledAt = 0
  const read = (file: string) => readFileSync(join(dir, file), 'utf8')
  const write = (file: string, text: string) => {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    writeFileSync(join(dir, file), text)
    if (file.endsWith('.ts')) changes++
  }
  /** a script or program of the copy, compiled, run as the tests run theirs (.taprc) */
  const compiled = async (args: string[]): Promise<Step> => {
    if (compiledAt !== changes) {
      const compile = await step(dir, [join(dir, 'test', 'run', 'compile.mjs')])
      if (compile.code !== 0) return compile
      compiledAt = changes
    }
    return step(dir, ['--import=./test/run/compiled.mjs', '--enable-source-maps', ...args])
  }
  const run = async (program: string) => {
    const file = `test/walk-${Math.random().toString(36).slice(2)}.ts`
    write(file, program)
    try {
      return await compiled([file])
    } finally {
      // (not left for the typecheck: a program is no part of the project)
      rmSync(join(dir, file))
      changes++
    }
  }
  return {
    dir,
    read,
    write,
    insert(file, text, place) {
      const source = read(file)
      const anchor = 'before' in place ? place.before : place.after
      const at = source.indexOf(anchor)
      if (at === -1 || source.indexOf(anchor, at + 1) !== -1) throw new Error(`${file}: ${JSON.stringify(anchor)} is not there once`)
      const cut = 'before' in place ? at : at + anchor.length
      write(file, source.slice(0, cut) + text + source.slice(cut))
    },
    reset() {
      putBack()
      changes++
    },
    async generate() {
      const generated = await compiled(['scripts/generate.ts'])
      // (generated/ holds TypeScript: the types of each version)
      changes++
      return generated
    },
    // (incremental: a walk type-checks after each of its steps, and its copy keeps what the check
    // before found of the files that did not change; the errors are the same)
    typecheck: () => step(dir, [binOf('typescript'), '--noEmit', '--incremental', '--tsBuildInfoFile', join(dir, '.typecheck.tsbuildinfo'), '-p', '.']),
    checkBreaking: () => compiled(['scripts/check-breaking.ts']),
    newMajor: () => compiled(['scripts/new-major.ts']),
    lint: () =>
      step(dir, [
        binOf('@stoplight/spectral-cli'),
        'lint',
        ...readdirSync(join(dir, 'generated'))
          .filter((folder) => /^v[0-9]+$/.test(folder))
          .map((folder) => `generated/${folder}/openapi.yaml`),
        '--ruleset',
        '.spectral.yaml',
        '--fail-severity',
        'warn',
      ]),
    run,
    async checks(t, what, program) {
      const { code, stdout, output } = await (typeof program === 'string' ? run(program) : compiled([program.file]))
      t.equal(code, 0, what, { output: output.slice(-4000) })
      const checks = JSON.parse(stdout.trim().split('\n').at(-1) ?? '[]') as Check[]
      t.ok(checks.length > 0, `${what}: its checks`)
      for (const { name, ok, diff } of checks) t.ok(ok, `${what}: ${name}`, diff === undefined ? {} : { diff })
      return checks
    },
  }
}

/** The code blocks of a page of docs/ whose info string names `id` (```yaml field-property),
 * each as written, its first line's indent taken off every line. */
export function docBlock(page: string, id: string): string {
  const text = readFileSync(join(projectRoot, 'docs', page), 'utf8')
  const found = [...text.matchAll(/^( *)```\w+ ([\w-]+)\n([\s\S]*?)\n *```$/gm)].filter(([, , name]) => name === id)
  if (found.length !== 1) throw new Error(`docs/${page} has ${found.length} code blocks named ${id}`)
  const [, indent, , body] = found[0]!
  return `${body!
    .split('\n')
    .map((line) => line.slice(indent!.length))
    .join('\n')}\n`
}

/** `text` with each of its lines indented by `spaces` more. */
export const indented = (text: string, spaces: number) =>
  text
    .split('\n')
    .map((line) => (line === '' ? line : `${' '.repeat(spaces)}${line}`))
    .join('\n')
