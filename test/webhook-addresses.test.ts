/**
 * The address guard is an allow-list: only public internet addresses are sent events. Each
 * special range of IPv4 and IPv6, and each IPv6 form that carries an IPv4 address, is refused
 * at createWebhook (422, the message quoting the URL's host as written and naming the address it
 * points to) and again before every attempt (the same words in lastError, and no request), on
 * each store; public addresses, in each form that may carry one, are taken.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { AppOptions } from '../src/app.js'
import { judgeAddress } from '../src/webhooks/public-address.js'
import { resolveTarget } from '../src/webhooks/target.js'
import { build, call } from './helpers/app.js'
import { sleep } from './helpers/concurrency.js'
import { freshPostgres, postgresMissing } from './helpers/postgres.js'

const publicOnly = 'webhooks are sent only to public internet addresses'
const private_ = 'a private address'
const documentation = 'a documentation address'

/** A host as a client writes it in a URL, the address it points to, and what that is. */
const refused: [host: string, address: string, what: string][] = [
  // IPv4: IANA's special-purpose registry, multicast and broadcast
  ['0.0.0.0', '0.0.0.0', 'an unspecified address'],
  ['0.1.2.3', '0.1.2.3', 'an unspecified address'],
  ['10.1.2.3', '10.1.2.3', private_],
  ['100.64.0.1', '100.64.0.1', 'a shared address (carrier-grade NAT)'],
  ['100.100.100.200', '100.100.100.200', 'a shared address (carrier-grade NAT)'],
  ['127.0.0.1', '127.0.0.1', 'a loopback address'],
  ['0x7f.1', '127.0.0.1', 'a loopback address'],
  ['2130706433', '127.0.0.1', 'a loopback address'],
  ['169.254.169.254', '169.254.169.254', 'a link-local address'],
  ['172.16.0.1', '172.16.0.1', private_],
  ['172.31.255.255', '172.31.255.255', private_],
  ['192.0.0.9', '192.0.0.9', 'an address reserved for protocol assignments'],
  ['192.0.2.1', '192.0.2.1', documentation],
  ['192.31.196.1', '192.31.196.1', 'a special-purpose address (AS112 DNS)'],
  ['192.52.193.1', '192.52.193.1', 'a special-purpose address (AMT)'],
  ['192.88.99.1', '192.88.99.1', 'a special-purpose address (6to4 relay anycast)'],
  ['192.168.1.1', '192.168.1.1', private_],
  ['192.175.48.1', '192.175.48.1', 'a special-purpose address (AS112 DNS)'],
  ['198.18.0.1', '198.18.0.1', 'a benchmarking address'],
  ['198.19.255.255', '198.19.255.255', 'a benchmarking address'],
  ['198.51.100.1', '198.51.100.1', documentation],
  ['203.0.113.1', '203.0.113.1', documentation],
  ['224.0.0.1', '224.0.0.1', 'a multicast address'],
  ['239.255.255.250', '239.255.255.250', 'a multicast address'],
  ['240.0.0.1', '240.0.0.1', 'a reserved address'],
  ['255.255.255.255', '255.255.255.255', 'the broadcast address'],
  // IPv6 outside 2000::/3
  ['[::]', '::', 'an unspecified address'],
  ['[::1]', '::1', 'a loopback address'],
  ['[100::1]', '100::1', 'a discard-only address'],
  ['[fd00:ec2::254]', 'fd00:ec2::254', 'a private address (unique local)'],
  ['[fc00::1]', 'fc00::1', 'a private address (unique local)'],
  ['[fe80::1]', 'fe80::1', 'a link-local address'],
  ['[ff02::1]', 'ff02::1', 'a multicast address'],
  ['[4000::1]', '4000::1', 'outside the public IPv6 space (2000::/3)'],
  ['[::ffff:0:a00:1]', '::ffff:0:a00:1', 'outside the public IPv6 space (2000::/3)'],
  // IPv6 special blocks inside 2000::/3
  ['[2001:2::1]', '2001:2::1', 'an address reserved for protocol assignments'],
  ['[2001:db8::1]', '2001:db8::1', documentation],
  ['[3fff::1]', '3fff::1', documentation],
  ['[2620:4f:8000::1]', '2620:4f:8000::1', 'a special-purpose address (AS112 DNS)'],
  ['[5f00::1]', '5f00::1', 'a special-purpose address (segment routing)'],
  // IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96): judged by the IPv4 address they carry
  ['[::ffff:10.0.0.1]', '10.0.0.1', private_],
  ['[::ffff:a9fe:a9fe]', '169.254.169.254', 'a link-local address'],
  ['[64:ff9b::10.0.0.1]', '10.0.0.1', private_],
  ['[64:ff9b::7f00:1]', '127.0.0.1', 'a loopback address'],
  ['[64:ff9b:1::808:808]', '64:ff9b:1::808:808', 'a local-use IPv4/IPv6 translation address'],
  // IPv4-compatible (::/96), 6to4 (2002::/16), Teredo (2001::/32): refused, the IPv4 address named when not public
  ['[::7f00:1]', '127.0.0.1', 'a loopback address'],
  ['[::127.0.0.1]', '127.0.0.1', 'a loopback address'],
  ['[::a9fe:a9fe]', '169.254.169.254', 'a link-local address'],
  ['[::a00:1]', '10.0.0.1', private_],
  ['[::c0a8:101]', '192.168.1.1', private_],
  ['[::2]', '0.0.0.2', 'an unspecified address'],
  ['[::8.8.8.8]', '::808:808', 'an IPv4-compatible address (deprecated), which is not accepted'],
  ['[2002:a00:1::1]', '10.0.0.1', private_],
  ['[2002:808:808::1]', '2002:808:808::1', 'a 6to4 tunnel address, which is not accepted'],
  ['[2001:0:4136:e378:8000:63bf:f5ff:fffe]', '10.0.0.1', private_],
  ['[2001:0:4136:e378:8000:63bf:3fff:fdd2]', '192.0.2.45', documentation],
  ['[2001:0:4136:e378:8000:63bf:f7f7:f7f7]', '2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'a Teredo tunnel address, which is not accepted'],
]

/** Public addresses, in every form that may carry one. */
const taken = ['93.184.215.14', '[2606:4700::1111]', '[::ffff:93.184.215.14]', '[64:ff9b::93.184.215.14]']

const messageOf = (host: string, address: string, what: string, verb = 'points') => `https://${host}/ ${verb} to ${address}, ${what}: ${publicOnly}`

t.test('judgeAddress: the range of each address, and where a public one is connected to', async (t) => {
  for (const [host, address, what] of refused) {
    const literal = new URL(`https://${host}/`).hostname.replace(/^\[(.*)\]$/, '$1')
    t.strictSame(judgeAddress(literal), { public: false, address, what }, host)
  }
  t.strictSame(judgeAddress('93.184.215.14'), { public: true, address: '93.184.215.14', family: 4 })
  t.strictSame(judgeAddress('2606:4700::1111'), { public: true, address: '2606:4700::1111', family: 6 })
  t.strictSame(judgeAddress('::ffff:93.184.215.14'), { public: true, address: '93.184.215.14', family: 4 }, 'an IPv4-mapped address is connected to as IPv4')
  t.strictSame(judgeAddress('64:ff9b::5db8:d70e'), { public: true, address: '64:ff9b::5db8:d70e', family: 6 }, 'NAT64: through the translator')
  t.strictSame(judgeAddress('not-an-address'), { public: false, address: 'not-an-address', what: 'not an IP address' })
})

t.test('a name is judged by every address it resolves to, and the message quotes the URL as written', async (t) => {
  const strict = { allowHttp: false, allowPrivate: false }
  const answering =
    (...addresses: string[]) =>
    async () =>
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  await t.rejects(resolveTarget('https://Hooks.Example:8443/x?token=1', strict, answering('93.184.215.14', '::ffff:10.0.0.1')), {
    message: messageOf('Hooks.Example:8443', '10.0.0.1', private_, 'resolves'),
  })
  await t.rejects(resolveTarget('https://hooks.example/x', strict, answering('2002:a9fe:a9fe::1')), {
    message: messageOf('hooks.example', '169.254.169.254', 'a link-local address', 'resolves'),
  })
  t.match(await resolveTarget('https://hooks.example/x', strict, answering('::ffff:93.184.215.14')), { address: '93.184.215.14', family: 4 })
})

function tempFile(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-addresses-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return `sqlite:${join(dir, 'pets.db')}`
}

const stores: [string, (t: Test) => Promise<Partial<AppOptions>>][] = [
  ['SQLite', async (t) => ({ DATABASE_URL: tempFile(t) })],
  ['PostgreSQL', async (t) => ({ DATABASE_URL: await freshPostgres(t), DATABASE_POOL_SIZE: 4 })],
]

const subscribe = (t: Test, server: FastifyInstance, url: string) =>
  call(t, server, { method: 'POST', url: '/v1/webhooks', payload: { url, events: ['pet.created'] } })

for (const [name, store] of stores) {
  t.test(`${name}: each range refused at createWebhook (422), and before every attempt`, { skip: name === 'PostgreSQL' && postgresMissing }, async (t) => {
    const options = { ...(await store(t)), WEBHOOK_MAX_PER_KEY: 100, WEBHOOK_POLL_MS: 20 }
    const strict = await build(t, options)
    for (const [host, address, what] of refused) {
      const answer = await subscribe(t, strict, `https://${host}/hooks?token=abc`)
      t.strictSame(answer.json, { code: 'webhook_url_not_allowed', message: messageOf(host, address, what), status: 422 }, host)
    }
    for (const host of taken) {
      const answer = await subscribe(t, strict, `https://${host}/hooks`)
      t.equal(answer.status, 201, `${host} is taken`)
      // (and deleted: nothing is sent beyond this machine)
      t.equal((await call(t, strict, { method: 'DELETE', url: `/v1/webhooks/${answer.json.id}` })).status, 204)
    }
    await strict.close()

    // subscribed while the operator allowed every address, then delivered once it no longer does
    const lenient = await build(t, { ...options, WEBHOOK_ALLOW_PRIVATE: true })
    for (const [host] of refused) t.equal((await subscribe(t, lenient, `https://${host}/hooks?token=abc`)).status, 201)
    await lenient.close()
    const server = await build(t, options)
    await call(t, server, { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })
    const webhooks = (await call(t, server, { url: '/v1/webhooks' })).json as { id: number; url: string }[]
    const lastErrors = new Map<string, string>()
    for (let tries = 0; lastErrors.size < refused.length && tries < 500; tries++) {
      for (const { id, url } of webhooks) {
        const [delivery] = (await call(t, server, { url: `/v1/webhooks/${id}/deliveries` })).json
        if (delivery?.attempts >= 1) lastErrors.set(url, delivery.lastError)
      }
      await sleep(20)
    }
    for (const [host, address, what] of refused)
      t.equal(lastErrors.get(`https://${host}/hooks?token=abc`), messageOf(host, address, what), `${host}, at delivery`)
  })
}
