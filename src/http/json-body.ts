import { isUtf8 } from 'node:buffer'
import type { IncomingMessage } from 'node:http'
import type { FastifyRequest } from 'fastify'
import secureJson from 'secure-json-parse'
import { ApiError } from '../core/errors.js'
import { unsupportedMediaType } from './error-handler.js'
import { declaresBody } from './linger.js'

export interface JsonBodyLimits {
  /** bytes */
  bodyLimit: number
  /** the longest pause allowed while a body arrives */
  idleTimeoutMs: number
}

/** An operation that takes no body (deleteWebhook, rotateWebhookSecret…). */
const takesNoBody = (request: FastifyRequest) => request.routeOptions.schema?.body === undefined

/** Such an operation, asked without a body: whatever its Content-Type says (an SDK may name one
 * for an empty POST), nothing is read. */
const nothingToRead = (request: FastifyRequest) => !declaresBody(request.raw) && takesNoBody(request)

/** The parser of every other media type, and of a body without a Content-Type: a 415, unless
 * there is nothing to read (nothingToRead), or no operation to read it for (the 404 or 405 does
 * not depend on the body). A body sent without a Content-Type to an operation that takes none
 * (a chunked POST with nothing in it, as some clients send) names no type to refuse: it is read,
 * within the limits, and ignored, as a JSON body there is. */
export function otherMediaTypes(limits: JsonBodyLimits) {
  return (request: FastifyRequest, payload: IncomingMessage, done: (error: Error | null) => void) => {
    if (request.is404 || nothingToRead(request)) return done(null)
    if (request.headers['content-type'] !== undefined || !takesNoBody(request)) return done(unsupportedMediaType(request))
    if (Number(request.headers['content-length']) > limits.bodyLimit) return done(tooLarge(limits.bodyLimit))
    readBody(payload, limits, (error) => done(error))
  }
}

/**
 * The one body parser: JSON, read so that what is acknowledged is exactly what was sent. A body
 * is refused when it is larger than bodyLimit (413), pauses longer than idleTimeoutMs (408),
 * declares a charset other than UTF-8 or a content coding (415), is not UTF-8 or not JSON (400
 * malformed_json), or holds a string that is not Unicode, such as a lone surrogate `"\ud800"`
 * that no store could keep as it is (400 invalid_request).
 */
export function jsonBodyParser(limits: JsonBodyLimits) {
  return (request: FastifyRequest, payload: IncomingMessage, done: (error: Error | null, body?: unknown) => void) => {
    // No operation serves it: the 404 or 405 does not depend on the body, which stays unread
    // (the connection then closes, see request-hooks.ts).
    if (request.is404 || nothingToRead(request)) return done(null)
    const refusal = refuseHeaders(request, limits.bodyLimit)
    if (refusal) return done(refusal)
    readBody(payload, limits, (error, bytes) => {
      if (error) return done(error)
      // (an empty body, chunked say, where the operation takes none: no body)
      if (bytes!.length === 0 && takesNoBody(request)) return done(null)
      let body: unknown
      try {
        body = parse(bytes!)
      } catch (error) {
        return done(error as Error)
      }
      done(null, body)
    })
  }
}

/** Reads a request's body whole: its bytes, or the error that ended it (413 past bodyLimit, 408
 * after a pause longer than idleTimeoutMs, 400 when the client goes away mid-body). */
function readBody(payload: IncomingMessage, { bodyLimit, idleTimeoutMs }: JsonBodyLimits, done: (error: Error | null, bytes?: Buffer) => void) {
  const chunks: Buffer[] = []
  let received = 0
  const finish = (error: Error | null, bytes?: Buffer) => {
    clearTimeout(idle)
    payload.removeListener('data', onData).removeListener('end', onEnd).removeListener('error', onError)
    // what the client still sends is read and dropped (see linger.ts), never left unread
    payload.resume()
    done(error, bytes)
  }
  // (one timer for the whole body, set again at each chunk)
  const idle = setTimeout(() => finish(new ApiError('request_timeout', `The request body paused for more than ${idleTimeoutMs / 1000} s`)), idleTimeoutMs)
  const onData = (chunk: Buffer) => {
    received += chunk.length
    if (received > bodyLimit) return finish(tooLarge(bodyLimit))
    chunks.push(chunk)
    idle.refresh()
  }
  const onEnd = () => finish(null, Buffer.concat(chunks, received))
  // the client went away mid-body: no one will read the answer, but the log will
  const onError = () => finish(new ApiError('invalid_request', 'The connection closed before the request body ended'))
  payload.on('data', onData).on('end', onEnd).on('error', onError)
}

function refuseHeaders(request: FastifyRequest, bodyLimit: number): ApiError | undefined {
  // (this parser is chosen by the Content-Type: it is there)
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(request.headers['content-type']!)?.[1]
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    return new ApiError('unsupported_media_type', `Unsupported charset ${JSON.stringify(charset)}: send application/json in UTF-8`)
  }
  const coding = request.headers['content-encoding']
  if (coding !== undefined && coding.trim().toLowerCase() !== 'identity') {
    return new ApiError('unsupported_media_type', `Unsupported Content-Encoding ${JSON.stringify(coding)}: send the body uncompressed`)
  }
  if (Number(request.headers['content-length']) > bodyLimit) return tooLarge(bodyLimit)
  return undefined
}

const tooLarge = (bodyLimit: number) => new ApiError('payload_too_large', `The request body is larger than ${bodyLimit} bytes`)

function parse(bytes: Buffer): unknown {
  if (bytes.length === 0) throw new ApiError('invalid_request', 'The request body is empty: send a JSON object')
  if (!isUtf8(bytes)) throw new ApiError('malformed_json', 'The request body is not valid UTF-8')
  const text = bytes.toString('utf8')
  let body: unknown
  try {
    // Keys that would reach an object's prototype are refused outright, not dropped.
    body = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
  } catch (error) {
    throw (error as Error).message.startsWith('Object contains forbidden prototype property')
      ? new ApiError('invalid_request', 'The request body must not hold the property "__proto__" or "constructor.prototype"')
      : new ApiError('malformed_json', 'The request body is not valid JSON')
  }
  // Only an escape (\ud800) can put a surrogate into a string of valid UTF-8.
  if (/\\u[dD][89a-fA-F]/.test(text)) {
    const where = unpairedSurrogate(body, 'body')
    if (where) throw new ApiError('invalid_request', `${where} is not valid Unicode: it holds an unpaired surrogate`)
  }
  return body
}

/** Where in a JSON value a string (value or key) holds an unpaired UTF-16 surrogate. */
function unpairedSurrogate(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.isWellFormed() ? undefined : path
  if (typeof value !== 'object' || value === null) return undefined
  for (const [key, item] of Object.entries(value)) {
    if (!key.isWellFormed()) return `${path} (a property name)`
    const found = unpairedSurrogate(item, `${path}/${key}`)
    if (found) return found
  }
  return undefined
}
