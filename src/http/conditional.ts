/**
 * Conditional requests (RFC 9110 section 13): the entity tag of an answer, `If-None-Match` on
 * reads (304) and the comparison `If-Match` asks of a change (412), each where an operation's
 * definition declares it (the contract model's `conditional`).
 */
import { createHmac, hash } from 'node:crypto'
import type { FastifyReply, FastifyRequest, onSendHookHandler, preHandlerHookHandler } from 'fastify'
import type { Contract, Operation } from '../contract/model.js'
import type { PartOf } from '../core/store-read.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** the tag of the answer, where it was known before the answer was made ('' where not) */
    knownTag: string
  }
}

/** What a tagged answer says of caching: the client may keep it, no shared cache may, and it
 * is checked with the server (If-None-Match) before each use (RFC 9111 sections 5.2.2.4, 5.2.2.7). */
const revalidate = 'private, no-cache'

/**
 * The entity tag of an answer's body as a version of the API sends it: a strong validator (the
 * bytes sent decide it), the version's major first, so that one object read through two
 * versions has two tags even where their bytes agree. SHA-1 of the bytes, in base64url: a
 * digest, not a secret, chosen for its speed.
 */
export const entityTag = (major: number, body: string): string => `"v${major}-${hash('sha1', body, 'base64url')}"`

/** An entity tag as a list field names it: its opaque part, and whether it is weak (`W/`). */
interface ListedTag {
  weak: boolean
  opaque: string
}

const listed = /(W\/)?("[^"]*")/g

/** The entity tags an If-None-Match or If-Match field lists, or `*`. The spec's pattern refused
 * any other value before the request got here; it reads the list as RFC 9110 section 5.6.1 asks
 * of a recipient (white space around the commas, empty elements), so the tags are all that is
 * left to pick out (a tag may hold a comma: the quotes, not the commas, delimit it). */
export function tagsOf(field: string): ListedTag[] | '*' {
  if (field.trim() === '*') return '*'
  return [...field.matchAll(listed)].map(([, weak, opaque]) => ({ weak: weak !== undefined, opaque: opaque! }))
}

/** If-None-Match: whether the current tag is one of those listed, compared weakly (RFC 9110
 * section 8.8.3.2: `W/"x"` matches `"x"`), or the field is `*`. */
export function noneMatchHolds(field: string, tag: string): boolean {
  // (a client revalidating sends back the one tag it was given: no list to read)
  if (field === tag) return true
  const tags = tagsOf(field)
  return tags === '*' || tags.some(({ opaque }) => opaque === tag)
}

/** If-Match: whether the current tag is one of those listed, compared strongly (a weak tag never
 * matches), or the field is `*` (the object exists: the caller has it). */
export function matchHolds(field: string, tag: string): boolean {
  const tags = tagsOf(field)
  return tags === '*' || tags.some(({ weak, opaque }) => !weak && opaque === tag)
}

/** The version whose representation a tag of this service is of (`"v1-…"`: 1), if it is one. */
const majorOfTag = (opaque: string) => /^"v([1-9][0-9]*)-/.exec(opaque)?.[1]

/**
 * Why an If-Match field that is not `*` matched no tag of `object` (`order 7`) as version `major`
 * shows it: the message of its 412. A tag is of the version it was read through, so a tag of
 * another version's representation never matches, though the object may not have changed: that
 * is said, not "has changed"; so are a list of weak tags alone, and of none.
 */
export function ifMatchMissed(field: string, major: number, object: string): string {
  const tags = tagsOf(field) as ListedTag[]
  if (tags.length === 0) return `If-Match lists no entity tag, so none is ${object}'s: send the ETag your read of it gave`
  const ours = tags.filter(({ opaque }) => majorOfTag(opaque) === String(major))
  if (ours.some(({ weak }) => !weak))
    return `${object[0]!.toUpperCase()}${object.slice(1)} has changed since: its ETag is not one If-Match names (read it again)`
  if (ours.length > 0) return `If-Match names only weak tags (W/), which never match ${object}'s: send its ETag as read`
  const others = [...new Set(tags.map(({ opaque }) => majorOfTag(opaque)).filter((other) => other !== undefined))]
  const of = others.length === 0 ? '' : `, only of version ${others.join(' and ')}'s representation`
  return `If-Match names no tag of ${object} in version ${major}${of}: send the ETag a read through version ${major} gives`
}

/**
 * The If-Match of a request to change an object: undefined without one; else a test of the
 * object as it is now, by the tag its 200 would carry through this request's version (what the
 * route's serializer writes of it for a 200), to be run in the change's transaction.
 */
export function ifMatchOf(request: FastifyRequest, reply: FastifyReply): ((current: object) => boolean) | undefined {
  const field = request.headers['if-match']
  if (field === undefined) return undefined
  return (current) => matchHolds(field, entityTag(request.apiVersion, reply.serializeInput(current as Record<string, unknown>, '200') as string))
}

/**
 * The hook that tags an operation's 200 (its ETag) and, where it takes If-None-Match (a read),
 * says `Cache-Control: private, no-cache` and answers 304 without the body when the tag matches;
 * undefined for an operation whose 200 carries no tag. A tag known before the body was made
 * (revisionTagging's) is the one sent.
 */
