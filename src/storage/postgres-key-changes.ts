import pg from 'pg'
import { type KeyChanges, keysChannel } from './key-changes.js'

/** How long to wait before listening again after the connection was lost. */
const relistenMs = 1_000

/**
 * PostgreSQL tells every instance at once: a trigger on api_keys NOTIFYs keysChannel when a key
 * is revoked, given other roles or deleted, and each instance LISTENs on a connection of its
 * own. While that connection is down, a notification could be missed: every call answers true
 * until it is back. A server that takes the connection but never answers (frozen, or a network
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
    which.removeAllListeners().on('error', () => {})
    which.connection.stream.destroy()
    if (!closed) retry = setTimeout(() => void listen(), relistenMs).unref()
  }
  async function listen() {
    const current = (client = new pg.Client(config))
    current.on('error', () => lost(current)).on('end', () => lost(current))
    current.on('notification', () => {
      notified = true
    })
    const bound = setTimeout(() => lost(current), answerWithinMs).unref()
    try {
      await current.connect()
      await current.query(`listen ${keysChannel}`)
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
    // the NOTIFY reaches every listening instance as it commits, in a millisecond or so
    propagated: async () => {},
    async close() {
      closed = true
      clearTimeout(retry)
      const last = client
      client = undefined
      listening = false
      if (last === undefined) return
      last.removeAllListeners().on('error', () => {})
      // (a connection that answers says goodbye; one that does not is cut at the bound)
      const cut = setTimeout(() => last.connection.stream.destroy(), answerWithinMs).unref()
      await last.end().catch(() => {})
      clearTimeout(cut)
    },
  }
}
