/**
 * When two names are one (src/core/names.ts): look-alike spellings share a key, different
 * names do not, by nameKey (migration 0012's) and by lookAlikeKey (the key since 0016: the
 * confusable skeleton of UTS #39, src/core/confusables.ts); where a joiner may stand
 * (src/core/joiners.ts, RFC 5892 Appendix A); and the contract's CategoryName pattern, as the
 * request validator reads it (the `u` flag), refuses what the key would have to hide.
 */
import t from 'tap'
import prototypes from 'unhomoglyph/data.json' with { type: 'json' }
import { loadContract, newestSpecPath } from '../src/contract/load.js'
import { skeleton } from '../src/core/confusables.js'
import { misplacedJoiner } from '../src/core/joiners.js'
import { lookAlikeKey, nameKey } from '../src/core/names.js'
import { lookAlikes } from './helpers/look-alikes.js'
import { ignorable } from '../src/contract/uniqueness.js'

t.test('look-alike spellings of a name are one name', async (t) => {
  const cafe = nameKey('Café')
  t.equal(cafe, 'café')
  for (const [name, why] of [
    ['Cafe\u0301', 'decomposed accent'],
    ['ＣＡＦÉ', 'full width'],
    ['CAFÉ', 'upper case'],
    ['Caf\u200Bé', 'zero-width space'],
    ['\u202ECafé', 'bidi override'],
    ['Café ', 'trailing space'],
    ['  Café', 'leading spaces'],
    ['\uFEFFCafé', 'byte order mark'],
    ['Ca\u00ADfé', 'soft hyphen'],
    ['Caf\u2060é', 'word joiner'],
    ['Café\uFE0F', 'variation selector'],
    ['Café\u3164', 'Hangul filler'],
  ] as const) {
    t.equal(nameKey(name), cafe, why)
  }
  t.equal(nameKey('Straße'), nameKey('STRASSE'), 'ß folds to ss (toLowerCase keeps it)')
  t.equal(nameKey('ẞ'), 'ss', 'capital sharp s too')
  t.equal(nameKey('ﬁsh'), nameKey('FISH'), 'a ligature is its letters')
  t.equal(nameKey('ΟΔΟΣ'), nameKey('οδος'), 'final sigma is sigma')
  t.equal(nameKey('Big  Cat'), nameKey('Big\u00A0Cat'), 'a run of white space, of any kind, is one space')
  t.equal(nameKey('Big  Cat'), 'big cat')
  t.equal(nameKey('❤️'), nameKey('❤'), 'an emoji with and without its presentation selector')
})

t.test('different names stay different', async (t) => {
  t.not(nameKey('Cafe'), nameKey('Café'), 'an accent is a letter of its own')
  t.not(nameKey('Bird'), nameKey('Birds'))
  t.not(nameKey('Big Cat'), nameKey('BigCat'), 'a space is kept where it separates')
  t.not(nameKey('pаrrot'), nameKey('parrot'), 'Cyrillic а is not Latin a (scripts are not folded)')
  t.not(nameKey('ı'), nameKey('i'), 'Turkic dotless i is not i (default folding, not Turkic)')
})

t.test('look-alikes of any script are one name by lookAlikeKey, and were two by nameKey', async (t) => {
  for (const [alike, name, why] of lookAlikes) {
    t.equal(lookAlikeKey(alike), lookAlikeKey(name), `${JSON.stringify(alike)} is ${JSON.stringify(name)}: ${why}`)
    t.not(nameKey(alike), nameKey(name), `${why}: two names by nameKey`)
  }
  for (const [alike, name, why] of [
    ['Big\u{1D159}Dogs', 'Big Dogs', 'U+1D159, a null notehead, shows as a space too'],
    ['Big \u2800 Dogs', 'Big Dogs', 'a run of blanks and spaces is one space'],
    ['Barn', 'Bam', 'rn is m'],
    ['C0ws', 'Cows', '0 is O, whose case folds'],
    ['T\u0131gers', 'Tigers', 'dotless ı is i'],
    ['\u0130zmir', 'Izmir', 'İ folds to i and a dot above, which the i shows already'],
    ['Cafe\u0301\u0301', 'Café', 'a nonspacing mark repeated on one letter (UTS #39 5.4)'],
    ['Cafe\u0323\u0301\u0323', 'Cafe\u0301\u0323', '… wherever it stands among the marks of the letter'],
    ['\u012F\u0307ris', '\u012Fris', 'a dot above on an i with an ogonek, which sits below: the dot is hidden still'],
    ['\u0456\u0307', 'i', 'on Cyrillic і too (Soft_Dotted)'],
    ['Café', 'ＣＡＦÉ', "nameKey's look-alikes stay one"],
    [' Café\u200B ', 'Café', '… and so do its ignorables and end spaces'],
  ] as const) {
    t.equal(lookAlikeKey(alike), lookAlikeKey(name), `${JSON.stringify(alike)} is ${JSON.stringify(name)}: ${why}`)
  }
})

