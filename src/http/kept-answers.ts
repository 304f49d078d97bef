/**
 * The answers of reads of one object made of the store alone (core/store-read.ts), kept for
 * the revision of the part of the store they were made at (storage/revision.ts): while that
 * revision stays the same, the same request (its URL, the key's principal and roles) is answered
 * what was answered, without its handler (no row read, no version change made again). The
 * revision is read at the end of the request's turn, after the request arrived
 * (core/shared-read.ts), so an answer kept is one of a state the store was in while the request
 * waited: a change of its part committed before it has moved the revision, and the answer kept
 * before is not given again. A change committed between the revision's read and the handler's
 * rows makes an answer newer than its revision, never older; and no later read sees that
 * revision again (it only grows). A change of another part (another key's orders) forgets
 * nothing. (A page is not kept: its tag is known before it is read, and a client polling it is
 * answered 304, conditional.ts.)
 */
import type { FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyRequest {
    /** the revision of the part of the store this request reads, read for it ('' where none was) */
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
type ByView<A> = Map<string, Map<ReadonlySet<string>, Map<string, Kept<A>>>>

/** An answer, and the revision of its part it was made at. */
interface Kept<A> {
  revision: string
  answer: A
}

/**
 * The answers kept, each for its revision, at most `limit` in size (one for an answer, and one
 * for each 256 characters of its URL), all forgotten when the limit would be passed. An answer
 * of an older revision is replaced by the next one to the same request.
 */
export function keptAnswers<A>(limit: number = keptLimit): KeptAnswers<A> {
  let kept: ByView<A> = new Map()
  let size = 0
  return {
    find(request) {
      if (request.storeRevision === '') return undefined
      const found = kept.get(request.principal)?.get(request.roles)?.get(request.url)
      return found?.revision === request.storeRevision ? found.answer : undefined
    },
    keep(request, answer) {
      if (request.storeRevision === '') return
      const weight = 1 + Math.ceil(request.url.length / 256)
      if (weight > limit) return
      if (size + weight > limit) {
        kept = new Map()
        size = 0
      }
      let byRoles = kept.get(request.principal)
      if (byRoles === undefined) kept.set(request.principal, (byRoles = new Map<ReadonlySet<string>, Map<string, Kept<A>>>()))
      let byUrl = byRoles.get(request.roles)
      if (byUrl === undefined) byRoles.set(request.roles, (byUrl = new Map<string, Kept<A>>()))
      // (an answer replaced is counted again: the size bounds what was kept since the last start over)
      byUrl.set(request.url, { revision: request.storeRevision, answer })
      size += weight
    },
  }
}

/** How much is kept: 32,768 (16,384 pets read by id, each with its URL), some megabytes. */
const keptLimit = 32 * 1024
