import ipaddr from 'ipaddr.js'

/**
 * Whether an IP address is on the public internet, by an allow-list: an IPv4 address outside
 * every range of IANA's IPv4 Special-Purpose Address Registry (and outside multicast), an IPv6
 * address inside 2000::/3 (global unicast) and outside the special blocks of IANA's IPv6
 * registry there. Anything else is refused, so a range no list names is refused too.
 *
 * The IPv6 forms that carry an IPv4 address are judged by it: IPv4-mapped (::ffff:0:0/96,
 * connected to as that IPv4 address) and the well-known NAT64 prefix (64:ff9b::/96, connected to
 * as written, through the network's translator). The other carriers are refused whatever they
 * carry, the IPv4 address named when it is not public: IPv4-compatible (::/96, deprecated), 6to4
 * (2002::/16) and Teredo (2001::/32), which tunnel through relays of their own, and the local-use
 * NAT64 prefix (64:ff9b:1::/48), whose meaning is the local network's.
 */
export type Judgement =
  | { public: true; /** where to connect */ address: string; family: 4 | 6 }
  | {
      public: false
      /** the address judged: the IPv4 address an IPv6 one carries, when that decided */ address: string
      /** what it is, in words */ what: string
    }

type Range = [cidr: string, what: string]

const private_ = 'a private address'
const documentation = 'a documentation address'

// (the most specific first: the first range that holds an address names it)
const ipv4Special: Range[] = [
  ['255.255.255.255/32', 'the broadcast address'],
  ['0.0.0.0/8', 'an unspecified address'],
  ['10.0.0.0/8', private_],
  ['100.64.0.0/10', 'a shared address (carrier-grade NAT)'],
  ['127.0.0.0/8', 'a loopback address'],
  ['169.254.0.0/16', 'a link-local address'],
  ['172.16.0.0/12', private_],
  ['192.0.0.0/24', 'an address reserved for protocol assignments'],
  ['192.0.2.0/24', documentation],
  ['192.31.196.0/24', 'a special-purpose address (AS112 DNS)'],
  ['192.52.193.0/24', 'a special-purpose address (AMT)'],
  ['192.88.99.0/24', 'a special-purpose address (6to4 relay anycast)'],
  ['192.168.0.0/16', private_],
  ['192.175.48.0/24', 'a special-purpose address (AS112 DNS)'],
  ['198.18.0.0/15', 'a benchmarking address'],
  ['198.51.100.0/24', documentation],
  ['203.0.113.0/24', documentation],
  ['224.0.0.0/4', 'a multicast address'],
  ['240.0.0.0/4', 'a reserved address'],
]

/** The special blocks inside 2000::/3 (carriers of IPv4 addresses apart). */
const ipv6GlobalSpecial: Range[] = [
  ['2001::/23', 'an address reserved for protocol assignments'],
  ['2001:db8::/32', documentation],
  ['2620:4f:8000::/48', 'a special-purpose address (AS112 DNS)'],
  ['3fff::/20', documentation],
]

/** What lies outside 2000::/3, for the message: none of it is public. */
const ipv6Elsewhere: Range[] = [
  ['::/128', 'an unspecified address'],
  ['::1/128', 'a loopback address'],
  ['100::/64', 'a discard-only address'],
  ['fc00::/7', 'a private address (unique local)'],
  ['fe80::/10', 'a link-local address'],
  ['5f00::/16', 'a special-purpose address (segment routing)'],
  ['ff00::/8', 'a multicast address'],
]

const parsedRanges = (ranges: Range[]) => ranges.map(([cidr, what]) => ({ range: ipaddr.parseCIDR(cidr), what }))
const ipv4Ranges = parsedRanges(ipv4Special)
const ipv6GlobalRanges = parsedRanges(ipv6GlobalSpecial)
const ipv6ElsewhereRanges = parsedRanges(ipv6Elsewhere)
const globalUnicast = ipaddr.parseCIDR('2000::/3')

const within = (address: ipaddr.IPv4 | ipaddr.IPv6, ranges: ReturnType<typeof parsedRanges>) =>
  ranges.find(({ range }) => address.kind() === range[0].kind() && address.match(range))?.what

/** The IPv4 address in bytes `at` to `at + 4` of an IPv6 address, XORed with `mask` (Teredo hides its client's). */
const carried = (bytes: number[], at: number, mask = 0) => new ipaddr.IPv4(bytes.slice(at, at + 4).map((byte) => byte ^ mask)).toString()

function judgeIpv4(address: ipaddr.IPv4): Judgement {
  const what = within(address, ipv4Ranges)
  return what === undefined ? { public: true, address: address.toString(), family: 4 } : { public: false, address: address.toString(), what }
}

/** A carrier (`address`) of an IPv4 address that is refused whatever it carries: the IPv4
 * address is named when it is not public, else the form. */
function refusedCarrier(address: string, ipv4: string, form: string): Judgement {
  const inner = judgeIpv4(ipaddr.IPv4.parse(ipv4))
  return inner.public ? { public: false, address, what: `${form}, which is not accepted` } : inner
}

function judgeIpv6(address: ipaddr.IPv6): Judgement {
  const bytes = address.toByteArray()
  const text = address.toString()
  const is = (cidr: string) => address.match(ipaddr.parseCIDR(cidr))
  if (address.isIPv4MappedAddress()) return judgeIpv4(address.toIPv4Address())
  if (is('64:ff9b::/96')) {
    const inner = judgeIpv4(ipaddr.IPv4.parse(carried(bytes, 12)))
    return inner.public ? { public: true, address: text, family: 6 } : inner
  }
  if (is('64:ff9b:1::/48')) return { public: false, address: text, what: 'a local-use IPv4/IPv6 translation address' }
  // (:: and ::1 are in ::/96 too, and named for what they are)
  if (is('::/96') && !is('::/127')) return refusedCarrier(text, carried(bytes, 12), 'an IPv4-compatible address (deprecated)')
  if (is('2002::/16')) return refusedCarrier(text, carried(bytes, 2), 'a 6to4 tunnel address')
  if (is('2001::/32')) return refusedCarrier(text, carried(bytes, 12, 0xff), 'a Teredo tunnel address')
  if (!address.match(globalUnicast)) {
    return { public: false, address: text, what: within(address, ipv6ElsewhereRanges) ?? 'outside the public IPv6 space (2000::/3)' }
  }
  const what = within(address, ipv6GlobalRanges)
  return what === undefined ? { public: true, address: text, family: 6 } : { public: false, address: text, what }
}

/** Whether `address` (an IPv4 or IPv6 address, as text) is public, and where to connect if so. */
export function judgeAddress(address: string): Judgement {
  if (!ipaddr.isValid(address)) return { public: false, address, what: 'not an IP address' }
  const parsed = ipaddr.parse(address)
  return parsed.kind() === 'ipv4' ? judgeIpv4(parsed as ipaddr.IPv4) : judgeIpv6(parsed as ipaddr.IPv6)
}
