import { destination } from 'pino'

/** What one write to the log may carry: everything that came during the write before it. */
const writeBytes = 4 * 1024 * 1024

/** Lines wait until this many bytes have come (then one write takes them all): below any
 * write's size, as LOG_BUFFER_BYTES is at least 64 KiB... */
const batchBytes = 16 * 1024
/** ...or at most this long (ms). */
const batchMs = 50

/**
 * Where the server's log lines go (stdout by default), written without holding requests back
 * and in bounded memory. Lines are written together: once 16 KiB have come, or at the next
 * 50 ms tick, whichever is first (with a write a line, fs.write took 4.4 µs of each request's
 * main thread in a profile under load, besides the system call on libuv's thread). Each write
 * takes all the lines that came while the one before was under way. (sonic-boom's defaults
 * write 16 KiB at a time, one write per turn of the event loop: under load the access log fell
 * behind by a megabyte a second, held in memory, its lines written ever later. Larger writes of
 * text cost it a pass over the whole pending text at every line; as bytes, it keeps their
 * lengths and joins them once per write.) Should the log's reader stop (a full pipe), lines
 * past `bufferBytes` waiting are dropped, each with a 'drop' event, rather than the process's
 * memory growing without end. What is held is written at exit.
 */
export function logDestination(bufferBytes: number, fd = 1) {
  const maxWrite = Math.min(writeBytes, bufferBytes)
  const bytes = destination({ dest: fd, contentMode: 'buffer', maxWrite, maxLength: bufferBytes, minLength: batchBytes, periodicFlush: batchMs })
  return {
    write: (line: string) => void bytes.write(Buffer.from(line) as never),
    /** `listener` is called for each line dropped */
    onDrop: (listener: () => void) => void bytes.on('drop', listener),
  }
}
