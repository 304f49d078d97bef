/**
 * Requests generated from each served document (openapi.yaml and each older major's overlay: every version the
 * server serves, each under its base path), valid and broken, sent as bytes over TCP to a
 * listening server, on each store. Whatever a client sends, the answer is never a 5xx; its
 * status is one the spec documents for the request and the one the spec's rules call for (a
 * valid request succeeds, a broken one is refused with the right 4xx); its body keeps the
 * contract of its version; and a 201 acknowledges exactly what was sent.
 *
 * The operations, their parameters and the body schema are read from the spec, not written
 * here: a new operation or parameter is generated without a change to this file. What the
 * server should answer is worked out from the request as it is sent (the oracle below), not
 * from how it was generated; the oracle follows the rules of info.description.
 *
 * Three keys send them: the test key, with every role given by default; a second key with
 * some roles only, whose requests of an operation that needs another are a 403 (the roles read
 * from the spec), and which sees none of the first key's orders (a 404, as for an order that is
 * not there); and staff's, with every role.
 *
 * Before the generated requests, each store is asked the requests of issue 6 and those the
 * property found answered wrongly, so that each known case shows on its own line.
 */
import { METHODS } from 'node:http'
import { connect } from 'node:net'
import { Ajv, type ValidateFunction } from 'ajv'
import formats from 'ajv-formats'
import fc from 'fast-check'
import type { OpenAPIV3 } from 'openapi-types'
import t, { type Test } from 'tap'
import { loadContracts } from '../src/contract/load.js'
import type { Contract } from '../src/contract/model.js'
import { deref } from '../src/contract/pointer.js'
import type { RoleRequirement } from '../src/contract/roles.js'
import { build, testKey } from './helpers/app.js'
import { contractViolations } from './helpers/contract.js'
import { requestExamples } from './helpers/spec.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'

/** Runs per store and served version, and the time each may take at most: the file stays well
 * under a minute even on a busy machine. FC_RUNS and FC_SEED (printed on failure) replay or widen a run. */
const numRuns = Number(process.env.FC_RUNS ?? 400)
const timeLimitMs = 12_000
/** No exchange may take longer: an answer that never comes is a failure, not a hang. */
const exchangeTimeoutMs = 10_000

/** Every version the server serves, oldest first: each is generated from its own document, under
 * its own base path, against one server that serves them all. */
const contracts = loadContracts()
const newest = contracts.at(-1)!

/** The second key, and its roles: reads of pets and the store's orders, orders of its own. */
const otherKey = 'other-key-5e0c3b'
const otherRoles = new Set(['pets:read', 'orders:read', 'orders:write'])
/** Store staff's key, with every role of the catalogue (a key holds the newest document's roles):
 * it adds categories where a version has them, and sees every order. */
const staffKey = 'staff-key-9d27a4'
const staffRoles = new Set(newest.roles.roles.keys())
const rolesOfKey = new Map<string, ReadonlySet<string>>([
  [testKey, new Set(newest.roles.defaults)],
  [otherKey, otherRoles],
  [staffKey, staffRoles],
])

type Schema = OpenAPIV3.SchemaObject

interface ParameterSpec {
  name: string
  in: 'query' | 'path' | 'header'
  required: boolean
  schema: Schema
}

interface OperationSpec {
  id: string
  method: string
  /** the path template, e.g. `/pets/{petId}` */
  path: string
  parameters: ParameterSpec[]
  /** the application/json schema of the request body (its properties resolved), if the operation
   * takes one, with its validator */
  body?: { schema: Schema & { properties?: Record<string, Schema> }; validate: ValidateFunction }
  documented: Set<number>
  /** the documented statuses that only a reused Idempotency-Key calls for (`idempotency_key_reused`) */
  keyedOnly: Set<number>
  /** the roles its `security` asks (alternatives) */
  roles: RoleRequirement
}

/** One served version, as the generators and the oracle read it from its document. */
interface Version {
  contract: Contract
  /** its info.description: the rules the oracle follows */
  rules: string
  operations: OperationSpec[]
  /** the spec's templates as patterns of request paths; an empty segment is matched too, since a
   * router may take it for an empty parameter */
  templates: { path: string; pattern: RegExp }[]
  /** the Error schema's `code` */
  errorCode: Schema
  /** the catalogue of error codes, with the status of each, as the Error schema describes it:
   * "`invalid_request` (400, ...), `malformed_json` (400), ..." */
  catalogue: Map<string, number>
  knownQueryNames: Set<string>
}

const pointer = (...keys: string[]) => keys.map((key) => key.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')

function versionOf(contract: Contract): Version {
  const { document, basePath } = contract
  /** A schema with its `$ref`s and `allOf`s followed: enough for the schemas of this spec. */
  const resolve = (node: Schema | OpenAPIV3.ReferenceObject): Schema => {
    const { allOf, ...schema } = deref<Schema>(document, node)
    return allOf ? Object.assign({}, ...allOf.map(resolve), schema) : schema
  }
  // An independent validator of request bodies, compiled from the YAML as the contract helper does.
  const ajv = new Ajv({ strict: false, allErrors: true })
  formats.default(ajv)
  ajv.addSchema(document, 'openapi')
  /** The operations of the spec, with what a request needs to be generated for them. */
  const operations: OperationSpec[] = [...contract.operations.values()].map((operation) => {
    const pathItem = document.paths[operation.path] ?? {}
    const parameters = [...(pathItem.parameters ?? []), ...(operation.definition.parameters ?? [])].map((reference): ParameterSpec => {
      const parameter = deref<OpenAPIV3.ParameterObject>(document, reference)
      if (parameter.in !== 'query' && parameter.in !== 'path' && parameter.in !== 'header') {
        throw new Error(`${operation.id}: ${parameter.in} parameters are not generated by this test yet`)
      }
      return { name: parameter.name, in: parameter.in, required: parameter.required === true, schema: resolve(parameter.schema!) }
    })
    const reference = operation.definition.requestBody
    const bodySchema = reference && deref<OpenAPIV3.RequestBodyObject>(document, reference).content['application/json']?.schema
    const location = reference && '$ref' in reference ? reference.$ref : `#/${pointer('paths', operation.path, operation.method.toLowerCase(), 'requestBody')}`
    const body = bodySchema && resolve(bodySchema)
    const codeOf = (status: string) =>
      (
        deref<OpenAPIV3.ResponseObject>(document, operation.definition.responses[status]!).content?.['application/json']?.example as
          { code?: string } | undefined
      )?.code
    return {
      id: operation.id,
      method: operation.method,
      path: operation.path,
      parameters,
      ...(body && {
        body: {
          schema: { ...body, properties: Object.fromEntries(Object.entries(body.properties ?? {}).map(([name, property]) => [name, resolve(property)])) },
          validate: ajv.getSchema(`openapi${location}/content/application~1json/schema`)!,
        },
      }),
      documented: new Set(Object.keys(operation.definition.responses).map(Number)),
      keyedOnly: new Set(
        Object.keys(operation.definition.responses)
          .filter((status) => codeOf(status) === 'idempotency_key_reused')
          .map(Number),
      ),
      roles: operation.roles ?? [],
    }
  })
  const errorCode = resolve(resolve(document.components!.schemas!.Error!).properties!.code!)
  return {
    contract,
    rules: document.info.description ?? '',
    operations,
    templates: operations.map(({ path }) => ({ path, pattern: new RegExp(`^${basePath}${path.replace(/\{[^}]+\}/g, '([^/?]*)')}$`) })),
    errorCode,
    catalogue: new Map([...(errorCode.description ?? '').matchAll(/`(\w+)`\s+\((\d{3})/g)].map(([, code, status]) => [code!, Number(status)])),
    knownQueryNames: new Set(operations.flatMap(({ parameters }) => parameters.filter((p) => p.in === 'query').map((p) => p.name))),
  }
}

const versions = contracts.map(versionOf)

/** The methods the spec serves at a template: HEAD wherever GET (info.description). */
const methodsAt = ({ operations }: Version, path: string) =>
  operations.filter((operation) => operation.path === path).flatMap(({ method }) => (method === 'GET' ? ['GET', 'HEAD'] : [method]))

/** "Request bodies are JSON objects in UTF-8 of at most 16 KiB (larger: `413`)". */
const bodyLimit = 16 * 1024

// ---------------------------------------------------------------------------------------------
// Generation

/** Texts that a lax integer parser takes for a number (issue 6, point 2), and other near misses. */
const junkTexts = [
  '1e2',
  '0x10',
  '0x1',
  '+5',
  ' 5',
  '5 ',
  '\t5',
  '007',
  '00',
  '-0',
  '-1',
  '20.0',
  '1.0',
  '1.',
  '.5',
  '1_000',
  '1,5',
  'Infinity',
  '-Infinity',
  'NaN',
  '1e400',
  '0b1',
  '0o7',
  '１２',
  '١٢',
  '𝟙',
  '',
  'null',
  'true',
  '[]',
  '{}',
  'undefined',
  '\u0000',
  '%',
  '5\n',
  'available ',
  'AVAILABLE',
  'sold,pending',
  '\ud800',
  '🐕',
]
const junkText = fc.oneof(fc.constantFrom(...junkTexts), fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 6 }))

