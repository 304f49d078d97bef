/**
 * Uniqueness rules, which a schema cannot say: `x-unique` on a schema of `components.schemas`
 * names the differences that do not make two values two (`CategoryName`: names that differ only
 * in case, accents... are one name, a `409`), each with the release it holds from:
 *
 *   x-unique:
 *     case: 2.0.0
 *     accents: 2.1.0
 *
 * The words are a closed list, each with what it means for a client (the changelog says it so)
 * and two values it makes one (the server's comparison is tested against them).
 */
import type { OpenAPIV3 } from 'openapi-types'
import type { Problems } from './problems.js'
import { parseVersion, type Version } from './version.js'

/** The differences a uniqueness rule may ignore: what each means, and two values it makes one. */
export const ignorable = {
  case: { words: 'upper and lower case (`Bird` and `BIRD`)', same: ['Bird', 'BIRD'] },
  'case-folding': { words: 'case folded fully (`ß` and `ss`: `Straße` and `STRASSE`)', same: ['Straße', 'STRASSE'] },
  accents: { words: 'accents written composed or decomposed (`é` and `e` with U+0301)', same: ['Café', 'Cafe\u0301'] },
  'compatibility-forms': { words: 'compatibility forms (full-width letters, ligatures: `ＣＡＦＥ` and `CAFE`)', same: ['ＣＡＦＥ', 'CAFE'] },
  'invisible-characters': {
    words: 'characters that draw nothing (zero-width characters, bidi controls, variation selectors)',
    same: ['Bird', 'Bi\u200Brd'],
  },
  'white-space': { words: 'runs of white space (two spaces and one)', same: ['Bird house', 'Bird  house'] },
  'look-alikes': {
    words:
      "characters that look alike, of any script (Unicode's confusables, UTS #39: Cyrillic `а` and Latin `a`, `‐` and `-`, `rn` and `m`), a blank and a space (U+2800 and ` `), and a mark the letter shows already (`i` with U+0307 and `i`)",
    same: ['Cats', 'C\u0430ts'],
  },
} as const

export type Ignorable = keyof typeof ignorable

/** One difference a unique schema's values are compared without, from the release `since`. */
export interface Ignored {
  difference: Ignorable
  since: Version
}

/** The uniqueness rules of a document, by schema name: the differences each ignores. */
export type Uniqueness = ReadonlyMap<string, readonly Ignored[]>

const isIgnorable = (word: string): word is Ignorable => Object.hasOwn(ignorable, word)

/** The `x-unique` of each schema of `document`, every problem of one added to `problems`. */
export function readUniqueness(document: OpenAPIV3.Document, problems: Problems): Uniqueness {
  const rules = new Map<string, Ignored[]>()
  for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) {
    const rule = (schema as { 'x-unique'?: unknown })['x-unique']
    if (rule === undefined) continue
    const at = ['components', 'schemas', name, 'x-unique']
    const where = `schema ${name}`
    if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) {
      problems.add('shape', at, where, 'x-unique maps each difference its values are compared without to the release it holds from (case: 2.0.0)')
      continue
    }
    const ignored: Ignored[] = []
    for (const [difference, since] of Object.entries(rule)) {
      const version = parseVersion(since)
      if (!isIgnorable(difference))
        problems.add('shape', [...at, difference], where, `x-unique names ${difference}, which is none of ${Object.keys(ignorable).join(', ')}`)
      else if (version === undefined)
        problems.add(
          'shape',
          [...at, difference],
          where,
          `x-unique: ${difference} holds from ${JSON.stringify(since)}, which is not a release MAJOR.MINOR.PATCH`,
        )
      else ignored.push({ difference, since: version })
    }
    rules.set(name, ignored)
  }
  return rules
}
