/**
 * A command-line script called in the test's own process: its `main` (scripts/*.ts), given the
 * arguments and an environment of its own, its output gathered as the process would write it.
 * Cheaper than a real process, which starts Node and loads the whole program anew; one real process per
 * script (test/helpers/processes.ts's `run`) holds its wiring to the process.
 */
import { format } from 'node:util'
import type { Io, Main } from '../../src/core/command-io.js'

export interface MainRun {
  /** the exit status `main` resolved to */
  code: number
  stdout: string
  stderr: string
}

/** Runs `main` with `args`; `env` is all of its environment (the test's own is not added, nor
 * changed), and each line written is as the console writes it: a text as it is, an Error with its stack. */
export async function runMain(main: Main, args: string[] = [], env: Record<string, string> = {}): Promise<MainRun> {
  let stdout = ''
  let stderr = ''
  const io: Io = {
    env: { ...env },
    stdout: (line) => (stdout += `${format(line)}\n`),
    stderr: (line) => (stderr += `${format(line)}\n`),
  }
  const code = await main(args, io)
  return { code, stdout, stderr }
}
