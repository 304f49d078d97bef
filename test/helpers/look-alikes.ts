/**
 * Look-alike category names, each with its twin and why they look alike: one name by the key
 * names are unique by (src/core/names.ts lookAlikeKey), which nameKey (migration 0012's) took
 * for two. test/names.test.ts compares their keys, test/categories.test.ts adds them over HTTP.
 */
export const lookAlikes = [
  ['Ti\u0307gers', 'Tigers', 'a dot above on an i, which shows one already (UTS #39 5.4)'],
  ['Cat\u2010Dog', 'Cat-Dog', 'U+2010 hyphen'],
  ['Dog\u2011Cat', 'Dog-Cat', 'U+2011 non-breaking hyphen'],
  ['Fox\u2212Hound', 'Fox-Hound', 'U+2212 minus sign'],
  ['Cat\u2019s Toys', "Cat's Toys", 'U+2019 right single quotation mark'],
  ['Dog\u02BCs Toys', "Dog's Toys", 'U+02BC modifier letter apostrophe'],
  ['Ll\u0251m\u0251s', 'Llamas', 'U+0251 Latin alpha'],
  ['Big\u2800Dogs', 'Big Dogs', 'U+2800 braille pattern blank, the space it looks like'],
  ['C\u0430ts', 'Cats', 'Cyrillic а'],
  ['\u0421ows', 'Cows', 'Cyrillic С'],
  ['\u039Fzone', 'Ozone', 'Greek Ο'],
  ['H\u0585\u0585p\u0585e', 'Hoopoe', 'Armenian օ'],
  ['S\u13BBARK', 'SHARK', 'Cherokee Ꮋ'],
] as const
