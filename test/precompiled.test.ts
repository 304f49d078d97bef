import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { Validator as UpstreamValidator } from '@seriousme/openapi-schema-validator'
import t from 'tap'
import { configValidator } from '../src/core/config.js'
import { loadContract, newestSpecPath, parsedSpecModule, specPaths } from '../src/contract/load.js'
import { loadPrecompiled, Validator } from '../src/http/spec-validator.js'
import { projectRoot } from '../src/core/paths.js'

// What `npm run generate` compiles ahead of the start (generated/openapi.cjs, openapi-schema.cjs,
// config.cjs) is used when it matches, gives the same answers as compiling at start, and is
// done without when it is missing or out of date.

const emptyDir = () => mkdtempSync(join(tmpdir(), 'petstore-precompiled-'))

t.test('each spec: the document parsed at generate time is the one parsing gives', async (t) => {
  for (const specPath of specPaths) {
    const fromGenerated = loadContract(specPath)
    const parsed = loadContract(specPath, false)
    t.strictSame(fromGenerated.document, parsed.document, specPath)
    t.equal(fromGenerated.source, parsed.source, 'the text is still read, to be served byte for byte')
    t.not(loadContract(specPath).document, fromGenerated.document, 'each contract has a document of its own')

    // generated/ missing, or made from another text: the YAML is bundled
    t.strictSame(loadContract(specPath, emptyDir()).document, parsed.document)
  }
  // the oldest, an overlay: made from its own text as it is, but from openapi.yaml as it was: made anew
  const specPath = specPaths[0]!
  const name = relative(projectRoot, specPath)
  const parsed = loadContract(specPath, false)
  const sha256 = (file: string) => createHash('sha256').update(readFileSync(file, 'utf8')).digest('hex')
  const recorded = (sources: Record<string, string>, spec = name, document: object = parsed.document) => {
    const dir = emptyDir()
    mkdirSync(join(dir, 'v1'))
    writeFileSync(
      join(dir, 'v1', parsedSpecModule),
      `module.exports = ${JSON.stringify({ spec, sources, documentJson: JSON.stringify({ ...document, recorded: true }) })}`,
    )
    writeFileSync(join(dir, 'v1', 'openapi.yaml'), 'the text recorded')
    return dir
  }
  const base = 'openapi.yaml'
  const own = { [name]: sha256(specPath) }
  t.strictSame(loadContract(specPath, recorded({ ...own, [base]: 'other' })).document, parsed.document, 'the document it applies to changed since')
  t.strictSame(
    loadContract(specPath, recorded({ [name]: 'other', [base]: sha256(join(projectRoot, base)) })).document,
    parsed.document,
    'its own text changed since',
  )
  t.strictSame(loadContract(specPath, recorded({ ...own, 'contract/versions/gone.yaml': 'x' })).document, parsed.document, 'a source that is no more')
  const everySource = { ...own, [base]: sha256(join(projectRoot, base)) }
  t.strictSame(
    loadContract(specPath, recorded({ [base]: everySource[base] }, base, loadContract(newestSpecPath, false).document)).document,
    { ...parsed.document, recorded: true },
    "another document's, made of the same files, is not taken for its own; the document it applies to is",
  )
  const current = loadContract(specPath, recorded(everySource))
  t.strictSame(
    [current.document, current.source],
    [{ ...parsed.document, recorded: true }, 'the text recorded'],
    'every source as recorded: the recorded document and text',
  )
})

t.test("glue's validator: the meta-schema compiled at generate time, the same verdicts", async (t) => {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- only its type is read
  t.type(UpstreamValidator.prototype.getAjvValidator, 'function', 'the upstream method it stands in for is still there')
  const precompiled = loadPrecompiled()!
  t.equal(precompiled.openapiVersion, '3.1')
  t.equal(new Validator().getAjvValidator('3.1'), precompiled, 'the generated one, for the OpenAPI version of the documents')
  t.type(new Validator().getAjvValidator('3.0'), 'function', 'another version: compiled as upstream does')
  t.equal(loadPrecompiled(emptyDir()), undefined)

  const { document } = loadContract(newestSpecPath)
  const broken = structuredClone(document) as unknown as Record<string, Record<string, unknown>>
  delete broken.info!.title
  broken.paths!['/pets'] = { get: { responses: 'none' } }
  for (const spec of [document, broken]) {
    const ours = await new Validator().validate(structuredClone(spec) as never)
    const upstream = await new UpstreamValidator().validate(structuredClone(spec) as never)
    t.strictSame(ours, upstream)
  }
  t.equal((await new Validator().validate(structuredClone(broken) as never)).valid, false, 'a broken spec is refused')
})

t.test('the environment: the generated validator, or one compiled now, alike', async (t) => {
  const generated = configValidator()
  t.type((generated as unknown as { schemaDigest: string }).schemaDigest, 'string', 'generated/config.cjs')
  const stale = emptyDir()
  writeFileSync(join(stale, 'config.cjs'), 'module.exports = () => true; module.exports.schemaDigest = "other"')
  for (const validate of [configValidator(emptyDir()), configValidator(stale)]) {
    t.not(validate, generated)
    for (const env of [{}, { PORT: '8080', API_KEYS: 'a,b', OTHER: 'x' }, { PORT: '70000', HOST: '' }, { LOG_LEVEL: 'verbose' }]) {
      const [ours, theirs] = [{ ...env }, { ...env }]
      t.equal(validate(ours), generated(theirs), JSON.stringify(env))
      t.strictSame(ours, theirs, 'coerced, defaulted and pruned alike')
      t.strictSame(validate.errors, generated.errors)
    }
  }
})
