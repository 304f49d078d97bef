import { caseFold } from 'unicode-case-folding'

/**
 * When two names are one: what a unique name (a category's) is compared by. Two names that a
 * person cannot tell apart on screen must not be two entries of a catalogue, so the key of a
 * name is what is left of it once its look-alike spellings are made one:
 * - characters that draw nothing (Unicode's Default_Ignorable_Code_Point: zero-width space and
 *   joiners, bidi controls, BOM, soft hyphen, variation selectors...) are dropped;
 * - compatibility forms are made one with what they stand for (NFKC: full-width `ＣＡＦÉ`,
 *   ligatures, superscripts), and composed and decomposed accents are made one (`é` and
 *   `e` + U+0301);
 * - case is folded fully (Unicode's CaseFolding.txt, statuses C and F: `ß` and `ẞ` are `ss`,
 *   `ﬁ` is `fi`, final `ς` is `σ`), which `toLowerCase` does not do (`STRASSE` and `Straße`
 *   are one name); Turkic dotted and dotless i are not folded together (status T), as Unicode's
 *   default folding does not;
 * - runs of white space are one space, and none is kept at either end.
 * Folding and NFKC are applied as Unicode's compatibility caseless match (D145) applies them,
 * twice each: one pass of either can make what the other then changes (NFKC makes `ſt` of `ﬅ`,
 * whose fold is `st`).
 * Letters of different scripts that look alike (Latin `a`, Cyrillic `а`) stay different names.
 */
export function nameKey(name: string): string {
  const visible = name.replace(defaultIgnorable, '')
  const folded = nfkc(caseFold(nfkc(caseFold(visible.normalize('NFD')))))
  return folded.replace(whiteSpace, ' ').replace(endSpaces, '')
}

const nfkc = (text: string) => text.normalize('NFKC')
const defaultIgnorable = /\p{Default_Ignorable_Code_Point}/gu
const whiteSpace = /\p{White_Space}+/gu
const endSpaces = /^ | $/g
