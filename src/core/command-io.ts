/**
 * What a command-line script (scripts/) takes from its process: the environment it reads its
 * settings from, and its two output streams. Each script's `main(args, io)` is given them, and
 * resolves to its exit status: run from the shell, with the process's own (`processIo`); called
 * by a test, in its process, with an environment of its own and outputs it reads back.
 */
import { existsSync, realpathSync } from 'node:fs'

/** Writes one line, as console.log writes its one argument: a text as it is, an Error with its
 * stack; the line break is the writer's. */
export type LineWriter = (line: string | Error) => void

export interface Io {
  /** the settings (DATABASE_URL...), where a command run from the shell reads process.env */
  env: NodeJS.ProcessEnv
  stdout: LineWriter
  stderr: LineWriter
}

/** A script's command line: its arguments (those after the script's name) in, its exit status out. */
export type Main = (args: string[], io: Io) => Promise<number>

/** The process's own: process.env, and the console's streams (console.log and console.error,
 * which colour an Error's stack on a terminal and let a closed pipe end nothing). */
export const processIo: Io = {
  env: process.env,
  stdout: (line) => console.log(line),
  stderr: (line) => console.error(line),
}

/**
 * Whether the module at `filename` (its `import.meta.filename`) is the one the process was
 * started with, `entry` (process.argv[1]): the script was run, not imported. Node names the
 * module by its real path and the entry as given, so a path through a symbolic link to the
 * project is followed first.
 */
export function isEntry(filename: string, entry: string | undefined = process.argv[1]): boolean {
  return entry !== undefined && existsSync(entry) && realpathSync(entry) === filename
}
