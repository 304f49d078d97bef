import pg from 'pg'

/** Sends a statement, answering by callback. */
export type Send = (config: pg.QueryConfig, done: (error: Error | null, result: pg.QueryResult) => void) => void

/** The pipelined connections at one moment. */
export interface PipelineStats {
  /** connections they may open (DATABASE_READ_CONNECTIONS) */
  max: number
  /** connections open */
  open: number
  /** statements sent or waiting for their connection to open, not yet answered */
  unanswered: number
}

export interface Pipelines {
  send: Send
  stats(): PipelineStats
  close(): Promise<void>
}

/** One connection of the set, and what it carries. */
interface Line {
  client: pg.Client
  open: boolean
  /** statements that came while it was opening */
  queued: Parameters<Send>[]
  /** statements sent and not yet answered */
  unanswered: number
  /** since when (performance.now()) the oldest of them has waited without any answer coming */
  since: number
}

/** Answers `done` with `error`, as pg answers a statement that failed (with no result). */
const fail = (done: Parameters<Send>[1], error: Error) => done(error, undefined as unknown as pg.QueryResult)

/** How often the lines with unanswered statements are looked over, as a share of their bound. */
const watchesPerBound = 10

/**
 * At most `count` connections on which statements are pipelined (pg's `pipeline` mode): each is
 * sent at once, behind the ones still unanswered, and PostgreSQL answers them in order, each
 * alone (one Sync each: a failure fails that statement only). No connection is checked out of a
 * pool, no statement waits for one, and one socket read brings several answers: with pg-pool's
 * checkout and its timers, and a socket write and read per statement, a read cost this process
 * 10-48% more CPU than here, each as a ratio to the same hand-written peer
 * (docs/benchmarks.md). For statements that cannot wait for a lock, so that none holds up the
 * ones behind it: reads (MVCC: no row lock stops them).
 *
 * A statement goes to the line with the fewest unanswered; a line is opened when first needed
 * and again after it is lost. Should the server stop answering (frozen, cut off), a line whose
 * oldest statement has heard nothing for `answerWithinMs` is ended: its statements fail, as a
 * lost connection's do.
 */
export function pipelines(config: pg.ClientConfig, count: number, answerWithinMs: number): Pipelines {
  const lines: (Line | undefined)[] = Array.from({ length: count }, () => undefined)

  const open = (slot: number): Line => {
    // (pg 8.23's option, which its types do not know yet)
    const client = new pg.Client({ ...config, pipeline: true } as pg.ClientConfig)
    const line: Line = { client, open: false, queued: [], unanswered: 0, since: 0 }
    lines[slot] = line
    // (from now on, statements go to a new line; those on this one fail with its connection)
    const drop = () => {
      if (lines[slot] === line) lines[slot] = undefined
    }
    // A lost connection emits error, then end: without a listener, error would end the process.
    client.on('error', drop)
    client.on('end', drop)
    // The server says FATAL before it closes a connection (see postgres.ts).
    client.connection.on('errorMessage', ({ severity }: { severity?: string }) => {
      if (severity === 'FATAL') {
        drop()
        void client.end()
      }
    })
    client.connect((error) => {
      const queued = line.queued
      line.queued = []
      // (a refused connection fails what waited for it with the server's own reason: 28000...)
      if (error) {
        drop()
        for (const [, done] of queued) fail(done, error)
        return
      }
      line.open = true
      for (const [statement, done] of queued) submit(line, statement, done)
    })
    return line
  }

  const submit = (line: Line, statement: pg.QueryConfig, done: Parameters<Send>[1]) => {
    if (line.unanswered++ === 0) line.since = performance.now()
    line.client.query(statement, (error: Error | null, result: pg.QueryResult) => {
      line.unanswered--
      line.since = performance.now()
      done(error, result)
    })
  }

  const watch = setInterval(
    () => {
      const now = performance.now()
      lines.forEach((line, slot) => {
        if (line?.open && line.unanswered > 0 && now - line.since > answerWithinMs) {
          lines[slot] = undefined
          line.client.connection.stream.destroy()
        }
      })
    },
    Math.max(10, answerWithinMs / watchesPerBound),
  ).unref()

  let closed = false
  return {
    send(statement, done) {
      // (as pg-pool does once ended: no connection is opened again, which would keep the process alive)
      if (closed) return fail(done, new Error('Cannot use the read connections after they were closed'))
      let slot = 0
      let least = Infinity
      for (let i = 0; i < count; i++) {
        const line = lines[i]
        const load = line === undefined ? 0 : line.unanswered + line.queued.length
        if (load < least) {
          slot = i
          least = load
        }
      }
      const line = lines[slot] ?? open(slot)
      if (line.open) submit(line, statement, done)
      else line.queued.push([statement, done])
    },
    stats: () => ({
      max: count,
      open: lines.filter((line) => line?.open).length,
      unanswered: lines.reduce((sum, line) => sum + (line === undefined ? 0 : line.unanswered + line.queued.length), 0),
    }),
    async close() {
      closed = true
      clearInterval(watch)
      await Promise.all(lines.flatMap((line) => line?.client.end() ?? []))
      lines.fill(undefined)
    },
  }
}
