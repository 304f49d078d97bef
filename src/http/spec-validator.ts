import { join } from 'node:path'
import { Validator as UpstreamValidator } from '@seriousme/openapi-schema-validator'
import { generatedDir, loadGenerated } from '../core/paths.js'

/**
 * fastify-openapi-glue checks the spec against the OpenAPI meta-schema at every start, with a
 * `Validator` of @seriousme/openapi-schema-validator that compiles that meta-schema with Ajv
 * first: most of the server's start-up time, and glue has no option to skip or cache it.
 *
 * This is the same Validator, made to use the meta-schema's validator that `npm run generate`
 * compiled (Ajv standalone, same Ajv class, options and formats: generated/openapi-schema.cjs)
 * for the OpenAPI version it was made for. The spec is still checked at every start, against
 * the same rules; only the compilation moved to generate time. Any other version, or a missing
 * file, takes the upstream way. The build (scripts/build.ts) gives glue this module in place
 * of the package; everything else sees the package itself.
 */
export class Validator extends UpstreamValidator {
  override getAjvValidator(version: string): unknown {
    return (version === precompiled?.openapiVersion && precompiled) || upstreamGetAjvValidator.call(this, version)
  }
}

/** The upstream method this one stands in for: internal, not in the package's types (the test
 * of this module fails should it be renamed). */
declare module '@seriousme/openapi-schema-validator' {
  interface Validator {
    getAjvValidator(version: string): unknown
  }
}
// eslint-disable-next-line @typescript-eslint/unbound-method -- called on the instance, with .call(this)
const upstreamGetAjvValidator = UpstreamValidator.prototype.getAjvValidator

/** The compiled meta-schema validator, as generated/openapi-schema.cjs exports it. */
export interface PrecompiledSchema {
  (data: unknown): boolean
  errors?: unknown[] | null
  /** `3.0`: the OpenAPI version whose meta-schema it checks */
  openapiVersion: string
}

export const specSchemaModule = 'openapi-schema.cjs'

export function loadPrecompiled(dir: string = generatedDir): PrecompiledSchema | undefined {
  return loadGenerated<PrecompiledSchema>(join(dir, specSchemaModule))
}

const precompiled = loadPrecompiled()
