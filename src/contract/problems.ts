import { OperatorError } from '../core/errors.js'

/** What a problem is about. The server, the breaking-change gate and the lint refuse a document
 * for a problem of any rule. */
export type Rule = 'lifecycle' | 'version' | 'roles' | 'service' | 'shape' | 'overlay'

/** What is wrong with a contract: one problem, where it is and why, in the words that the
 * server, the breaking-change gate and the lint all print. */
export interface Problem {
  rule: Rule
  /** the keys of its place in the document: `['paths', '/pets', 'get', 'x-stability']` */
  path: readonly (string | number)[]
  /** that place for people: `operation listPets`, `event pet.created`, `servers` */
  where: string
  message: string
}

/** A document the server refuses to serve, with every problem found in it. */
export class ContractError extends OperatorError {
  constructor(
    /** the file, as its problems are reported: `openapi.yaml` */
    readonly file: string,
    readonly problems: readonly Problem[],
  ) {
    super(problems.map((problem) => `${file}: ${describe(problem)}`).join('\n'))
  }
}

/** A problem as one line: where, then why. */
export const describe = ({ where, message }: Problem) => `${where}: ${message}`

/** Collects problems found under one place. */
export class Problems {
  readonly found: Problem[] = []
  add(rule: Rule, path: readonly (string | number)[], where: string, message: string): void {
    this.found.push({ rule, path, where, message })
  }
}
