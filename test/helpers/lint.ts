import { execFile } from 'node:child_process'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { projectRoot } from '../../src/core/paths.js'

/** A finding of Spectral (`--format json`): its rule, what it says, how grave, in which file. */
interface Finding {
  code: string
  message: string
  severity: number
  source: string
}

/** The petstore-contract rule of `npm run lint:owasp` (.spectral.yaml) alone, every other rule
 * off: the contract model's problems, in a fraction of the time the OWASP rules take. */
const contractRuleset = 'test/fixtures/contract-rule.spectral.yaml'

/** The errors of lint:owasp's petstore-contract rule in each of `files` (their messages), in one
 * run of Spectral: it takes seconds to start. */
export async function contractRuleErrors(files: readonly string[]): Promise<Map<string, string[]>> {
  const cli = join(projectRoot, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js')
  const args = [cli, 'lint', ...files, '--ruleset', contractRuleset, '--format', 'json', '--fail-severity', 'hint', '--quiet']
  // (a program of its own, not under the tests' loader and coverage, which NODE_OPTIONS brings;
  // a finding makes it exit 1, its report still on stdout)
  const { NODE_OPTIONS: _, ...env } = process.env
  const { stdout } = await promisify(execFile)(process.execPath, args, { cwd: projectRoot, env, timeout: 120_000 }).catch((error: { stdout: string }) => ({
    stdout: error.stdout,
  }))
  const errors = (JSON.parse(stdout) as Finding[]).filter(({ code, severity }) => code === 'petstore-contract' && severity === 0)
  return new Map(files.map((file) => [file, errors.filter(({ source }) => source === resolve(projectRoot, file)).map(({ message }) => message)]))
}
