import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

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

/** Events are not sent to this URL: the message says why, for the client (422) or the log. */
export class TargetRefused extends Error {}

/** DNS error codes that say the name has no address (rather than "not now"). */
const noSuchName = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA'])

/**
 * Checks `url` against the policy and resolves its host: every address it resolves to must be
 * public (a unicast address outside the loopback, private, link-local, shared, reserved and
 * other special ranges; cloud metadata services are link-local, private or shared), unless
 * the operator allows private ones. The attempt then connects to the address checked here, not
 * to whatever a second lookup would give (DNS rebinding). Throws TargetRefused, or the
 * resolver's error when it cannot answer now.
 */
export async function resolveTarget(url: string, policy: TargetPolicy, resolve: Resolve = systemResolve): Promise<Target> {
  const target = new URL(url)
  if (target.protocol !== 'https:' && !(policy.allowHttp && target.protocol === 'http:')) {
    throw new TargetRefused(`${target.protocol} URLs are not allowed: events are sent to https:// URLs only`)
  }
  if (target.username !== '' || target.password !== '') throw new TargetRefused('A webhook URL may not hold a user name or password')
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1')
  const addresses = isIP(host) !== 0 ? [{ address: host, family: isIP(host) }] : await resolveName(host, resolve)
  if (!policy.allowPrivate) {
    for (const { address } of addresses) {
      const range = rangeOf(address)
      if (range !== 'unicast') {
        const what = address === host ? host : `${host} resolves to ${address}, which`
        throw new TargetRefused(`${what} is a ${range} address: events are sent to public addresses only`)
      }
    }
  }
  return { url: target, ...addresses[0]! }
}

async function resolveName(host: string, resolve: Resolve) {
  try {
    const addresses = await resolve(host)
    if (addresses.length === 0) throw new TargetRefused(`${host} does not resolve to any address`)
    return addresses
  } catch (error) {
    if (noSuchName.has((error as NodeJS.ErrnoException).code ?? '')) throw new TargetRefused(`${host} does not resolve to any address`)
    throw error
  }
}

/** ipaddr.js's name for the range of `address` (`unicast` for a public one); an IPv4 address
 * written as IPv6 (::ffff:10.0.0.1) is judged as IPv4. */
function rangeOf(address: string): string {
  return ipaddr.isValid(address) ? ipaddr.process(address).range() : 'unparsable'
}
