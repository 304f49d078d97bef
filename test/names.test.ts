/**
 * When two names are one (src/core/names.ts): look-alike spellings share a key, different
 * names do not; and the contract's CategoryName pattern, as the request validator reads it (the
 * `u` flag), refuses what the key would have to hide.
 */
import t from 'tap'
import { nameKey } from '../src/core/names.js'
import { loadContract, newestSpecPath } from '../src/contract/load.js'
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

t.test("the contract's CategoryName pattern, read with the u flag, refuses what draws nothing and white space at the ends", async (t) => {
  const contract = loadContract(newestSpecPath)
  const { pattern } = contract.document.components!.schemas!.CategoryName as { pattern: string }
  const valid = new RegExp(pattern, 'u')
  for (const name of ['Café', 'Cafe\u0301', 'ＣＡＦÉ', 'Straße', 'Big  Cat', '❤️', 'x', '🐈', 'Ωμέγα'])
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
    ['🐈\u200D⬛', 'a joiner, which is a format character, even in an emoji sequence'],
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
    t.equal(nameKey(one), nameKey(other), `${difference}: ${JSON.stringify(one)} and ${JSON.stringify(other)} are one name`)
  }
  t.strictSame(rule!.map(({ difference }) => difference).sort(), Object.keys(ignorable).sort(), 'every difference the server ignores is stated')
})
