/**
 * A copy of the project to change as the server team would, and its commands run in it: what
 * the walk-throughs of docs/changing-the-api.md are held to.
 */
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import type { Test } from 'tap'
import { specPathsIn } from '../../src/contract/load.js'
import { majorOfSpecFile } from '../../src/contract/version.js'
import { projectRoot } from '../../src/core/paths.js'
import { binOf, type Step, step } from './sdk.js'

export interface ProjectCopy {
  dir: string
  /** a file of the copy, as text */
  read(file: string): string
  write(file: string, text: string): void
  /** `file` with `text` put in just before `before`, or after `after` (each must be found once) */
  insert(file: string, text: string, place: { before: string } | { after: string }): void
  /** `npm run generate`, `npm run typecheck`, `npm run check:breaking`, in the copy */
  generate(): Promise<Step>
  typecheck(): Promise<Step>
  checkBreaking(): Promise<Step>
  /** `npm run lint:owasp` on the generated documents, failing on a warning too */
  lint(): Promise<Step>
  /** a TypeScript program run in the copy (under tsx), given as its text */
  run(program: string): Promise<Step>
  /** test files of the copy, run by tap without coverage */
  test(files: string[]): Promise<Step>
}

/** The project's files as git knows them (those of the working tree), in a folder of their own,
 * node_modules linked. */
export function projectCopy(t: Test): ProjectCopy {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-walk-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: projectRoot, encoding: 'utf8' })
  for (const file of files.split('\0').filter((file) => file !== '' && existsSync(join(projectRoot, file)))) {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    copyFileSync(join(projectRoot, file), join(dir, file))
  }
  symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'), 'dir')
  const read = (file: string) => readFileSync(join(dir, file), 'utf8')
  const write = (file: string, text: string) => {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    writeFileSync(join(dir, file), text)
  }
  const tsx = (args: string[]) => step(dir, [binOf('tsx'), ...args])
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
    generate: () => tsx(['scripts/generate.ts']),
    // (incremental: a walk type-checks after each of its steps, and its copy keeps what the check
    // before found of the files that did not change; the errors are the same)
    typecheck: () => step(dir, [binOf('typescript'), '--noEmit', '--incremental', '--tsBuildInfoFile', join(dir, '.typecheck.tsbuildinfo'), '-p', '.']),
    checkBreaking: () => tsx(['scripts/check-breaking.ts']),
    lint: () =>
      step(dir, [
        binOf('@stoplight/spectral-cli'),
        'lint',
        ...specPathsIn(dir).map((spec) => `generated/v${majorOfSpecFile(basename(spec))}/openapi.yaml`),
        '--ruleset',
        '.spectral.yaml',
        '--fail-severity',
        'warn',
      ]),
    run(program) {
      const file = `walk-${Math.random().toString(36).slice(2)}.ts`
      write(file, program)
      return tsx([file])
    },
    test: (files) => step(dir, [binOf('tap'), '--disable-coverage', '--reporter=tap', ...files]),
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
