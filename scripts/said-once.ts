/**
 * A change met in many places, said once: the comparison (scripts/comparison.ts) finds a change
 * of a shared schema at every place a client meets it, which the gate needs; a changelog reader
 * needs it once, with the places named. A renamed property is one change with what its new
 * value's schema changed (its type, format, bounds) and the old name no longer required.
 */
import type { Difference } from '../src/versions/coverage.js'

interface Said {
  wheres: string[]
  findings: { message: string; rule: string; pointer: string }[]
}

/** A place without its last field: `GET /pets, response 200 body` of `... body \`category\``,
 * `payload \`data\`` of `payload \`data.category\``. */
const outer = (where: string) =>
  where.replace(/ `([^`]*)`$/, (_, field: string) => (field.includes('.') ? ` \`${field.slice(0, field.lastIndexOf('.'))}\`` : ''))

const renamed = /^Property `([^`]+)`(?: of `[^`]+`)? was renamed to `([^`]+)`/

/** The differences, each change once: those of one rule and message at one place of the
 * document, wherever met, on one line naming where; a rename with what came with it at the same places. */
export function saidOnce(differences: readonly Pick<Difference, 'where' | 'message' | 'rule' | 'pointer'>[]): string[] {
  const byChange = new Map<string, Said>()
  for (const { where, message, rule, pointer } of differences) {
    // (one message, wherever met: an event's names the object it is in, `of \`data\``)
    const key = `${rule}\0${pointer}\0${message.replaceAll(/ of `[^`]+`/g, '')}`
    const said = byChange.get(key) ?? { wheres: [], findings: [{ message, rule, pointer }] }
    if (!said.wheres.includes(where)) said.wheres.push(where)
    byChange.set(key, said)
  }
  const all = [...byChange.values()]
  const merged = new Set<Said>()
  for (const rename of all) {
    const names = renamed.exec(rename.findings[0]!.message)?.slice(1)
    if (names === undefined) continue
    const places = new Set([...rename.wheres, ...rename.wheres.map(outer)])
    for (const other of all) {
      const { message } = other.findings[0]!
      if (other === rename || merged.has(other) || !other.wheres.every((where) => places.has(where))) continue
      if (!names.some((name) => message.includes(`\`${name}\``))) continue
      rename.findings.push(...other.findings)
      merged.add(other)
    }
  }
  return all
    .filter((said) => !merged.has(said))
    .map(({ wheres, findings }) => {
      const messages = findings.map(({ message }) => message.replace(/\.$/, '')).join('; ')
      const rules = [...new Set(findings.map(({ rule, pointer }) => `${rule} at ${pointer}`))].join(', ')
      return `${wheres.join('; ')}: ${messages}. (${rules})`
    })
}
