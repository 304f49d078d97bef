import { caseFold } from 'unicode-case-folding'
import { skeleton } from './confusables.js'

/**
 * When two names are one: the first step of what a unique name (a category's) is compared by,
 * and the whole of it until migration 0016 (0012 compares by it; lookAlikeKey below is the key
 * now). Two names that a person cannot tell apart on screen must not be two entries of a
 * catalogue, so the key of a name is what is left of it once its look-alike spellings are made
 * one:
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
 * Letters of different scripts that look alike (Latin `a`, Cyrillic `а`) stay different here:
 * lookAlikeKey makes them one. (A migration compares by the function of its day: a change of
 * either key is a new function, and a new migration that computes the stored keys anew.)
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

/**
 * The key category names are unique by (migration 0016 on): two names a reader may take for one
 * another share it. nameKey's, and besides:
 * - characters that show as a blank and are not white space count as the space they look like:
 *   U+2800 braille pattern blank (the space of braille text), U+1D159 musical symbol null
 *   notehead;
 * - the confusable skeleton of Unicode Technical Standard #39 (confusables.ts): look-alikes of
 *   any script are one (`Cаts` with a Cyrillic `а` is `Cats`; `‐` U+2010, `‑` U+2011 and `−`
 *   U+2212 are `-`; `’` U+2019 and `ʼ` U+02BC are `'`; `ɑ` is `a`, `rn` is `m`), made nameKey's
 *   again, until neither changes it: a prototype may be a capital (Cherokee `Ꮋ` folds to itself,
 *   whose prototype `H` folds to `h`) or a compatibility form (`%` is `º/₀`, which NFKC makes
 *   `o/0`, whose `0` is `O`);
 * - the marks UTS #39 (section 5.4) warns of are folded, not refused, so that such a name is the
 *   name it looks like: a dot above that the letter under it shows already (`i` + U+0307 is `i`),
 *   and a nonspacing mark repeated on one letter (`e` + U+0301 + U+0301 is `é`).
 * The key is for comparing, never for showing: it is in NFD and mixes scripts.
 */
export function lookAlikeKey(name: string): string {
  let key = nameKey(name.replace(blanks, ' '))
  // (three passes leave every character of the data as it is: test/names.test.ts)
  for (let pass = 0; pass < 4; pass++) {
    const next = nameKey(skeleton(key))
    if (next === key) break
    key = next
  }
  return withoutHiddenMarks(key.normalize('NFD'))
}

const blanks = /[\u2800\u{1D159}]/gu
const dotAbove = '\u0307'
const softDotted = /^\p{Soft_Dotted}$/u
/** whether canonical ordering puts a mark before U+0307: its combining class is neither 0 (a
 * letter, or a mark that starts a stack of its own) nor 230 (above, as the dot is), so it sits
 * below or through the letter and leaves the place above it to the dot */
const underTheDot = (character: string) => (dotAbove + character).normalize('NFD') !== dotAbove + character
const markRun = /\p{Mn}{2,}/gu

/** The key without the marks that show nothing more (UTS #39 section 5.4, as ICU's spoof checker
 * finds them): U+0307 on a soft-dotted letter (`i`, `j`, Cyrillic `і`...) with no mark of class
 * 0 or 230 between them, and the second of two identical nonspacing marks on one letter. */
function withoutHiddenMarks(key: string): string {
  let shown = ''
  let dotted = false
  for (const character of key) {
    if (character === dotAbove && dotted) continue
    if (!underTheDot(character)) dotted = softDotted.test(character)
    shown += character
  }
  return shown.replace(markRun, (run) => [...new Set(run)].join(''))
}