/** The text of a parameter value: valid ones, values just out of range, and junk. */
function parameterText(schema: Schema): fc.Arbitrary<string> {
  if (schema.type === 'integer') {
    const min = BigInt(schema.minimum ?? Number.MIN_SAFE_INTEGER)
    const max = BigInt(schema.maximum ?? Number.MAX_SAFE_INTEGER)
    return fc.oneof(
      { weight: 4, arbitrary: fc.oneof(fc.bigInt({ min, max }), fc.bigInt({ min, max: min + 25n }), fc.constantFrom(min, max)).map(String) },
      { weight: 2, arbitrary: fc.oneof(fc.constantFrom(min - 1n, max + 1n), fc.bigInt({ min: max + 1n, max: max * 10n ** 6n })).map(String) },
      { weight: 1, arbitrary: fc.stringMatching(/^[1-9][0-9]{308}$/) },
      { weight: 3, arbitrary: junkText },
    )
  }
  if (schema.type === 'string' && schema.enum) {
    const values = schema.enum.map(String)
    return fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...values) },
      { weight: 1, arbitrary: fc.constantFrom(...values).map((value) => value.toUpperCase()) },
      { weight: 2, arbitrary: junkText },
    )
  }
  throw new Error(`parameter schema ${JSON.stringify(schema)}: not generated by this test yet`)
}

/** Whether a parameter value, as the server receives it after percent-decoding, is valid: an
 * integer "is written in decimal digits only (`0` or `[1-9][0-9]*`, within its range)". */
function parameterValid(schema: Schema, text: string): boolean {
  if (schema.type === 'string' && schema.enum === undefined) {
    const length = [...text].length
    return length >= (schema.minLength ?? 0) && length <= (schema.maxLength ?? Number.POSITIVE_INFINITY) && new RegExp(schema.pattern ?? '', 'u').test(text)
  }
  if (schema.type === 'integer') {
    return (
      /^(0|[1-9][0-9]*)$/.test(text) &&
      BigInt(text) >= BigInt(schema.minimum ?? Number.MIN_SAFE_INTEGER) &&
      BigInt(text) <= BigInt(schema.maximum ?? Number.MAX_SAFE_INTEGER)
    )
  }
  return schema.enum!.map(String).includes(text)
}

/** How a text is put into a URL: percent-encoded as usual, every byte encoded (the same text
 * once decoded), or broken by a percent sequence that is not one, or not UTF-8. */
type Encoding = 'usual' | 'every-byte' | { broken: string }
const encoding: fc.Arbitrary<Encoding> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('usual' as const) },
  { weight: 2, arbitrary: fc.constant('every-byte' as const) },
  { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '%E9', '%C0%AF', '%ED%A0%80', '%FF%FE').map((broken) => ({ broken })) },
)

function encode(text: string, how: Encoding): string {
  // UTF-8 bytes, as a client sends them (a lone surrogate becomes U+FFFD, as in any encoder)
  const bytes = [...Buffer.from(text, 'utf8')]
  const escaped = bytes
    .map((byte) =>
      how === 'usual' && /[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte))
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('')
  return typeof how === 'object' ? `${escaped}${how.broken}` : escaped
}

interface QueryPair {
  name: string
  text: string
  encoding: Encoding
  /** `name` alone, without `=` */
  bare: boolean
}

interface Target {
  /** the spec path the request path was made from, or undefined for one the spec lacks */
  template?: string
  /** path parameters as text, with how each was encoded */
  pathValues: Record<string, { text: string; encoding: Encoding }>
  /** the path as sent */
  path: string
  query: QueryPair[]
}

/** Query parameters no operation of the version takes. */
const unknownQueryName = ({ knownQueryNames }: Version) =>
  fc
    .oneof(
      fc.constantFrom('api_key', 'access_token', 'foo', 'LIMIT', 'Status', 'limit[]', 'limit ', '__proto__', 'constructor'),
      fc.constantFrom('toString', 'hasOwnProperty', 'valueOf'),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }),
    )
    .filter((name) => !knownQueryNames.has(name))

function queryPair(name: fc.Arbitrary<string>, text: fc.Arbitrary<string>): fc.Arbitrary<QueryPair> {
  return fc.record({ name, text, encoding, bare: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }) })
}

function targetFor(version: Version, operation: OperationSpec): fc.Arbitrary<Target> {
  const inPath = operation.parameters.filter((p) => p.in === 'path')
  const inQuery = operation.parameters.filter((p) => p.in === 'query')
  const pathValues = fc.record(Object.fromEntries(inPath.map((p) => [p.name, fc.record({ text: parameterText(p.schema), encoding })]))) as fc.Arbitrary<
    Target['pathValues']
  >
  const pairs = [
    ...inQuery.map((p) => ({ weight: 4, arbitrary: queryPair(fc.constant(p.name), parameterText(p.schema)) })),
    { weight: 1, arbitrary: queryPair(unknownQueryName(version), fc.oneof(junkText, fc.constant(testKey))) },
  ]
  // known parameters once, twice (repeated) or not at all, and unknown ones
  const query = fc.array(fc.oneof(...pairs), { maxLength: 4 })
  return fc.record({ pathValues, query }).map(({ pathValues, query }) => ({
    template: operation.path,
    pathValues,
    path: version.contract.basePath + operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => encode(pathValues[name]!.text, pathValues[name]!.encoding)),
    query,
  }))
}

