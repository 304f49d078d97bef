import { resolve } from 'node:path'
import { projectRoot } from '../../src/core/paths.js'
import { binOf, step } from './sdk.js'

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
  // (a program of its own, run as plain node, not under the tests' loader and coverage; a finding
  // makes it exit 1, its report still on stdout)
  const { stdout } = await step(projectRoot, [
    binOf('@stoplight/spectral-cli'),
    'lint',
    ...files,
    '--ruleset',
    contractRuleset,
    '--format',
    'json',
    '--fail-severity',
    'hint',
    '--quiet',
  ])
  const errors = (JSON.parse(stdout) as Finding[]).filter(({ code, severity }) => code === 'petstore-contract' && severity === 0)
  return new Map(files.map((file) => [file, errors.filter(({ source }) => source === resolve(projectRoot, file)).map(({ message }) => message)]))
}