export function tagging({ conditional }: Operation, major: number): onSendHookHandler | undefined {
  if (!conditional.tagged) return undefined
  const { ifNoneMatch } = conditional
  return (request, reply, payload, done) => {
    if (reply.statusCode !== 200) return done(null, payload)
    const tag = request.knownTag || entityTag(major, payload as string)
    reply.header('ETag', tag)
    // (a read's answer may be kept, and revalidated; a change's, whose tag is for If-Match, is not kept)
    if (!ifNoneMatch) return done(null, payload)
    reply.header('Cache-Control', revalidate)
    const field = request.headers['if-none-match']
    if (field === undefined || !noneMatchHolds(field, tag)) return done(null, payload)
    // (RFC 9110 section 15.4.5: the 200's validator and caching fields, no body nor its type;
    // HEAD's, which sends no body anyway, its Content-Length as the 200's, which section 8.6 allows)
    reply.code(304).removeHeader('content-type')
    done(null, request.method === 'HEAD' ? payload : null)
  }
}

/**
 * A page's tag known before the page is read (where the operation is a paged read, and its
 * handler answers from one part of the store alone, store-read.ts: a page that shows the clock
 * keeps its bytes' tag): a MAC, with the database's tag key, of what decides the page, which is
 * the version's document (the shapes it shows), the operation, the request's URL (path and
 * query: the filter, the limit, the cursor), the key's view (its principal and roles) and the
 * revision of the part of the store the page is of (the catalogue; staff's every order; a
 * client's own orders), read BEFORE the page. The tag moves with that part alone, so with
 * nothing the key cannot see through the operation (another key's orders are another part),
 * and without the key it reveals nothing, the revision included. A change committed between
 * the two reads makes the tag older than the page, never newer: the client's next request is a
 * 200, never a 304 over a changed page. A matching If-None-Match is answered 304 here, before
 * the handler runs: no page read, nothing serialized. Otherwise the 200 carries this tag
 * (tagging, above). `*` is left to the handler (a page that is not there, a 404, has no
 * representation to match it).
 *
 * Single objects keep the tag of their bytes (entityTag): one row read by its key costs little
 * more than the revision, a webhook subscription shows what the clock changes, and an order's
 * tag is what updateOrder's If-Match compares, in its transaction, with the order as it is.
 *
 * The tags of the last requests are kept (their views up to `keptChars` characters in all, then
 * forgotten together): a client polling a page asks the same URL with the same key until the
 * store changes, and its tag is then looked up, not made again (in a profile under load, the
 * hash took 12 µs of the 40 µs a 304 spent in the service's own code).
 */
export function revisionTagging(
  operation: Operation,
  contract: Contract,
  { revision, partOf, secret }: { revision: (part: string) => Promise<string>; partOf: PartOf; secret: string },
): preHandlerHookHandler | undefined {
  if (!(operation.conditional.ifNoneMatch && operation.paged && operation.roles !== undefined)) return undefined
  const major = contract.version[0]
  const decided = `${hash('sha1', contract.source, 'base64url')}\n${operation.id}\n`
  const kept = new Map<string, string>()
  let keptSize = 0
  const tagOf = (request: FastifyRequest, part: string, now: string) => {
    const view = `${request.url}\n${request.principal}\n${rolesNamed(request.roles)}\n${part}\n${now}`
    let tag = kept.get(view)
    if (tag === undefined) {
      tag = `"v${major}-${createHmac('sha256', secret).update(decided).update(view).digest().toString('base64url', 0, macBytes)}"`
      // (a URL may be as long as a client likes, up to the header limit: the memory kept is bounded in characters)
      if (keptSize + view.length > keptChars) {
        kept.clear()
        keptSize = 0
      }
      kept.set(view, tag)
      keptSize += view.length
    }
    return tag
  }
  return (request, reply, done) => {
    const part = partOf(request)
    const answer = (now: string) => {
      const tag = tagOf(request, part, now)
      const field = request.headers['if-none-match']
      if (field === undefined || field.trim() === '*' || !noneMatchHolds(field, tag)) {
        request.knownTag = tag
        return done()
      }
      // (what tagging sends with a 304: the tag and the caching fields)
      reply.code(304).header('ETag', tag).header('Cache-Control', revalidate).send()
    }
    // (a store that fails rejects: Fastify's error handler answers it, a 503)
    revision(part).then(answer, done)
  }
}

/** How much of a page tag's MAC is sent: 160 bits, as long as a tag of bytes (27 characters). */
const macBytes = 20

/** How much of the views whose page tags it keeps an operation holds (revisionTagging), in
 * characters: a few hundred polled pages, some hundred kilobytes. */
const keptChars = 64 * 1024

const named = new WeakMap<ReadonlySet<string>, string>()

/** A key's roles in one order, as text: worked out once per set (a key's roles are one set). */
function rolesNamed(roles: ReadonlySet<string>): string {
  let text = named.get(roles)
  if (text === undefined) named.set(roles, (text = [...roles].sort().join(' ')))
  return text
}