/** Paths the version's spec lacks, near the ones it has; the documentation pages are left out. */
function unknownTarget(version: Version): fc.Arbitrary<Target> {
  const { basePath } = version.contract
  return fc
    .oneof(
      fc.constantFrom('/', '//', basePath, '/v9/pets', '/pets', `${basePath.toUpperCase()}/pets`, `${basePath}//pets`),
      fc.constantFrom(`${basePath}/pets/1/2`, `${basePath}/pets/1/`, `${basePath}/cats`),
      fc
        .tuple(fc.constantFrom(...version.operations.map(({ path }) => path)), fc.webSegment())
        .map(([path, segment]) => `${basePath}${path.replace(/\{[^}]+\}/g, '1')}/${segment}`),
      fc.webSegment().map((segment) => `/${segment}`),
    )
    .filter(
      (path) =>
        !version.templates.some(({ pattern }) => pattern.test(path)) &&
        !path.toLowerCase().startsWith(`${basePath}/docs`) &&
        !path.toLowerCase().startsWith(`${basePath}/openapi`) &&
        !path.includes('/./') &&
        !path.includes('/../'),
    )
    .chain((path) =>
      fc
        .array(queryPair(fc.oneof(fc.constantFrom(...version.knownQueryNames, 'x'), unknownQueryName(version)), junkText), { maxLength: 2 })
        .map((query) => ({ pathValues: {}, path, query })),
    )
}

/** `arbitrary` in `percent` cases out of a hundred, undefined otherwise. */
function sometimes<T>(percent: number, arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: 100 - percent, arbitrary: fc.constant(undefined) }, { weight: percent, arbitrary })
}

/** What a header value may hold, as Node reads it (latin1): visible characters, space and obs-text. */
const headerCharacter = fc
  .integer({ min: 0x20, max: 0xff })
  .filter((c) => c !== 0x7f)
  .map((c) => String.fromCharCode(c))

const authorization: fc.Arbitrary<string[]> = fc.oneof(
  // valid: the scheme in any case (RFC 7235), one or more spaces, optional white space after
  {
    weight: 10,
    arbitrary: fc
      .tuple(
        fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEaReR'),
        fc.constantFrom(' ', '  '),
        fc.constantFrom(testKey, testKey, otherKey, staffKey),
        fc.constantFrom('', ' ', '\t'),
      )
      .map(([scheme, space, key, after]) => [`${scheme}${space}${key}${after}`]),
  },
  { weight: 1, arbitrary: fc.constant<string[]>([]) },
  { weight: 1, arbitrary: fc.constant<string[]>([`Bearer ${testKey}`, `Bearer ${testKey}`]) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.constantFrom(
          '',
          'Bearer',
          'Bearer ',
          `Bearer ${testKey}x`,
          `Bearer ${testKey.toUpperCase()}`,
          `Bearer ${testKey} ${testKey}`,
          `Token ${testKey}`,
          `Bearer=${testKey}`,
          `Bearer\t${testKey}`,
          `Bearer,${testKey}`,
          testKey,
          `Basic ${Buffer.from(`${testKey}:`).toString('base64')}`,
          `Bearer ${testKey}\u00e9`,
          'Bearer \u00ff\u00fe',
        ),
        // header text as Node reads it: latin1, visible characters and obs-text
        fc.string({ unit: headerCharacter, maxLength: 30 }),
      )
      .map((value) => [value]),
  },
)

const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/json;charset=UTF-8', 'application/json; charset="utf-8"'),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'Application/JSON',
      'APPLICATION/JSON; CHARSET=UTF-8',
      'application/json; foo=bar',
      'application/json ; charset=utf-8',
      'application/json; charset=iso-8859-1',
      'application/json; charset=utf-16',
      'application/json; charset=us-ascii',
      'application/json; charset=latin1',
      'application/json; charset=',
      'application/json; charset=utf8',
      'text/plain',
      'text/json',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
      'application/json-patch+json',
      'application/vnd.api+json',
      'application/jsonp',
      'application/*',
      '*/*',
      'json',
      '',
    ),
  },
  { weight: 1, arbitrary: fc.constant(undefined) },
)

/** A string for a string schema: mostly near its length limits, in many scripts, and with what
 * no name may hold (control characters, lone surrogates), and names with nothing visible. */
function stringValue(schema: Schema): fc.Arbitrary<string> {
  const max = schema.maxLength ?? 50
  const invisibleUnit = fc.constantFrom(
    ' ',
    '\u00a0',
    '\u3000',
    '\u200b',
    '\u200c',
    '\u200d',
    '\u2060',
    '\ufeff',
    '\u00ad',
    '\u202e',
    '\ufe0f',
    '\u3164',
    '\u0085',
    '\u2028',
  )
  const hostileUnit = fc.oneof(
    fc.constantFrom('\ud800', '\udfff', '\u0000', '\n', '\u007f', '\u0085', '\u2028', '\ufeff', ' ', '\u00a0', '\u200d', '"', '\\'),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  )
  return fc.oneof(
    { weight: 8, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 12 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: max + 2 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: max + 2 }) },
    { weight: 2, arbitrary: fc.string({ unit: hostileUnit, maxLength: 4 }).map((junk) => `Rex${junk}`) },
    // nothing visible: white space, format and other invisible characters, C1 controls
    { weight: 1, arbitrary: fc.string({ unit: invisibleUnit, minLength: 1, maxLength: 4 }) },
    { weight: 1, arbitrary: fc.constantFrom(max - 1, max, max + 1).chain((n) => fc.constantFrom('x', '😀', 'é', 'e\u0301').map((unit) => unit.repeat(n))) },
  )
}

function integerValue(schema: Schema): fc.Arbitrary<number> {
  const min = schema.minimum ?? Number.MIN_SAFE_INTEGER
  const max = schema.maximum ?? Number.MAX_SAFE_INTEGER
  return fc.oneof(
    { weight: 5, arbitrary: fc.bigInt({ min: BigInt(min), max: BigInt(max) }).map(Number) },
    // small ones, as ids of what the store holds are (version 2's createPet takes only a category that exists)
    { weight: 2, arbitrary: fc.integer({ min, max: Math.min(max, min + 25) }) },
    { weight: 2, arbitrary: fc.constantFrom(min, max, min - 1, max + 1, 2 ** 53, 1.5, -0, 0, -1) },
    { weight: 1, arbitrary: fc.double() },
  )
}

/** A value for a property schema, or, now and then, a value of another type. */
function propertyValue(schema: Schema): fc.Arbitrary<unknown> {
  const wrongType = fc.jsonValue({ maxDepth: 2 })
  const right =
    schema.enum !== undefined
      ? fc.oneof(fc.constantFrom(...schema.enum), fc.string({ maxLength: 8 }))
      : schema.type === 'string'
        ? stringValue(schema)
        : schema.type === 'integer'
          ? integerValue(schema)
          : wrongType
  return fc.oneof({ weight: 8, arbitrary: right }, { weight: 1, arbitrary: wrongType })
}

/** A JSON text standing for one value, spliced into a body by bytes. */
const literals: Buffer[] = [
  '1e400',
  '-1e400',
  '1.0',
  '1E0',
  '-0',
  '9007199254740993',
  '0x10',
  'Infinity',
  'NaN',
  '01',
  '+1',
  '1.',
  '"\\ud800"',
  '"Rex\\udfff"',
  '"\\udc00\\ud800"',
  '"\\ud83d\\udc36"',
  '"\\u0000"',
  '"\\u00e9"',
  '"R\\u0065x"',
].map((text) => Buffer.from(text))
const invalidUtf8: Buffer[] = [[0xff], [0xc3, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x80]].map((bytes) =>
  Buffer.from(bytes),
)
const splice = '\u0001splice\u0001'

/** Request bodies for a schema: objects that keep it or break it one way or another, JSON that
 * is not an object, text that is not JSON, bytes that are not UTF-8, and bodies too large. */
