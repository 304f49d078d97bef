/**
 * A TCP proxy in front of PostgreSQL, for the tests of a database that fails.
 */
import { connect, createServer, type Socket } from 'node:net'
import type { Test } from 'tap'

/** A TCP proxy to PostgreSQL that a test can take down, bring back, or freeze (all bytes dropped
 * both ways, as with a server that hangs or a network that black-holes). */
export async function databaseProxy(t: Test, target: URL) {
  const sockets = new Set<Socket>()
  let frozen = false
  let cutOnListen = false
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname)
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from)
      from.on('data', (chunk: Buffer) => {
        // a connection lost just as it asks to LISTEN: after connecting, before listening
        if (cutOnListen && from === client && chunk.includes('listen ')) return from.destroy()
        if (!frozen) to.write(chunk)
      })
      from.on('error', () => to.destroy()).on('close', () => to.destroy())
    }
  })
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  await listen(0)
  const port = (server.address() as { port: number }).port
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  const url = new URL(target)
  url.host = `127.0.0.1:${port}`
  return {
    url: url.toString(),
    down: async () => {
      await new Promise((resolve) => {
        server.close(resolve)
        for (const socket of sockets) socket.destroy()
      })
      sockets.clear()
    },
    up: () => listen(port),
    freeze: (on: boolean) => (frozen = on),
    cutOnListen: (on: boolean) => (cutOnListen = on),
  }
}