t.test('different names stay different by lookAlikeKey', async (t) => {
  for (const [one, other, why] of [
    ['Cafe', 'Café', 'an accent is a letter of its own'],
    ['Bird', 'Birds', 'a letter more'],
    ['Big Cat', 'BigCat', 'a space is kept where it separates'],
    ['Big Cat', 'Big-Cat', 'a hyphen is not a space'],
    ['Cat\u0301', 'Cat\u0301\u0300', 'two different marks'],
    ['a\u0307', 'a', 'a dot above on a letter without a dot shows'],
    ['i\u0301\u0307', 'i\u0301', 'a dot above an acute on an i shows (the acute is of class 230, as the dot)'],
    ['l\u0307', 'l', 'l is not soft-dotted'],
    ['\u0BA4\u0BAE\u0BBF\u0BB4\u0BCD', '\u0BA4\u0BAE\u0BBF\u0BB4', 'a virama is a letter of its own'],
  ] as const) {
    t.not(lookAlikeKey(one), lookAlikeKey(other), `${JSON.stringify(one)} and ${JSON.stringify(other)}: ${why}`)
  }
})

t.test("the skeleton is UTS #39's: NFD, each character by its prototype of confusables.txt, NFD", async (t) => {
  t.equal(skeleton('\u0421\u0430t'), 'Cat', 'Cyrillic С and а, by their Latin prototypes (the skeleton keeps case: nameKey folds it)')
  t.equal(skeleton('m'), 'rn')
  t.equal(skeleton('\u00E9'), 'e\u0301', 'decomposed first: é is e and U+0301, neither of which is mapped')
  t.equal(skeleton('\u0450'), 'e\u0300', 'Cyrillic ѐ is Cyrillic е and a grave accent, decomposed, whose е is Latin e')
  t.equal(skeleton('\u2800'), '\u2800', 'a blank has no prototype: lookAlikeKey makes it a space')
})

t.test("a look-alike key is its own key, for every character of Unicode's confusables data", async (t) => {
  // (the key takes nameKey and the skeleton again until neither changes it: a prototype may
  // fold to a character that has a prototype of its own, as Cherokee Ꮇ's M folds to m, which is
  // rn; or be a compatibility form, as % is º/₀, which NFKC makes o/0)
  const sources = Object.keys(prototypes)
  t.ok(sources.length > 6000, `${sources.length} characters`)
  const unstable = sources.filter((source) => lookAlikeKey(lookAlikeKey(source)) !== lookAlikeKey(source))
  t.strictSame(unstable, [], 'each key is stable')
  t.equal(lookAlikeKey('\u13B7'), 'rn', 'Cherokee Ꮇ: M, then m, then rn')
  t.equal(lookAlikeKey('%'), 'o/o', '% is º/₀, then o/0, then o/O, then o/o')
})