function bodyFor(schema: Schema): fc.Arbitrary<Buffer> {
  const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).map(([name, property]) => [name, propertyValue(property as Schema)]))
  const keep = fc.record(properties, { requiredKeys: schema.required ?? [] }) as fc.Arbitrary<Record<string, unknown>>
  const names = Object.keys(properties)
  const junkKey = fc.oneof(fc.constantFrom('__proto__', 'constructor', 'Name', `${names[0]} `, 'id', ''), fc.string({ maxLength: 6 }))
  const object = fc.oneof(
    { weight: 6, arbitrary: keep },
    // a required property left out
    { weight: 1, arbitrary: fc.tuple(keep, fc.constantFrom(...names)).map(([value, name]) => ({ ...value, [name]: undefined })) },
    // unknown properties, `__proto__` and `constructor.prototype` among them
    {
      weight: 1,
      arbitrary: fc
        .tuple(keep, junkKey, fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant({ prototype: { polluted: true } })))
        .map(([value, key, junk]) => JSON.parse(`{${JSON.stringify(key)}:${JSON.stringify(junk)},${JSON.stringify(value).slice(1)}`.replace(/,\}$/, '}'))),
    },
  )
  const json = fc.oneof(
    { weight: 8, arbitrary: object.map((value) => Buffer.from(JSON.stringify(value))) },
    { weight: 1, arbitrary: object.map((value) => Buffer.from(`\n\t ${JSON.stringify(value, null, 2)} \r\n`)) },
    // not an object at all
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => Buffer.from(JSON.stringify(value) ?? 'null')) },
  )
  // one property's value replaced by bytes: odd number literals, escapes, lone surrogates, bytes that are not UTF-8
  const spliced = fc
    .tuple(
      keep,
      fc.constantFrom(...names),
      fc.oneof(
        fc.constantFrom(...literals),
        fc.constantFrom(...invalidUtf8).map((bytes) => Buffer.concat([Buffer.from('"Re'), bytes, Buffer.from('x"')])),
      ),
    )
    .map(([value, name, bytes]) => {
      const [before, after] = JSON.stringify({ ...value, [name]: splice }).split(JSON.stringify(splice)) as [string, string]
      return Buffer.concat([Buffer.from(before), bytes, Buffer.from(after)])
    })
  const broken = fc.oneof(
    // cut short, or followed by more
    fc.tuple(json, fc.nat()).map(([bytes, cut]) => bytes.subarray(0, cut % Math.max(bytes.length, 1))),
    fc.tuple(json, fc.constantFrom('}', ',', ' x', '{}', '\u0000')).map(([bytes, more]) => Buffer.concat([bytes, Buffer.from(more)])),
    json.map((bytes) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes])), // a byte order mark
    fc
      .constantFrom('name=Rex&categoryId=1', '<pet><name>Rex</name></pet>', "{name: 'Rex'}", '{"name":"Rex",}', '[', '"', 'nul')
      .map((text) => Buffer.from(text)),
    fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
    fc.string({ unit: 'binary', maxLength: 64 }).map((text) => Buffer.from(text)),
    // nested deep, within the size limit
    fc.integer({ min: 1, max: 8000 }).map((depth) => Buffer.from(`${'['.repeat(depth)}${']'.repeat(depth)}`)),
    fc.integer({ min: 1, max: 2000 }).map((depth) => Buffer.from(`{"name":"Rex","categoryId":1,"x":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`)),
  )
  const sized = fc
    .integer({ min: bodyLimit - 64, max: bodyLimit * 3 })
    .map((size) => Buffer.from(JSON.stringify({ name: 'x'.repeat(Math.max(size - 30, 1)), categoryId: 1 })))
  return fc.oneof({ weight: 10, arbitrary: json }, { weight: 3, arbitrary: spliced }, { weight: 4, arbitrary: broken }, { weight: 1, arbitrary: sized })
}

/** Ways a request can fail to be HTTP/1.1 at all. */
type Breakage = 'no-host' | 'two-hosts' | 'raw-byte-in-target' | 'control-in-header' | 'bad-version'

interface GeneratedRequest {
  method: string
  target: Target
  version: 'HTTP/1.1' | 'HTTP/1.0'
  /** headers besides Host and Connection, in order */
  headers: [string, string][]
  body?: { bytes: Buffer; chunked: boolean }
  breakage?: Breakage
}

/** The value of a header parameter (a string with a pattern: Idempotency-Key): valid ones,
 * mostly new, now and then one of a few (replays, and reuses with another body), and junk. */
function headerText(schema: Schema): fc.Arbitrary<string> {
  if (schema.type !== 'string' || schema.maxLength === undefined) throw new Error(`header schema ${JSON.stringify(schema)}: not generated by this test yet`)
  const max = schema.maxLength
  return fc.oneof(
    { weight: 6, arbitrary: fc.uuid() },
    { weight: 3, arbitrary: fc.constantFrom('key-1', 'key-2') },
    { weight: 2, arbitrary: fc.string({ unit: headerCharacter, maxLength: 12 }) },
    { weight: 1, arbitrary: fc.constantFrom(max - 1, max, max + 1).map((n) => 'k'.repeat(n)) },
  )
}

function requestFor(version: Version, operation: OperationSpec): fc.Arbitrary<GeneratedRequest> {
  const method = fc.oneof(
    { weight: 20, arbitrary: fc.constant(operation.method) },
    { weight: operation.method === 'GET' ? 2 : 0, arbitrary: fc.constant('HEAD') },
    // any method Node knows, and tokens it does not
    { weight: 2, arbitrary: fc.constantFrom(...METHODS) },
    { weight: 1, arbitrary: fc.constantFrom('FOO', 'get', 'Get', 'BREW', 'G3T', 'QUERY', 'PRI') },
  )
  const target = fc.oneof({ weight: 9, arbitrary: targetFor(version, operation) }, { weight: 1, arbitrary: unknownTarget(version) })
  const body = fc.record({
    bytes: bodyFor(operation.body?.schema ?? { type: 'object', properties: { name: { type: 'string' } } }),
    chunked: fc.boolean(),
  })
  // header parameters (Idempotency-Key): once, now and then twice (Node joins the two), or not at all
  const parameterHeaders = fc.tuple(
    ...operation.parameters
      .filter((p) => p.in === 'header')
      .map((p) =>
        sometimes(
          70,
          fc.array(headerText(p.schema), { minLength: 1, maxLength: 2 }).map((values) => values.map((value) => [p.name, value] as [string, string])),
        ),
      ),
  )
  const headers = fc
    .record({
      parameterHeaders,
      authorization,
      contentType,
      contentEncoding: sometimes(10, fc.constantFrom('identity', 'gzip', 'br', 'IDENTITY')),
      accept: sometimes(30, fc.constantFrom('application/json', '*/*', 'text/html', 'application/xml', 'application/json;q=0', 'image/*, */*;q=0', 'x')),
      expect: sometimes(10, fc.constantFrom('100-continue', 'foo')),
      extra: sometimes(20, fc.string({ unit: headerCharacter, maxLength: 40 })),
    })
    .map(({ parameterHeaders, authorization, contentType, contentEncoding, accept, expect, extra }) => {
      const list: [string, string][] = authorization.map((value) => ['Authorization', value])
      for (const pairs of parameterHeaders) if (pairs !== undefined) list.push(...pairs)
      if (contentType !== undefined) list.push(['Content-Type', contentType])
      if (contentEncoding !== undefined) list.push(['Content-Encoding', contentEncoding])
      if (accept !== undefined) list.push(['Accept', accept])
      if (expect !== undefined) list.push(['Expect', expect])
      if (extra !== undefined) list.push(['X-Junk', extra])
      return list
    })
  return fc
    .record({
      method,
      target,
      version: fc.oneof({ weight: 12, arbitrary: fc.constant('HTTP/1.1' as const) }, { weight: 1, arbitrary: fc.constant('HTTP/1.0' as const) }),
      headers,
      // bodies where the operation takes one, and now and then where it does not
      body: sometimes(operation.body ? 90 : 10, body),
      breakage: sometimes(7, fc.constantFrom<Breakage>('no-host', 'two-hosts', 'raw-byte-in-target', 'control-in-header', 'bad-version')),
    })
    .map(({ body, breakage, ...request }): GeneratedRequest => ({
      ...request,
      // HTTP/1.0 has no chunked framing
      ...(body && { body: { ...body, chunked: body.chunked && request.version === 'HTTP/1.1' } }),
      ...(breakage && { breakage }),
    }))
}

