import http from 'node:http'
import https from 'node:https'
import type { LookupFunction } from 'node:net'
import type { Target } from './target.js'

/** The most of a receiver's answer that is read; the rest is not. */
export const answerCapBytes = 4096

/** How an attempt went: the status it was answered with, or why it got none. */
export type Answer = { status: number } | { error: 'timeout' | 'unreachable'; detail: string }

/**
 * POSTs `body` to the target, connecting to its checked address (TLS still checks the
 * certificate against the URL's host name). A redirect is an answer like any other, not
 * followed; no more than answerCapBytes of the body are read; no answer within `timeoutMs`
 * is a timeout. `signal` cuts the attempt short (shutdown).
 */
export function post(target: Target, headers: Record<string, string>, body: string, timeoutMs: number, signal?: AbortSignal): Promise<Answer> {
  const { url, address, family } = target
  // the connection's one lookup answers the address that was checked (of a family given, so
  // that Node asks for one address, not for all of them as happy eyeballs would)
  const pinned = ((_hostname, _options, callback) => callback(null, address, family)) as LookupFunction
  return new Promise<Answer>((resolve) => {
    const client = url.protocol === 'https:' ? https : http
    const request = client.request(url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'petstore-webhooks',
      },
      lookup: pinned,
      family,
      agent: false,
      signal,
    })
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
    let answered = false
    request.on('response', (response) => {
      answered = true
      resolve({ status: response.statusCode! })
      let read = 0
      response.on('data', (chunk: Buffer) => {
        read += chunk.length
        if (read >= answerCapBytes) response.destroy()
      })
      response.on('close', () => clearTimeout(timer))
      response.on('error', () => {})
    })
    request.on('error', (error) => {
      clearTimeout(timer)
      if (answered) return
      resolve({ error: /^no answer within/.test(error.message) ? 'timeout' : 'unreachable', detail: error.message })
    })
    request.end(body)
  })
}