t.test('a joiner stands where RFC 5892 (Appendix A) allows it, and nowhere else', async (t) => {
  for (const [name, why] of [
    ['گربه\u200Cها', 'Persian: a non-joiner between ه (D) and ه (D)'],
    ['ශ්\u200Dරී ලංකා', 'Sinhala: a joiner after the virama ්'],
    ['क्\u200Cष', 'Devanagari: a non-joiner after the virama ्'],
    ['क्\u200Dष', 'Devanagari: a joiner after the virama ्'],
    ['بَ\u200Cَه', 'a non-joiner with marks (T) on either side'],
    ['ملک\u200Cها', 'after ک (D), before ه (D)'],
    ['Cats', 'no joiner at all'],
  ] as const) {
    t.equal(misplacedJoiner(name), undefined, `${JSON.stringify(name)}: ${why}`)
  }
  for (const [name, message, why] of [
    ['a\u200Db', 'the zero width joiner (U+200D) at character 2 does not follow a virama (RFC 5892, Appendix A.2)', 'a joiner in Latin'],
    ['🐈\u200D⬛', 'the zero width joiner (U+200D) at character 2 does not follow a virama (RFC 5892, Appendix A.2)', 'a joiner in an emoji sequence'],
    ['\u200Dक', 'the zero width joiner (U+200D) at character 1 does not follow a virama (RFC 5892, Appendix A.2)', 'a joiner first'],
    [
      'Ca\u200Cts',
      'the zero width non-joiner (U+200C) at character 3 neither follows a virama nor stands between two letters that join (RFC 5892, Appendix A.1)',
      'a non-joiner in Latin',
    ],
    [
      'ا\u200Cب',
      'the zero width non-joiner (U+200C) at character 2 neither follows a virama nor stands between two letters that join (RFC 5892, Appendix A.1)',
      'after ا, which joins to no letter after it (R)',
    ],
    [
      'ب\u200C',
      'the zero width non-joiner (U+200C) at character 2 neither follows a virama nor stands between two letters that join (RFC 5892, Appendix A.1)',
      'last: no letter after it',
    ],
    [
      '\u200Cب',
      'the zero width non-joiner (U+200C) at character 1 neither follows a virama nor stands between two letters that join (RFC 5892, Appendix A.1)',
      'first: no letter before it',
    ],
    [
      'گربه\u200Cها a\u200Db',
      'the zero width joiner (U+200D) at character 10 does not follow a virama (RFC 5892, Appendix A.2)',
      'the first that may not stand where it does, counted in characters',
    ],
  ] as const) {
    t.equal(misplacedJoiner(name), message, `${JSON.stringify(name)}: ${why}`)
  }
})

t.test("the contract's CategoryName pattern, read with the u flag, refuses what draws nothing and white space at the ends", async (t) => {
  const contract = loadContract(newestSpecPath)
  const { pattern } = contract.document.components!.schemas!.CategoryName as { pattern: string }
  const valid = new RegExp(pattern, 'u')
  for (const name of [
    'Café',
    'Cafe\u0301',
    'ＣＡＦÉ',
    'Straße',
    'Big  Cat',
    '❤️',
    'x',
    '🐈',
    'Ωμέγα',
    'گربه\u200Cها',
    'ශ්\u200Dරී ලංකා',
    'Big\u2800Dogs',
    '⠃⠊⠛⠀⠙⠕⠛⠎',
    'a\u{1D159}\u{1D165}b',
    '🐈\u200D⬛', // (a joiner the server refuses: misplacedJoiner)
  ])
    t.ok(valid.test(name), `${JSON.stringify(name)} is accepted`)
  for (const [name, why] of [
    ['Caf\u200Bé', 'zero-width space'],
    ['\u202ECafé', 'bidi override'],
    ['Caf\u200Eé', 'left-to-right mark'],
    ['Café ', 'trailing space'],
    [' Café', 'leading space'],
    ['Café\u00A0', 'trailing no-break space'],
    ['\uFEFFCafé', 'byte order mark'],
    ['Ca\u00ADfé', 'soft hyphen'],
    ['\u200Cگربه', 'a non-joiner first'],
    ['گربه\u200C', 'a non-joiner last'],
    ['\u2800\u2800', 'blanks alone'],
    ['\u2800Dogs', 'a blank first'],
    ['Dogs\u2800', 'a blank last'],
    ['\u{1D159}', 'a null notehead alone'],
    ['\u0301', 'a mark alone'],
    ['\u0301\u0301\u0301', 'marks alone'],
    ['\u0301Cats', 'a mark first'],
    ['\u{1D159}\u{1D165}', 'a null notehead and its stem: a mark on a blank'],
    ['\u2800\u0301', 'a mark on a blank'],
    ['Caf\u3164é', 'Hangul filler'],
    ['\uFE0FCafé', 'a variation selector first'],
    ['a\u0085b', 'a C1 control character'],
    ['a\u2028b', 'a line separator'],
    ['\uDB40\uDC41', 'a tag character'],
  ] as const) {
    t.notOk(valid.test(name), `${why} is refused`)
  }
})

t.test("the comparison ignores each difference the contract's x-unique of CategoryName names, and the words it names", async (t) => {
  const rule = loadContract(newestSpecPath).uniqueness.get('CategoryName')
  t.ok(rule !== undefined && rule.length > 0, 'the contract states how names are compared')
  for (const { difference } of rule!) {
    const [one, other] = ignorable[difference].same
    t.equal(lookAlikeKey(one), lookAlikeKey(other), `${difference}: ${JSON.stringify(one)} and ${JSON.stringify(other)} are one name`)
  }
  t.strictSame(rule!.map(({ difference }) => difference).sort(), Object.keys(ignorable).sort(), 'every difference the server ignores is stated')
})