/** Every operation's requests of a version, each operation as likely as the next. */
const anyRequest = (version: Version) => fc.oneof(...version.operations.map((operation) => requestFor(version, operation)))

// ---------------------------------------------------------------------------------------------
// The wire

function queryString(pairs: QueryPair[]): string {
  return pairs.map(({ name, text, encoding, bare }) => (bare ? encode(name, 'usual') : `${encode(name, 'usual')}=${encode(text, encoding)}`)).join('&')
}

/** The request as bytes. Header values are latin1, as Node reads them. */
function wire(request: GeneratedRequest): Buffer {
  let target = request.target.path + (request.target.query.length > 0 ? `?${queryString(request.target.query)}` : '')
  if (request.breakage === 'raw-byte-in-target') target = `${target.slice(0, 4)}\u00e9${target.slice(4)}`
  const version = request.breakage === 'bad-version' ? 'HTTP/9.9' : request.version
  const lines = [`${request.method} ${target} ${version}`]
  if (request.breakage !== 'no-host') lines.push('Host: 127.0.0.1')
  if (request.breakage === 'two-hosts') lines.push('Host: example.com')
  for (const [name, value] of request.headers) lines.push(`${name}: ${value}`)
  if (request.breakage === 'control-in-header') lines.push('X-Control: a\u0000b')
  lines.push('Connection: close')
  const { body } = request
  if (body === undefined) return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1')
  if (!body.chunked) {
    lines.push(`Content-Length: ${body.bytes.length}`)
    return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body.bytes])
  }
  lines.push('Transfer-Encoding: chunked')
  const chunks: Buffer[] = []
  for (let at = 0; at < body.bytes.length; at += 4096) {
    const chunk = body.bytes.subarray(at, at + 4096)
    chunks.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'))
  }
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), ...chunks, Buffer.from('0\r\n\r\n')])
}

interface Answer {
  status: number
  headers: Record<string, string | string[]>
  body: Buffer
}

/** The first final answer in `buffer`, once complete (1xx interim answers skipped). */
function readAnswer(buffer: Buffer, head: boolean, ended: boolean): Answer | undefined {
  let offset = 0
  for (;;) {
    const end = buffer.indexOf('\r\n\r\n', offset)
    if (end < 0) return undefined
    const [statusLine, ...lines] = buffer.subarray(offset, end).toString('latin1').split('\r\n')
    const status = Number(/^HTTP\/1\.[01] (\d{3}) /.exec(statusLine!)?.[1])
    if (!status) throw new Error(`not an HTTP answer: ${JSON.stringify(buffer.toString('latin1').slice(0, 200))}`)
    const headers: Record<string, string | string[]> = {}
    for (const line of lines) {
      const colon = line.indexOf(':')
      const name = line.slice(0, colon).toLowerCase()
      const value = line.slice(colon + 1).trim()
      const before = headers[name]
      headers[name] = before === undefined ? value : [before, value].flat()
    }
    const start = end + 4
    if (status < 200) {
      offset = start
      continue
    }
    if (head || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) }
    const length = headers['content-length']
    if (typeof length === 'string') {
      return buffer.length - start >= Number(length) ? { status, headers, body: buffer.subarray(start, start + Number(length)) } : undefined
    }
    if (String(headers['transfer-encoding']).toLowerCase() === 'chunked') {
      const chunks: Buffer[] = []
      let at = start
      for (;;) {
        const lineEnd = buffer.indexOf('\r\n', at)
        if (lineEnd < 0) return undefined
        const size = Number.parseInt(buffer.subarray(at, lineEnd).toString('latin1'), 16)
        if (buffer.length < lineEnd + 2 + size + 2) return undefined
        if (size === 0) return { status, headers, body: Buffer.concat(chunks) }
        chunks.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size))
        at = lineEnd + 2 + size + 2
      }
    }
    return ended ? { status, headers, body: buffer.subarray(start) } : undefined
  }
}

/** Sends the bytes on a new connection and reads the answer, within exchangeTimeoutMs. */
function exchange(port: number, bytes: Buffer, head: boolean): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let received = Buffer.alloc(0)
    let settled = false
    const settle = (ended: boolean, error?: Error) => {
      if (settled) return
      let answer: Answer | undefined
      try {
        answer = readAnswer(received, head, ended)
      } catch (failure) {
        error = failure as Error
      }
      if (answer === undefined && error === undefined && !ended) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      if (answer !== undefined) resolve(answer)
      else reject(error ?? new Error(`the connection ended without a complete answer: ${JSON.stringify(received.toString('latin1').slice(0, 300))}`))
    }
    const timer = setTimeout(() => settle(true, new Error(`no complete answer within ${exchangeTimeoutMs} ms`)), exchangeTimeoutMs)
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      settle(false)
    })
    socket.on('end', () => settle(true))
    socket.on('close', () => settle(true))
    // a reset after the answer arrived loses nothing; before it, it is a failure
    socket.on('error', (error) => settle(true, error))
    socket.write(bytes)
  })
}

// ---------------------------------------------------------------------------------------------
// The oracle: what the spec's rules call for, from the request as sent

/** What may happen at one step of the handling of a request: refusals, or going on ('next'). */
type Step = Set<number | 'next'>
const refuse = (...statuses: number[]): Step => new Set(statuses)
const next: Step = new Set(['next'])
const orNext = (step: Step): Step => new Set([...step, 'next'])

/** A header's values, as the server sees them (surrounding white space is not part of a value). */
const valuesOf = (request: GeneratedRequest, name: string) =>
  request.headers.filter(([header]) => header.toLowerCase() === name).map(([, value]) => value.replace(/^[ \t]+|[ \t]+$/g, ''))

/** The key a request sends, when it sends one well: one header, `Bearer` in any case, one or
 * more spaces, the key. */
function keyOf(request: GeneratedRequest): string | undefined {
  const values = valuesOf(request, 'authorization')
  return values.length === 1 ? /^bearer +(\S+)$/i.exec(values[0]!)?.[1] : undefined
}

function authentication(request: GeneratedRequest): Step {
  const key = keyOf(request)
  return key !== undefined && rolesOfKey.has(key) ? next : refuse(401)
}

/** "A key that lacks one is answered `403`", right after the key is accepted. */
function roleCheck(request: GeneratedRequest, { roles: requirement }: OperationSpec): Step {
  const held = rolesOfKey.get(keyOf(request)!)!
  return requirement.length === 0 || requirement.some((roles) => roles.every((role) => held.has(role))) ? next : refuse(403)
}

