/**
 * The answers of reads of one object made of the store alone (core/store-read.ts), kept for
 * the store's revision they were made at: while the revision stays the same, the same request (its URL,
 * the key's principal and roles) is answered what was answered, without its handler (no row
 * read, no version change made again). The revision is read at the end of the request's turn,
 * after the request arrived (core/shared-read.ts), so an answer kept is one of a state the
 * store was in while the request waited: a change committed before it has moved the revision,
 * and every answer kept before is forgotten then. A change committed between the revision's read
 * and the handler's rows makes an answer newer than its revision, never older; and no later
 * read sees that revision again (it only grows). (A page is not kept: its tag is known before it
 * is read, and a client polling it is answered 304, conditional.ts.)
 */
import type { FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyRequest {
    /** the store's revision read for this request ('' where none was) */
    storeRevision: string
  }
}

/** What a kept answer is to its keeper: anything an operation's handler answers. */
export interface KeptAnswers<A> {
  /** the answer kept for this request at its revision, if any */
  find(request: FastifyRequest): A | undefined
  /** keeps `answer` for this request at its revision */
  keep(request: FastifyRequest, answer: A): void
}

/** Answers by the key's principal, then its roles (one set per grant), then the URL: each
 * looked up as it is, no text made per request (a view's text cost more to hash than the row
 * it saved to read). */
type ByView<A> = Map<string, Map<ReadonlySet<string>, Map<string, A>>>

/**
 * The answers kept for one revision, at most `limit` in size (one for an answer, and one for
 * each 256 characters of its URL), all forgotten when the revision moves or the limit would be
 * passed.
 */
export function keptAnswers<A>(limit: number = keptLimit): KeptAnswers<A> {
  let revision = ''
  let kept: ByView<A> = new Map()
  let size = 0
  return {
    find(request) {
      if (request.storeRevision === '' || request.storeRevision !== revision) return undefined
      return kept.get(request.principal)?.get(request.roles)?.get(request.url)
    },
    keep(request, answer) {
      if (request.storeRevision === '') return
      const weight = 1 + Math.ceil(request.url.length / 256)
      if (weight > limit) return
      if (request.storeRevision !== revision || size + weight > limit) {
        revision = request.storeRevision
        kept = new Map()
        size = 0
      }
      let byRoles = kept.get(request.principal)
      if (byRoles === undefined) kept.set(request.principal, (byRoles = new Map<ReadonlySet<string>, Map<string, A>>()))
      let byUrl = byRoles.get(request.roles)
      if (byUrl === undefined) byRoles.set(request.roles, (byUrl = new Map<string, A>()))
      byUrl.set(request.url, answer)
      size += weight
    },
  }
}

/** How much is kept: 32,768 (16,384 pets read by id, each with its URL), some megabytes. */
const keptLimit = 32 * 1024
