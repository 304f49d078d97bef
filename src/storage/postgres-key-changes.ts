import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { type KeyChanges, keysChannel } from './key-changes.js'

/** How long to wait before listening again after the connection was lost. */
const relistenMs = 1_000

/** The application_name of every listening connection, once it listens: how a revocation counts
 * the instances that must acknowledge it (pg_stat_activity). */
export const listenerName = 'petstore key changes'
/** A revocation asks every listener on this channel to acknowledge, after its change... */
const pingChannel = `${keysChannel}_ping`
/** ...and each answers on this one, with the ping's payload. */
const ackChannel = `${keysChannel}_ack`
/** What is done of an error, or of a failed acknowledgement: nothing more can be. */
const ignore = () => {}

/**
 * PostgreSQL tells every instance: a trigger on api_keys NOTIFYs keysChannel when a key is
 * revoked, given other roles or deleted, and each instance LISTENs on a connection of its own.
 * While that connection is down, a notification could be missed: every call answers true until
 * it is back. A notification arrives after its commit, not with it (on a loaded machine, tens of
 * milliseconds later): a revocation is done once every listener has acknowledged it
 * (propagated). A server that takes the connection but never answers (frozen, or a network
 * that drops packets) holds nothing: a connection not listening within `answerWithinMs` is cut and tried
 * again, and closing cuts one that does not end within it.
 */
export function postgresKeyChanges(config: pg.ClientConfig, answerWithinMs: number): KeyChanges {
  let listening = false
  let notified = false
  let closed = false
  let client: pg.Client | undefined
  let retry: NodeJS.Timeout | undefined

  /** The listening connection failed, ended or did not answer: cut it, and listen again in a moment. */
  const lost = (which: pg.Client) => {
    if (which !== client) return
    listening = false
    client = undefined
    which.removeAllListeners().on('error', ignore)
    which.connection.stream.destroy()
    if (!closed) retry = setTimeout(() => void listen(), relistenMs).unref()
  }
  async function listen() {
    const current = (client = new pg.Client(config))
    current.on('error', () => lost(current)).on('end', () => lost(current))
    current.on('notification', ({ channel, payload }) => {
      if (channel === keysChannel) notified = true
      // (PostgreSQL delivers notifications in the order of their commits: a ping comes after
      // every change committed before it, whose notification has set `notified` above)
      else current.query('select pg_notify($1, $2)', [ackChannel, payload]).catch(ignore)
    })
    const bound = setTimeout(() => lost(current), answerWithinMs).unref()
    try {
      await current.connect()
      // (named by a statement: a name in DATABASE_URL, which tells instances apart, would win over
      // a name given to the client)
      await current.query(`listen ${keysChannel}; listen ${pingChannel}; set application_name to '${listenerName}'`)
      // whatever was cached before now may have been revoked while no one listened
      if (current === client) listening = notified = true
    } catch {
      lost(current)
    } finally {
      clearTimeout(bound)
    }
  }
  void listen()

  return {
    changed() {
      if (!listening || notified) {
        notified = false
        return true
      }
      return false
    },
    propagated: () => acknowledged(config, answerWithinMs),
    async close() {
      closed = true
      clearTimeout(retry)
      const last = client
      client = undefined
      listening = false
      if (last === undefined) return
      last.removeAllListeners().on('error', ignore)
      // (a connection that answers says goodbye; one that does not is cut at the bound)
      const cut = setTimeout(() => last.connection.stream.destroy(), answerWithinMs).unref()
      await last.end().catch(() => {})
      clearTimeout(cut)
    },
  }
}

/**
 * Resolves once every connection listening for key changes now (each instance's, this process's
 * own included) has acknowledged a ping sent after the change: its `notified` is set, and its
 * instance's next request sees the change. A listener that has not acknowledged within
 * `answerWithinMs` (frozen, or still starting: it then trusts no cached key) is waited for no
 * longer, nor is a database that does not answer: the change is committed either way.
 */
export async function acknowledged(config: pg.ClientConfig, answerWithinMs: number): Promise<void> {
  const asker = new pg.Client(config)
  asker.on('error', ignore)
  let bound: NodeJS.Timeout | undefined
  const waited = new Promise<void>((resolve) => (bound = setTimeout(resolve, answerWithinMs)))
  const asked = (async () => {
    await asker.connect()
    await asker.query(`listen ${ackChannel}`)
    const { rows } = await asker.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1 and datname = current_database()', [
      listenerName,
    ])
    const waiting = new Set(rows.map(({ pid }) => pid))
    const token = randomUUID()
    const all = new Promise<void>((resolve) => {
      asker.on('notification', ({ processId, payload }) => {
        if (payload === token) waiting.delete(processId)
        if (waiting.size === 0) resolve()
      })
    })
    await asker.query('select pg_notify($1, $2)', [pingChannel, token])
    if (waiting.size > 0) await all
  })()
  const answered = await Promise.race([
    asked.then(
      () => true,
      () => false,
    ),
    waited.then(() => false),
  ])
  clearTimeout(bound)
  const cut = () => void asker.connection.stream.destroy()
  if (!answered) return cut()
  // (a database that answered is told goodbye, and cut if it does not end within the bound)
  const cutting = setTimeout(cut, answerWithinMs).unref()
  await asker.end().catch(ignore)
  clearTimeout(cutting)
}
