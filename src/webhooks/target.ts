import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { judgeAddress } from './public-address.js'

/** What an operator allows beyond public https URLs (WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE). */
export interface TargetPolicy {
  allowHttp: boolean
  allowPrivate: boolean
}

/** A host name's addresses, as the system resolver gives them. */
export type Resolve = (hostname: string) => Promise<{ address: string; family: number }[]>

export const systemResolve: Resolve = (hostname) => lookup(hostname, { all: true, verbatim: true })

/** Where one attempt connects: the URL, and the address of its host that was checked. */
export interface Target {
  url: URL
  address: string
  family: number
}

/** Events are not sent to this URL: the message says why, in words for the client (422) or the log. */
export class TargetRefused extends Error {}

/** DNS error codes that say the name has no address (rather than "not now"). */
const noSuchName = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA'])

const publicOnly = 'webhooks are sent only to public internet addresses'

/** The URL's scheme and host as the client wrote them (`https://[::ffff:10.0.0.1]/`): what a
 * message quotes, rather than Node's normal form of it, and never the path or query. */
function writtenOrigin(url: string): string {
  // (every URL taken has a scheme and `//`: openapi.yaml's WebhookUrl pattern)
  return `${/^[^:/?#]+:\/\/[^/?#]*/.exec(url)![0]}/`
}

/**
 * Checks `url` against the policy and resolves its host: every address it resolves to must be
 * public (see public-address.ts), unless the operator allows private ones. The attempt then
 * connects to the address checked here, not to whatever a second lookup would give (DNS
 * rebinding). Throws TargetRefused, or the resolver's error when it cannot answer now.
 */
export async function resolveTarget(url: string, policy: TargetPolicy, resolve: Resolve = systemResolve): Promise<Target> {
  const written = writtenOrigin(url)
  const target = parseUrl(url)
  if (target.protocol !== 'https:' && !(policy.allowHttp && target.protocol === 'http:')) {
    throw new TargetRefused(`${written} is not an https:// URL: webhooks are sent only to https:// URLs`)
  }
  if (target.username !== '' || target.password !== '') throw new TargetRefused('A webhook URL may not hold a user name or password')
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1')
  const literal = isIP(host) !== 0
  const addresses = literal ? [{ address: host, family: isIP(host) }] : await resolveName(written, host, resolve)
  if (policy.allowPrivate) return { url: target, ...addresses[0]! }
  let first: Target | undefined
  for (const { address } of addresses) {
    const judged = judgeAddress(address)
    if (!judged.public) throw new TargetRefused(`${written} ${literal ? 'points' : 'resolves'} to ${judged.address}, ${judged.what}: ${publicOnly}`)
    first ??= { url: target, address: judged.address, family: judged.family }
  }
  return first!
}

/** `url` as Node reads it; TargetRefused when Node cannot read it (a port past 65535, a host
 * name with a character no host name holds), or when its host cannot be a host name: at
 * createWebhook, the client's mistake (400). */
export function parseUrl(url: string): URL {
  if (!URL.canParse(url)) throw new TargetRefused(`${writtenOrigin(url)} is not a URL that can be used: check its host name, and its port (at most 65535)`)
  const parsed = new URL(url)
  if (!canBeHostName(parsed.hostname)) {
    throw new TargetRefused(
      `${writtenOrigin(url)} is not a URL that can be used: a host name has at most 253 characters, in labels of 1 to 63 between its dots`,
    )
  }
  return parsed
}

/**
 * Whether a host, as Node wrote it (IDNs in their ASCII form), is an address or can be a DNS
 * name (RFC 1035: at most 253 characters without the root's final dot, labels of 1 to 63). A
 * name that cannot be one is never resolved: the system resolver refuses it as an error of its
 * own (EINVAL), not as a name without addresses.
 */
function canBeHostName(host: string): boolean {
  if (host.startsWith('[') || isIP(host) !== 0) return true
  const name = host.endsWith('.') ? host.slice(0, -1) : host
  return name.length <= 253 && name.split('.').every((label) => label.length >= 1 && label.length <= 63)
}

async function resolveName(written: string, host: string, resolve: Resolve) {
  const noAddress = () => new TargetRefused(`${written} does not resolve to any address`)
  try {
    const addresses = await resolve(host)
    if (addresses.length === 0) throw noAddress()
    return addresses
  } catch (error) {
    if (noSuchName.has((error as NodeJS.ErrnoException).code ?? '')) throw noAddress()
    throw error
  }
}
