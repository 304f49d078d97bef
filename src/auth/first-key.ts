import type { FastifyInstance } from 'fastify'

/** What `npm run keys -- list` calls the key of a first start. */
const firstKeyName = 'first start'

/**
 * A first start (no API_KEYS, no key in the store yet) issues one key and shows it once, with a
 * request that uses it, so that `npm start` alone gives a working setup: the key may add the
 * categories version 2's pets need (the README's walk-through). The key goes to stdout
 * as plain text, never through the logger: logs are kept and shipped, and must hold no key.
 * `url` is where the server listens.
 */
export async function issueFirstKey(app: FastifyInstance, url: string): Promise<void> {
  // (the default roles, and those the owner needs to fill an empty store: `firstKey` in x-roles)
  const issued = await app.storage.keys.issueFirst(firstKeyName, app.contract.roles.firstKey)
  if (issued === undefined) return
  const { record, key } = issued
  app.log.info({ keyId: record.id, prefix: record.prefix }, 'issued the first API key, shown once on stdout')
  process.stdout.write(
    [
      '',
      `No API key was set up, so this first start created one: "${record.name}" (id ${record.id}).`,
      'It is shown only this once: copy it now.',
      '',
      `  API key:  ${key}`,
      `  Try it:   curl -H "Authorization: Bearer ${key}" ${url}${app.contract.urlOf('listPets')}`,
      '',
      'Manage keys with: npm run -s keys -- create --name NAME | list | revoke ID',
      '',
      '',
    ].join('\n'),
  )
}
