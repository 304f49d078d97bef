import prototypes from 'unhomoglyph/data.json' with { type: 'json' }

/**
 * The confusable skeleton of Unicode Technical Standard #39, section 4: two texts that a reader
 * may take for one another (Latin `a` and Cyrillic `а`, `‐` and `-`, `’` and `'`, `rn` and `m`)
 * have one skeleton. It is a key to compare by, never a text to show: it mixes scripts.
 *
 * The mapping is Unicode's confusables.txt (each source character to its prototype), version
 * 13.0.0 as the package unhomoglyph ships it (its data.json, pinned with the package: a new
 * version of the data changes keys already stored, so it comes with a migration that computes
 * them anew). The package's own function replaces characters without the normalization the
 * standard asks for; the algorithm is the standard's: NFD, each character by its prototype, NFD.
 */
export function skeleton(text: string): string {
  let mapped = ''
  for (const character of text.normalize('NFD')) mapped += prototypeOf.get(character) ?? character
  return mapped.normalize('NFD')
}

const prototypeOf: ReadonlyMap<string, string> = new Map(Object.entries(prototypes))
