import { createServer, connect, type Socket } from 'node:net'
import type { Test } from 'tap'

/** A TCP proxy to `port` on 127.0.0.1 that a test can take down, bring back, or freeze (bytes
 * held both ways, as with a server that hangs, then delivered when it thaws). */
export async function tcpProxy(t: Test, targetPort: number) {
  const sockets = new Set<Socket>()
  let frozen = false
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1')
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from)
      if (frozen) from.pause()
      from.on('data', (chunk: Buffer) => to.write(chunk))
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
  return {
    port,
    down: async () => {
      await new Promise((resolve) => {
        server.close(resolve)
        for (const socket of sockets) socket.destroy()
      })
      sockets.clear()
    },
    up: () => listen(port),
    freeze: (on: boolean) => {
      frozen = on
      for (const socket of sockets) {
        if (on) socket.pause()
        else socket.resume()
      }
    },
  }
}

/** A port on 127.0.0.1 that nothing listens on (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}
