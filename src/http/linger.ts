import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyReply } from 'fastify'

/** What a connection closed after its answer may still read: at most this long, */
const lingerMs = 5_000
/** and at most this many bytes. */
export const lingerBytes = 16 * 1024 * 1024

/**
 * Closes a connection without losing the answer just written to it. A client whose request was
 * refused before its body was read (401, 413, 415, 408, an unreadable request) may still be
 * sending; closing at once would reset the connection, and a reset makes the client's system
 * drop the answer it has not read yet. So the server stops writing (FIN) and reads on,
 * discarding, until the client closes or the request ends, for at most lingerMs and lingerBytes
 * (looked at every 20 ms).
 */
export function linger(socket: Socket, request?: IncomingMessage): void {
  if (socket.destroyed) return
  socket.end()
  const readBefore = socket.bytesRead
  const startedAt = Date.now()
  const destroy = () => socket.destroy()
  // The request's parser keeps reading the socket: it ends when the client closes, or when the
  // body it was sending has all arrived.
  socket.once('end', destroy)
  request?.once('end', destroy)
  const watch = setInterval(() => {
    if (Date.now() - startedAt >= lingerMs || socket.bytesRead - readBefore > lingerBytes) destroy()
  }, 20)
  socket.once('close', () => clearInterval(watch))
}

/**
 * Lets Node close the connection of `request` by lingering: after a response that announces
 * `Connection: close`, Node calls socket.destroySoon(), which closes at once.
 */
function lingerAfterResponse(request: IncomingMessage): void {
  const socket = request.socket as Socket & { destroySoon?: () => void }
  socket.destroySoon = () => linger(socket, request)
}

/** An answer after which the rest of the request's body will not be read as a request: the
 * connection closes (lingering, so that the client still reads the answer). */
export function closeAfterAnswer(request: IncomingMessage, reply: FastifyReply): void {
  reply.header('Connection', 'close')
  lingerAfterResponse(request)
}

/** Whether a request says it has a body. */
export const declaresBody = ({ headers }: IncomingMessage) =>
  headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && Number(headers['content-length']) > 0)

/**
 * Whether a request's body has not all arrived. (`complete` is false only on a real socket:
 * injected requests have none. It is also false while a request without a body is answered at
 * once, within the event that delivered it, before Node marks it complete.)
 */
export const bodyStillArriving = (request: IncomingMessage) => request.complete === false && declaresBody(request)
