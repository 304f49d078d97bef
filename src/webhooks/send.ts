import http from 'node:http'
import https from 'node:https'
import type { LookupFunction } from 'node:net'
import type { Target } from './target.js'

/** The most of a receiver's answer that is read; the rest is not. */
export const answerCapBytes = 4096

/** How an attempt went: the status it was answered with (and its Retry-After), or why it got none. */
export type Answer = { status: number; retryAfter?: string } | { error: 'timeout' | 'unreachable'; detail: string }

/**
 * Kept-alive connections to receivers, one pool per origin and checked address: an attempt
 * reuses a connection only to the very address it checked (a name that now resolves elsewhere
 * gets a pool, and connections, of its own). An idle connection is closed after `idleMs`: before
 * the receivers' own idle limits (Node's is 5 s), so that a request seldom meets a connection its
 * server is closing. Pools with no connection left are dropped every `sweepEveryMs`.
 */
export class Connections {
  readonly #pools = new Map<string, http.Agent>()
  readonly #idleMs: number
  readonly #sweeper: NodeJS.Timeout

  constructor({ idleMs = 4_000, sweepEveryMs = 60_000 } = {}) {
    this.#idleMs = idleMs
    this.#sweeper = setInterval(() => this.#sweep(), sweepEveryMs).unref()
  }

  /** pools kept */
  get size() {
    return this.#pools.size
  }

  agentFor({ url, address }: Target): http.Agent {
    const key = `${url.protocol}//${url.host} ${address}`
    let agent = this.#pools.get(key)
    if (agent === undefined) {
      const options = { keepAlive: true, timeout: this.#idleMs, scheduling: 'lifo' as const }
      agent = url.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options)
      this.#pools.set(key, agent)
    }
    return agent
  }

  #sweep() {
    for (const [key, agent] of this.#pools) {
      const empty = (sockets: NodeJS.ReadOnlyDict<unknown[]>) => Object.values(sockets).every((list) => list === undefined || list.length === 0)
      if (empty(agent.sockets) && empty(agent.freeSockets) && empty(agent.requests)) {
        agent.destroy()
        this.#pools.delete(key)
      }
    }
  }

  close() {
    clearInterval(this.#sweeper)
    for (const agent of this.#pools.values()) agent.destroy()
    this.#pools.clear()
  }
}

/**
 * POSTs `body` to the target, connecting to its checked address (TLS still checks the
 * certificate against the URL's host name), on a kept-alive connection of `connections` when
 * given (else on a connection of its own). A redirect is an answer like any other, not
 * followed; no more than answerCapBytes of the body are read; no answer within `timeoutMs` is
 * a timeout. `signal` cuts the attempt short (shutdown). A kept-alive connection that the
 * receiver closed as the request went out is tried once more, on a new connection.
 */
export function post(
  target: Target,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  signal?: AbortSignal,
  connections?: Connections,
): Promise<Answer> {
  return send(target, headers, body, timeoutMs, signal, connections).then((answer) =>
    'reused' in answer ? (send(target, headers, body, timeoutMs, signal, undefined) as Promise<Answer>) : answer,
  )
}

function send(
  target: Target,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  connections: Connections | undefined,
): Promise<Answer | { reused: true }> {
  const { url, address, family } = target
  // the connection's one lookup answers the address that was checked (of a family given, so
  // that Node asks for one address, not for all of them as happy eyeballs would)
  const pinned = ((_hostname, _options, callback) => callback(null, address, family)) as LookupFunction
  return new Promise((resolve) => {
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
      agent: connections?.agentFor(target) ?? false,
      signal,
    })
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
    let answered = false
    request.on('response', (response) => {
      answered = true
      const retryAfter = response.headers['retry-after']
      resolve(retryAfter === undefined ? { status: response.statusCode! } : { status: response.statusCode!, retryAfter })
      let read = 0
      response.on('data', (chunk: Buffer) => {
        read += chunk.length
        if (read >= answerCapBytes) response.destroy()
      })
      response.on('close', () => clearTimeout(timer))
      response.on('error', () => {})
    })
    request.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      if (answered) return
      if (request.reusedSocket && error.code === 'ECONNRESET') return resolve({ reused: true })
      resolve({ error: /^no answer within/.test(error.message) ? 'timeout' : 'unreachable', detail: error.message })
    })
    request.end(body)
  })
}