/** "Any other media type, a `charset` other than UTF-8 or a `Content-Encoding` is `415`." */
function mediaType(request: GeneratedRequest): Step {
  const encodings = valuesOf(request, 'content-encoding')
  if (encodings.some((coding) => coding.toLowerCase() !== 'identity')) return refuse(415)
  const [type] = valuesOf(request, 'content-type')
  if (type === undefined) return refuse(415)
  const [essence, ...parameters] = type.split(';')
  if (essence!.trim().toLowerCase() !== 'application/json') return refuse(415)
  for (const parameter of parameters) {
    const [name, value = ''] = parameter.split('=').map((part) => part.trim())
    if (name!.toLowerCase() !== 'charset') continue
    const charset = value.replace(/^"(.*)"$/, '$1').toLowerCase()
    // `utf8` is no name of UTF-8 (RFC 3629), but a server may well take it as one
    if (charset === 'utf8') return orNext(refuse(415))
    if (charset !== 'utf-8') return refuse(415)
  }
  return next
}

/** Whether a parsed JSON value holds a string or a key that is not well-formed Unicode, or a key
 * that reaches a prototype. */
function hostile(json: unknown): boolean {
  // without recursion: a body may nest thousands deep
  const pending = [json]
  while (pending.length > 0) {
    const value = pending.pop()
    if (typeof value === 'string' && !value.isWellFormed()) return true
    if (typeof value !== 'object' || value === null) continue
    for (const [key, item] of Object.entries(value)) {
      if (!key.isWellFormed() || key === '__proto__') return true
      if (key === 'constructor' && typeof item === 'object' && item !== null && 'prototype' in item) return true
      pending.push(item)
    }
  }
  return false
}

/** What the body calls for, once its media type is accepted: 413, 400, or on to success. */
function bodyStep(bytes: Buffer, validate: ValidateFunction): Step {
  if (bytes.length > bodyLimit) return refuse(413)
  if (bytes.length === 0) return refuse(400)
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
  } catch {
    return refuse(400)
  }
  // RFC 8259 lets a parser ignore a byte order mark, or refuse it
  const bom = text.startsWith('\ufeff')
  let value: unknown
  try {
    value = JSON.parse(bom ? text.slice(1) : text)
  } catch {
    return refuse(400)
  }
  if (hostile(value)) return refuse(400)
  if (!validatesWithoutThrowing(validate, value)) return refuse(400)
  return bom ? orNext(refuse(400)) : next
}

interface Expectation {
  /** the statuses the rules allow */
  statuses: Set<number>
  /** the operation that serves the request, if any */
  operation?: OperationSpec
  /** the one parameter at fault, when it is the only fault: the 400 must name it */
  culprit?: string
}

function expectation(version: Version, request: GeneratedRequest): Expectation {
  const steps: Step[] = []
  let operation: OperationSpec | undefined
  let culprit: string | undefined
  // A request that cannot be read as HTTP/1.1 is a 400, whatever else it holds.
  if (request.breakage !== undefined && !(request.breakage === 'no-host' && request.version === 'HTTP/1.0')) {
    steps.push(refuse(400))
  } else if (request.method === 'CONNECT') {
    steps.push(refuse(400))
  } else {
    // A path whose percent-encoding is broken is not a URL: it may be refused (400) before routing.
    if (Object.values(request.target.pathValues).some(({ encoding }) => typeof encoding === 'object')) steps.push(orNext(refuse(400)))
    // An empty path parameter leaves an empty segment: the path may match no operation (404).
    if (Object.values(request.target.pathValues).some(({ text, encoding }) => encode(text, encoding) === '')) steps.push(orNext(refuse(404)))
    // Node's parser knows a fixed set of methods; it refuses other tokens as unreadable (400).
    const readable = METHODS.includes(request.method)
    const { template } = request.target
    const served = template === undefined ? [] : methodsAt(version, template)
    if (template === undefined) steps.push(readable ? refuse(404) : refuse(400, 404))
    else if (!served.includes(request.method)) steps.push(readable ? refuse(405) : refuse(400, 405))
    else {
      const method = request.method === 'HEAD' ? 'GET' : request.method
      operation = version.operations.find((o) => o.path === template && o.method === method)!
      steps.push(authentication(request))
      if (steps.at(-1) === next) steps.push(roleCheck(request, operation))
      // the body: judged by its type, its size and its bytes where the operation takes one;
      // a body where it takes none is ignored, or refused
      if (operation.body !== undefined) {
        // an absent or empty body is a 400, and its declared type may be refused first
        if (request.body === undefined || request.body.bytes.length === 0) steps.push(orNext(mediaType(request)), refuse(400))
        else steps.push(mediaType(request), bodyStep(request.body.bytes, operation.body.validate))
      } else if (request.body !== undefined) {
        steps.push(orNext(refuse(400, 413, 415)))
      } else if (valuesOf(request, 'content-type').length > 0 && method !== 'GET') {
        // a Content-Type with no body, where the operation takes none: nothing is read, whatever
        // the type (an SDK may name one for an empty POST); but a type Fastify cannot even look
        // up (an empty one) is refused as with a body
        steps.push(orNext(mediaType(request)))
      }
      const invalid = invalidParameters(operation, request)
      // the one fault of a request that is otherwise right: its 400 must name it
      if (invalid.length === 1 && steps.every((step) => step.size === 1 && step.has('next'))) culprit = invalid[0]
      if (invalid.length > 0) steps.push(refuse(400))
      // What the store holds decides between success and what the operation documents for it:
      // what the request names is not there (404) or not in a state for it (409), or not
      // there to be named (422: version 2's createPet, of a category that does not exist), or its
      // Idempotency-Key was used before for another body (422, when that is all it documents).
      const found = [...operation.documented].filter((status) => status >= 200 && status < 300)
      const { documented, keyedOnly } = operation
      const keyed = operation.parameters.some((p) => p.in === 'header' && valuesOf(request, p.name.toLowerCase()).length > 0)
      const stateful = [404, 409, 422].filter((status) => documented.has(status) && (keyed || !keyedOnly.has(status)))
      steps.push(refuse(...found, ...stateful))
    }
  }
  // the statuses each step may give, up to the first step that always refuses
  const statuses = new Set<number>()
  for (const step of steps) {
    for (const outcome of step) if (outcome !== 'next') statuses.add(outcome)
    if (!step.has('next')) break
  }
  return { statuses, ...(operation && { operation }), ...(culprit && statuses.size === 1 && { culprit }) }
}

/** The parameters of the operation that the request gets wrong, as `in/name`. */
function invalidParameters(operation: OperationSpec, { target, ...request }: GeneratedRequest): string[] {
  const invalid: string[] = []
  for (const parameter of operation.parameters) {
    if (parameter.in === 'header') {
      // Node hands several over as one, joined by `, `; Fastify names them in lower case
      const name = parameter.name.toLowerCase()
      const values = valuesOf({ target, ...request }, name)
      if (values.length === 0 ? parameter.required : !parameterValid(parameter.schema, values.join(', '))) invalid.push(`header/${name}`)
      continue
    }
    if (parameter.in === 'path') {
      const { text, encoding } = target.pathValues[parameter.name]!
      if (typeof encoding === 'object' || !parameterValid(parameter.schema, text)) invalid.push(`path/${parameter.name}`)
      continue
    }
    const pairs = target.query.filter(({ name }) => name === parameter.name)
    const ok =
      pairs.length === 0
        ? !parameter.required
        : pairs.length === 1 && !pairs[0]!.bare && typeof pairs[0]!.encoding !== 'object' && parameterValid(parameter.schema, pairs[0]!.text)
    if (!ok) invalid.push(`query/${parameter.name}`)
  }
  return invalid
}

