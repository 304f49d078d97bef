/**
 * What a 201 acknowledges is what was stored, byte for byte, in every script: a corpus of names
 * that careless stores, drivers or serializers alter (astral characters, ZWJ sequences, combining
 * marks that must not be normalised, right-to-left text, noncharacters, the longest name
 * allowed) makes the round trip createPet → listPets of its id → listPets on each store, through
 * the newest version, over a real socket,
 * so that the bytes on the wire are what is compared. What cannot be stored as it is (a lone
 * surrogate, bytes that are not UTF-8, another charset) is refused, and nothing is stored; so
 * is a name that breaks PetName's rule: a control or line-break character anywhere, or nothing
 * visible at all (white space, format characters, other default-ignorable code points).
 */
import type { OpenAPIV3 } from 'openapi-types'
import t, { type Test } from 'tap'
import { deref } from '../src/contract/pointer.js'
import { aCategory, build, newest, testKey } from './helpers/app.js'
import { contractViolations } from './helpers/contract.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'

const { document, basePath } = newest
const schema = (node: OpenAPIV3.SchemaObject | OpenAPIV3.ReferenceObject | undefined) => deref<OpenAPIV3.SchemaObject>(document, node!)
const newPet = schema(document.components?.schemas?.NewPet)
/** The longest name the spec allows, counted as ajv counts in JSON Schema: in code points. */
const maxLength = schema(newPet.properties?.name).maxLength!
/** The largest page, so that one listPets holds the whole corpus. */
const pageSize = schema(deref<OpenAPIV3.ParameterObject>(document, document.components!.parameters!.Limit!).schema).maximum!

/** PetName's rule in words: the first sentence of its description, which a 400 quotes. */
const nameRule = String(schema(newPet.properties?.name).description)
  .trim()
  .split(/(?<=\.)\s/)[0]!
  .replace(/\s+/g, ' ')

/** Characters outside the Basic Multilingual Plane: two UTF-16 units and four UTF-8 bytes each. */
const astral = ['😀', '🐕', '𝔘', '𠜎', '𓃠', '🀄', '𝄞', '\u{10FFFD}']
const longest = Array.from({ length: maxLength }, (_, i) => astral[i % astral.length]).join('')
const tooLong = `${longest}${astral[0]}`

const corpus: [string, string][] = [
  ['emoji', '🐕 Rex 🐾'],
  ['a ZWJ sequence', '👩\u200d👩\u200d👧\u200d👦'],
  ['a ZWJ sequence with a variation selector', '🏳\ufe0f\u200d🌈'],
  ['regional-indicator flags', '🇯🇵🇫🇷🇧🇷'],
  ['a tag-sequence flag', '🏴\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}'],
  ['skin-tone modifiers', '👍🏽 👋🏿'],
  ['stacked combining marks', 'Z\u0324\u0308a\u0327l\u0308\u0303g\u0303o\u0308\u0301'],
  ['NFC', 'Café Ñandú'.normalize('NFC')],
  ['NFD, the same text decomposed', 'Café Ñandú'.normalize('NFD')],
  ['Hangul syllables (NFC)', '강아지'],
  ['Hangul as conjoining jamo (NFD)', '강아지'.normalize('NFD')],
  ['Arabic, right to left', 'قطة صغيرة'],
  ['Hebrew, right to left', 'כלב קטן'],
  ['mixed directions with bidi controls', 'Rex \u202bכלב\u202c \u200fقطة\u200e \u202eevil'],
  ['CJK', '小狗ポチ'],
  ['CJK extension B (astral)', '𠜎𠜱𠝹𠱓'],
  ['mathematical letters (astral)', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢'],
  ['Egyptian hieroglyphs (astral)', '𓃠𓃡'],
  ['noncharacters and private use', 'x\ufffe\uffff\ue000\u{10ffff}'],
  ['invisible characters and an inner BOM', 'R\u200be\u200cx\u2060\ufeff'],
  ['a lone zero-width joiner, beside letters', 'R\u200dex'],
  ['bidi marks only around letters', '\u200fRex\u200e'],
  ['U+FFFD itself', 'R\ufffdx'],
  ['quotes, backslashes and what looks like an escape', `"R'e\\x" \\u0000 %00`],
  [`the longest name allowed: ${maxLength} astral characters`, longest],
]

/** Strict UTF-8: bytes that are not UTF-8 are an error, not U+FFFD. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

interface Exchange {
  status: number
  /** the body exactly as received */
  bytes: Buffer
  json: unknown
}

