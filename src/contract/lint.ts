/**
 * The contract model's rules as a Spectral function (`npm run lint:owasp`, .spectral.yaml): every
 * problem the server would refuse the document for, where it is, in the same words. Spectral
 * loads JavaScript only: `npm run generate` bundles this module into generated/contract-rules.js.
 */
import type { OpenAPIV3 } from 'openapi-types'
import { readContract } from './model.js'

export function contractProblems(document: OpenAPIV3.Document): { message: string; path: (string | number)[] }[] {
  return readContract(document).problems.map(({ path, message }) => ({ message, path: [...path] }))
}