/** What is wrong with the answer to a request, in words; empty when all is well. */
function problems(version: Version, request: GeneratedRequest, answer: Answer): string[] {
  const found: string[] = []
  const expected = expectation(version, request)
  if (answer.status >= 500) found.push(`a ${answer.status} from the input alone`)
  if (!expected.statuses.has(answer.status)) found.push(`status ${answer.status}, expected one of ${[...expected.statuses].join(', ')}`)
  // "Every response carries `Cache-Control: no-store` and `X-Content-Type-Options: nosniff`, but
  // those that carry an `ETag`, which say `Cache-Control: private, no-cache` instead." (Which
  // answers carry an ETag, the contract check below holds to the document.)
  const cacheControl = answer.headers.etag === undefined ? 'no-store' : 'private, no-cache'
  for (const [name, value] of [
    ['cache-control', cacheControl],
    ['x-content-type-options', 'nosniff'],
  ] as const) {
    if (answer.headers[name] !== value) found.push(`${name} is ${JSON.stringify(answer.headers[name])}, not ${value}`)
  }
  const body = answer.body.toString('utf8')
  const observed = { method: request.method, url: request.target.path, status: answer.status, headers: answer.headers, body }
  // A request that is not readable HTTP reaches no operation: the Error shape is all that applies.
  found.push(...contractViolations(expected.operation ? observed : { ...observed, url: '(no operation)' }, version.contract))
  if (answer.status === 405 && answer.headers.allow === undefined) found.push('a 405 without Allow')
  if (request.method === 'HEAD' || answer.status < 400) return found.concat(success(request, expected, answer))
  const error = JSON.parse(body) as { code: string; message: string }
  if (version.catalogue.get(error.code) !== answer.status) found.push(`code ${error.code} is not the catalogue's code for ${answer.status}`)
  if (expected.culprit && !error.message.includes(expected.culprit)) found.push(`the message does not name ${expected.culprit}: ${error.message}`)
  return found
}

/** What a 201 acknowledges is what was sent: every property as sent, defaults where absent; a
 * `fooId` sent that the answer shows as an object `foo` is acknowledged by that object's `id`
 * (version 2 on, a pet's `categoryId` is its `category`). */
function success(request: GeneratedRequest, { operation }: Expectation, answer: Answer): string[] {
  if (answer.status !== 201 || operation?.body === undefined || request.body === undefined) return []
  const sent = JSON.parse(request.body.bytes.toString('utf8').replace(/^\ufeff/, '')) as Record<string, unknown>
  const stored = JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>
  return Object.entries(operation.body.schema.properties ?? {}).flatMap(([name, property]) => {
    const expected = name in sent ? sent[name] : property.default
    const object = /^(.+)Id$/.exec(name)?.[1]
    const shown = name in stored || object === undefined ? stored[name] : (stored[object] as { id?: unknown } | undefined)?.id
    return Object.is(shown, expected) ? [] : [`201 holds ${name} ${JSON.stringify(shown)}, sent ${JSON.stringify(expected)}`]
  })
}

// ---------------------------------------------------------------------------------------------
// The tests

/** A request written by hand, as `known(version, method, url)`: the oracle reads it like a generated one. */
function known(
  { templates }: Version,
  method: string,
  url: string,
  { key = true, headers = [] as [string, string][], body = undefined as string | Buffer | undefined } = {},
): GeneratedRequest {
  const [path, search] = url.split('?') as [string, string | undefined]
  const matched = templates.map(({ path: template, pattern }) => ({ template, values: pattern.exec(path) })).find(({ values }) => values)
  const names = [...(matched?.template.matchAll(/\{([^}]+)\}/g) ?? [])].map((name) => name[1]!)
  const pathValues = Object.fromEntries(
    names.map((name, i): [string, Target['pathValues'][string]] => {
      const raw = matched!.values![i + 1]!
      try {
        return [name, { text: decodeURIComponent(raw), encoding: 'usual' }]
      } catch {
        return [name, { text: raw, encoding: { broken: '' } }]
      }
    }),
  )
  const query = (search?.split('&') ?? []).map((pair): QueryPair => {
    const [name, text] = pair.split('=') as [string, string | undefined]
    const decoded = decodeURIComponent((text ?? '').replaceAll('+', ' '))
    return { name: decodeURIComponent(name), text: decoded, encoding: 'usual', bare: text === undefined }
  })
  return {
    method,
    target: { ...(matched && { template: matched.template }), pathValues, path, query },
    version: 'HTTP/1.1',
    headers: [...(key ? [['Authorization', `Bearer ${testKey}`] as [string, string]] : []), ...headers],
    ...(body !== undefined && { body: { bytes: Buffer.from(body), chunked: false } }),
  }
}

const json: [string, string][] = [['Content-Type', 'application/json']]
const rex = JSON.stringify({ name: 'Rex', categoryId: 1 })

/** The requests of issue 6, and those the property found answered wrongly: tried on every run, in
 * each version. "One" is the version's first GET of one thing by an integer id in its path
 * (version 1's getPet, version 2's getCategory). */
function knownRequests(version: Version): [string, GeneratedRequest][] {
  const { contract } = version
  const request = (method: string, url: string, options?: Parameters<typeof known>[3]) => known(version, method, url, options)
  const list = contract.urlOf('listPets')
  const create = contract.urlOf('createPet')
  const one = version.operations.find(({ method, parameters }) => method === 'GET' && parameters.some((p) => p.in === 'path' && p.schema.type === 'integer'))!
  const [id] = one.parameters.filter((p) => p.in === 'path')
  /** one's path with this text, as it is, for its id */
  const oneAt = (text: string) => `${contract.basePath}${one.path.replace(/\{[^}]+\}/, text)}`
  return [
    // integers written otherwise than in decimal digits (issue 6, point 2)
    ...['1e400', 'Infinity', '0x10', '1e2', '20.0', '+5', ' 5', `1${'0'.repeat(308)}`].map((text): [string, GeneratedRequest] => [
      `limit=${text.slice(0, 12)}`,
      request('GET', `${list}?limit=${encodeURIComponent(text)}`),
    ]),
    ['after=1e400', request('GET', `${list}?after=1e400`)],
    ...['1e400', `1${'0'.repeat(308)}`, '007', '0x1', '1.0', 'Infinity'].map((text): [string, GeneratedRequest] => [
      `${id!.name} ${text.slice(0, 12)}`,
      request('GET', oneAt(encodeURIComponent(text))),
    ]),
    ['a repeated parameter', request('GET', `${list}?limit=1&limit=2`)],
    // what a 201 acknowledges (category 1 is there in every version: prepare())
    ['a pet', request('POST', create, { headers: json, body: rex })],
    // what a 201 would acknowledge but no store keeps (point 3)
    ['a lone surrogate escape', request('POST', create, { headers: json, body: '{"name":"\\ud800","categoryId":1}' })],
    ['a body that is not UTF-8', request('POST', create, { headers: json, body: Buffer.from('{"name":"R\xffx","categoryId":1}', 'latin1') })],
    ['charset=iso-8859-1', request('POST', create, { headers: [['Content-Type', 'application/json; charset=iso-8859-1']], body: rex })],
    ['__proto__ in a body', request('POST', create, { headers: json, body: '{"__proto__":{"x":1},"name":"Rex","categoryId":1}' })],
    // point 10
    ['two Authorization headers', request('GET', list, { headers: [['Authorization', `Bearer ${testKey}`]] })],
    ['HEAD on a list', request('HEAD', list)],
    ['HEAD on one', request('HEAD', oneAt('1'))],
    // Found by the property: a path whose percent-encoding is broken is answered without the
    // headers every answer carries (nor, on getPet, its lifecycle headers).
    ['a path with %zz', request('GET', oneAt('%zz'))],
    ['a path with %E9 (not UTF-8)', request('GET', oneAt('%E9'))],
    // Found by the property: a request that no operation serves is not answered 404 or 405 when
    // it carries a body, or a Content-Type: the body is judged first.
    ['JSON that is not JSON to an unknown path', request('POST', `${contract.basePath}/cats`, { headers: json, body: 'abc' })],
    ['an empty JSON body to an unknown path', request('POST', '/', { headers: json, body: '' })],
    ['a large body with a method the path does not take', request('PUT', oneAt('1'), { headers: json, body: `"${'x'.repeat(20_000)}"` })],
    ['a Content-Type without a body, with a method the path does not take', request('DELETE', oneAt('1'), { headers: json })],
    ['a body without a Content-Type, with a method the path does not take', request('QUERY', oneAt('1'), { body: '{}' })],
  ]
}