/** The app listening on a real socket of its own, and a way to call it. */
async function serve(t: Test, options: { DATABASE_URL?: string } = {}) {
  const app = await build(t, options)
  // (category 1, which the pets name: version 2 on, createPet takes only one that exists)
  await aCategory(app)
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  return async function send(method: string, path: string, body?: Uint8Array, contentType = 'application/json'): Promise<Exchange> {
    const response = await fetch(`${origin}${basePath}${path}`, {
      method,
      headers: { authorization: `Bearer ${testKey}`, ...(body && { 'content-type': contentType }) },
      ...(body && { body }),
      signal: AbortSignal.timeout(10_000),
    })
    const bytes = Buffer.from(await response.arrayBuffer())
    const text = utf8.decode(bytes)
    const observed = { method, url: `${basePath}${path}`, status: response.status, headers: Object.fromEntries(response.headers), body: text }
    t.strictSame(contractViolations(observed), [], `${method} ${path} ${response.status} keeps the contract`)
    return { status: response.status, bytes, json: JSON.parse(text) }
  }
}

const encode = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8')

interface Pet {
  id: number
  name: string
  status: string
}

/** The cases, on the store that `store` makes fresh for each. */
function roundTrip(t: Test, store: (t: Test) => Promise<{ DATABASE_URL?: string }>) {
  t.test('every name of the corpus comes back byte for byte from createPet, and listPets of its id and of all', async (t) => {
    const send = await serve(t, await store(t))
    const created: { label: string; name: string; bytes: Buffer; pet: Pet }[] = []
    for (const [label, name] of corpus) {
      const response = await send('POST', '/pets', encode({ name, categoryId: 1 }))
      t.equal(response.status, 201, `${label}: created`)
      const pet = response.json as Pet
      t.ok(Buffer.from(pet.name, 'utf8').equals(Buffer.from(name, 'utf8')), `${label}: the 201 holds the name's very bytes`)
      created.push({ label, name, bytes: response.bytes, pet })
    }
    for (const { label, bytes, pet } of created) {
      const fetched = await send('GET', `/pets?id=${pet.id}`)
      t.equal(fetched.status, 200, `${label}: found`)
      t.ok(fetched.bytes.equals(Buffer.concat([Buffer.from('['), bytes, Buffer.from(']')])), `${label}: listPets of its id answers the bytes of the 201`)
    }
    const list = await send('GET', `/pets?limit=${pageSize}`)
    t.equal((list.json as Pet[]).length, corpus.length, 'listPets lists every pet once')
    for (const { label, name, bytes, pet } of created) {
      t.ok(list.bytes.includes(bytes), `${label}: listPets holds the bytes of the 201`)
      const listed = (list.json as Pet[]).find(({ id }) => id === pet.id)
      t.ok(listed && Buffer.from(listed.name, 'utf8').equals(Buffer.from(name, 'utf8')), `${label}: listPets holds the name's very bytes`)
    }

    // Normalisation would merge these: they are different names and stay different, as stored.
    const stored = new Map((list.json as Pet[]).map(({ id, name }) => [id, name]))
    const names = new Map(created.map(({ label, pet }) => [label, stored.get(pet.id)]))
    t.not(names.get('NFC'), names.get('NFD, the same text decomposed'), 'NFC and NFD are kept apart')
    t.equal(names.get('NFD, the same text decomposed'), 'Café Ñandú'.normalize('NFD'), 'NFD is not composed')
    t.not(names.get('Hangul syllables (NFC)'), names.get('Hangul as conjoining jamo (NFD)'), 'Hangul syllables and jamo are kept apart')
  })

  t.test('the longest name counts code points; one more is a 400', async (t) => {
    const send = await serve(t, await store(t))
    t.equal([...longest].length, maxLength, `${maxLength} code points`)
    t.equal(longest.length, 2 * maxLength, 'twice as many UTF-16 units: a count in units would refuse it')
    const accepted = await send('POST', '/pets', encode({ name: longest, categoryId: 1 }))
    t.equal(accepted.status, 201, `${maxLength} code points are accepted`)
    const refused = await send('POST', '/pets', encode({ name: tooLong, categoryId: 1 }))
    t.equal(refused.status, 400, `${maxLength + 1} code points are refused`)
    t.match(refused.json, { code: 'invalid_request', message: /body\/name must NOT have more than/ })
    const list = await send('GET', `/pets?limit=${pageSize}`)
    t.strictSame(
      (list.json as Pet[]).map(({ name }) => name),
      [longest],
      'only the name that fits was stored',
    )
  })

  t.test('what no store keeps as it is, is refused, and nothing is stored', async (t) => {
    const send = await serve(t, await store(t))
    await send('POST', '/pets', encode({ name: 'Rex', categoryId: 1 }))
    const before = await send('GET', `/pets?limit=${pageSize}`)

    // JSON.stringify writes a lone surrogate as the escape "\ud800"
    for (const name of ['\ud800', 'Rex\udc00', '\udc00\ud800']) {
      const response = await send('POST', '/pets', encode({ name, categoryId: 1 }))
      t.equal(response.status, 400, `${JSON.stringify(name)}: refused`)
      t.match(response.json, { code: 'invalid_request', message: /not valid Unicode/ }, `${JSON.stringify(name)}: named as not Unicode`)
    }
    const invalidUtf8 = [
      [0xff],
      [0xc3, 0x28], // a lead byte without its continuation
      [0xc0, 0xaf], // an overlong '/'
      [0xed, 0xa0, 0x80], // a surrogate encoded in UTF-8 (CESU-8)
      [0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
    ]
    for (const bytes of invalidUtf8) {
      const body = Buffer.concat([Buffer.from('{"name":"R'), Buffer.from(bytes), Buffer.from('x","categoryId":1}')])
      const response = await send('POST', '/pets', body)
      t.equal(response.status, 400, `bytes ${Buffer.from(bytes).toString('hex')}: refused`)
      t.match(response.json, { code: 'malformed_json' }, `bytes ${Buffer.from(bytes).toString('hex')}: named as not UTF-8`)
    }
    // 'Zoë' in ISO-8859-1 is not UTF-8: a server reading it as UTF-8 would store U+FFFD
    const latin1 = Buffer.from('{"name":"Zoë","categoryId":1}', 'latin1')
    const declared = await send('POST', '/pets', latin1, 'application/json; charset=iso-8859-1')
    t.equal(declared.status, 415, 'charset=iso-8859-1 is a 415')
    t.match(declared.json, { code: 'unsupported_media_type' })
    const utf8Declared = await send('POST', '/pets', Buffer.from('{"name":"Zoë","categoryId":1}', 'utf8'), 'application/json; charset=iso-8859-1')
    t.equal(utf8Declared.status, 415, 'whatever the bytes, the declared charset is refused')

    const after = await send('GET', `/pets?limit=${pageSize}`)
    t.ok(after.bytes.equals(before.bytes), 'the list is byte for byte what it was: nothing was stored')
  })

  t.test('a name with a control or line-break character, or with nothing visible, is refused with the rule, and nothing is stored', async (t) => {
    const send = await serve(t, await store(t))
    const refused: [string, string][] = [
      ['a C1 control alone (NEL)', '\u0085'],
      ['a C1 control inside', 'Re\u0080x'],
      ['the last C1 control', 'Rex\u009f'],
      ['a C0 control', 'Re\u0009x'],
      ['DEL', 'Rex\u007f'],
      ['a line separator', 'Rex\u2028Tom'],
      ['a paragraph separator', 'Rex\u2029'],
      ['a zero-width space alone', '\u200b'],
      ['a byte-order mark alone', '\ufeff'],
      ['a soft hyphen alone', '\u00ad'],
      ['joiners and word joiners alone', '\u200d\u200c\u2060'],
      ['bidi controls alone', '\u202e\u202c'],
      ['a variation selector alone', '\ufe0f'],
      ['a Hangul filler alone', '\u3164'],
      ['tag characters alone', '\u{e0067}\u{e007f}'],
      ['white space and invisible characters', ' \u200b\u00a0\u3000 '],
    ]
    for (const [label, name] of refused) {
      const response = await send('POST', '/pets', encode({ name, categoryId: 1 }))
      t.equal(response.status, 400, `${label}: refused`)
      t.match(response.json, { code: 'invalid_request', message: `body/name is not valid: ${nameRule}` }, `${label}: with the rule, in words`)
    }
    t.equal(((await send('GET', `/pets?limit=${pageSize}`)).json as Pet[]).length, 0, 'nothing was stored')
  })
}

t.test('SQLite', async (t) => roundTrip(t, async () => ({})))

t.test('PostgreSQL', { skip: postgresMissing }, async (t) => roundTrip(t, async (t) => ({ DATABASE_URL: await freshPostgres(t) })))
