import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { projectRoot } from '../../src/core/paths.js'

/** A finding of Spectral: its rule, what it says, and where. */
export interface Finding {
  code: string
  message: string
  path: string[]
  severity: number
}

/** Every finding of `npm run lint:owasp` on `file`, warnings and hints included, as CI runs it. */
export async function owaspFindings(file: string): Promise<Finding[]> {
  const cli = join(projectRoot, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js')
  const args = [cli, 'lint', file, '--ruleset', '.spectral.yaml', '--format', 'json', '--fail-severity', 'hint', '--quiet']
  // (a finding makes it exit 1: its report is still on stdout)
  const { stdout } = await promisify(execFile)(process.execPath, args, { cwd: projectRoot, timeout: 120_000 }).catch((error: { stdout: string }) => ({
    stdout: error.stdout,
  }))
  return JSON.parse(stdout) as Finding[]
}