for (const { contract, rules, catalogue, errorCode, operations } of versions) {
  t.test(`the rules the oracle follows are still those of ${contract.file}`, async (t) => {
    t.match(rules, /at most 16 KiB \(larger: `413`\)/, 'the body limit')
    t.match(
      rules,
      /Every response carries\s+`Cache-Control: no-store` and `X-Content-Type-Options: nosniff`,\s+but those that carry an `ETag`, which say `Cache-Control: private, no-cache` instead/,
      'the protective headers',
    )
    t.match(rules, /`HEAD` is answered wherever `GET` is/, 'HEAD')
    t.match(rules, /An integer query or path parameter is written in decimal digits only/, 'strict integers')
    t.match(rules, /Unknown query parameters are\s+ignored/, 'unknown query parameters')
    t.match(rules, /A path that matches no operation is answered\s+with `404`/, '404 for a path the spec lacks')
    t.match(rules, /with a method it\s+does not list, with `405`, code `method_not_allowed` and an `Allow` header/, '405 for a method it lacks')
    t.match(
      rules,
      /cannot be read as HTTP\/1\.1 \(truncated, headers over\s+16 KiB, no `Host` header or more than one, the `CONNECT` method\) is answered with\s+`400`/,
      '400 for what is not HTTP',
    )
    t.match(
      rules,
      /A key\s+that lacks one is answered `403` \(code `forbidden`\), after the key is checked and\s+before the request is otherwise looked at/,
      '403 for a key without the role, before the rest',
    )
    t.strictSame([...catalogue.keys()], (errorCode as { 'x-extensible-enum'?: string[] })['x-extensible-enum'], 'the catalogue names every code')
    t.equal(catalogue.get('not_found'), 404)
    t.equal(catalogue.get('method_not_allowed'), 405)
    t.ok(operations.length > 0 && operations.every((o) => o.documented.size > 0), 'operations with documented answers')
  })
}

/** What a version's createPet needs before it can make a pet: a category, where the version has
 * them (a version after the one category-object leads to refuses one that does not exist), added by
 * staff with its first example. Every version reads and changes the same store: where an earlier
 * version added a category of that name (`added`), it is there already, and adding it again is
 * the `409` of a name taken. */
async function prepare(t: Test, version: Version, port: number, added: Set<string>) {
  const { contract } = version
  if (!contract.operations.has('createCategory')) return
  const [category] = requestExamples(contract, 'createCategory')
  const { name } = category!.value as { name: string }
  const request = known(version, 'POST', contract.urlOf('createCategory'), {
    key: false,
    headers: [['Authorization', `Bearer ${staffKey}`], ...json],
    body: JSON.stringify(category!.value),
  })
  const answer = await exchange(port, wire(request), false)
  if (!added.has(name)) {
    t.equal(answer.status, 201, `${contract.urlOf('createCategory')}: a category for the pets`)
    added.add(name)
    return
  }
  t.strictSame(
    [answer.status, (JSON.parse(answer.body.toString('utf8')) as { code?: string }).code],
    [409, 'category_name_taken'],
    `${contract.urlOf('createCategory')}: the category for the pets, added through an earlier version, is there already`,
  )
}

async function holds(t: Test, options: { DATABASE_URL?: string } = {}) {
  const withRoles = (key: string, roles: ReadonlySet<string>) => `${key}:${[...roles].join('+')}`
  const app = await build(t, { ...options, API_KEYS: [testKey, withRoles(otherKey, otherRoles), withRoles(staffKey, staffRoles)] })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  // (the categories added for the pets, by name: the versions share the store)
  const added = new Set<string>()
  for (const version of versions) await t.test(`version ${version.contract.version[0]} (${version.contract.basePath})`, (t) => holdsIn(t, version, port, added))
}

/** The known requests, then the generated ones, of one version, to the server listening on `port`. */
async function holdsIn(t: Test, version: Version, port: number, added: Set<string>) {
  await prepare(t, version, port, added)
  for (const [name, request] of knownRequests(version)) {
    const answer = await exchange(port, wire(request), request.method === 'HEAD')
    const what = `${name}: ${request.method} ${request.target.path.slice(0, 40)}`
    t.strictSame(problems(version, request, answer), [], `${what} is answered by the rules (${answer.status})`)
  }
  const seen = new Map<string, number>()
  const property = fc.asyncProperty(anyRequest(version), async (request) => {
    const bytes = wire(request)
    const answer = await exchange(port, bytes, request.method === 'HEAD')
    const key = `${expectation(version, request).operation?.id ?? '-'} ${answer.status}`
    seen.set(key, (seen.get(key) ?? 0) + 1)
    const found = problems(version, request, answer)
    if (found.length > 0) {
      throw new Error(
        `${found.join('; ')}\nrequest: ${JSON.stringify(bytes.toString('latin1').slice(0, 600))}\n` +
          `answer: ${answer.status} ${JSON.stringify(answer.headers)} ${answer.body.toString('utf8').slice(0, 300)}`,
      )
    }
  })
  const started = Date.now()
  const details = await fc.check(property, {
    numRuns,
    ...(process.env.FC_SEED && { seed: Number(process.env.FC_SEED) }),
    includeErrorInReport: true,
    plugins: [fc.interruptAfterTimeLimit(timeLimitMs), fc.timeout(exchangeTimeoutMs + 1_000)],
  })
  const answers = [...seen].sort().map(([key, n]) => `${key}×${n}`)
  t.comment(`${details.numRuns} runs in ${Date.now() - started} ms (seed ${details.seed}); answers: ${answers.join(', ')}`)
  if (details.failed) return t.fail(fc.defaultReportMessage(details) ?? 'the property failed')
  // interrupted by the time limit, the property still must have been tried in earnest
  t.ok(details.numRuns >= Math.min(numRuns, 100), `every answer kept the rules: ${details.numRuns} runs of ${numRuns} within ${timeLimitMs} ms`)
}

t.test('generated requests keep the rules on SQLite', (t) => holds(t))

t.test('generated requests keep the rules on PostgreSQL', { skip: postgresMissing }, async (t) => holds(t, { DATABASE_URL: await freshPostgres(t) }))

/**
 * Whether `value` is valid by `validate`. The model's Ajv runs every keyword (allErrors), so its
 * uniqueItems compares items of the wrong type too, with fast-deep-equal, which calls an item's
 * own `valueOf` (`{"valueOf": false}` throws): such a value breaks its items' schema already,
 * and is invalid.
 */
function validatesWithoutThrowing(validate: (value: unknown) => boolean, value: unknown): boolean {
  try {
    return validate(value)
  } catch {
    return false
  }
}
