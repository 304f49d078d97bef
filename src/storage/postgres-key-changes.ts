import pg from 'pg'
import { type KeyChanges, keysChannel } from './key-changes.js'

/** How long to wait before listening again after the connection was lost. */
const relistenMs = 1_000

/**
 * PostgreSQL tells every instance at once: a trigger on api_keys NOTIFYs keysChannel when a key
 * is revoked or deleted, and each instance LISTENs on a connection of its own. While that
 * connection is down, a notification could be missed: every call answers true until it is back.
 */
export function postgresKeyChanges(config: pg.ClientConfig): KeyChanges {
  let listening = false
  let notified = false
  let closed = false
  let client: pg.Client | undefined
  let retry: NodeJS.Timeout | undefined

  /** The listening connection failed or ended: forget it, and listen again in a moment. */
  const lost = (which: pg.Client) => {
    if (which !== client) return
    listening = false
    client = undefined
    which.removeAllListeners().on('error', () => {})
    void which.end().catch(() => {})
    if (!closed) retry = setTimeout(listen, relistenMs).unref()
  }
  async function listen() {
    const current = (client = new pg.Client(config))
    current.on('error', () => lost(current)).on('end', () => lost(current))
    current.on('notification', () => {
      notified = true
    })
    try {
      await current.connect()
      await current.query(`listen ${keysChannel}`)
      // whatever was cached before now may have been revoked while no one listened
      if (current === client) listening = notified = true
    } catch {
      lost(current)
    }
  }
  const started = listen()

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
      await started
      const last = client
      client = undefined
      listening = false
      await last?.removeAllListeners().on('error', () => {}).end().catch(() => {})
    },
  }
}
