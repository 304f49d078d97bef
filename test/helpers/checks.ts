/**
 * tap's `t`, as far as the test helpers use it, for a program run in a copy of the project by a
 * walk-through (test/helpers/project.ts, `ProjectCopy.checks`): each assertion is recorded, not
 * reported, and `report()` prints them as JSON, one line, for the walk to assert one by one. A
 * check of the copy's code without a test runner started inside the test that runs the walk.
 */
import type { Test } from 'tap'
import { format, match, same, strict } from 'tcompare'

/** One assertion a program made: its name (its subtests' names before it, ' > ' between) and
 * whether it held; what differed, where it did not. */
export interface Check {
  name: string
  ok: boolean
  diff?: string
}

interface Recorder {
  t: Test
  /** runs the teardowns, then prints the checks (those of every subtest, once each has ended) */
  report: () => Promise<void>
}

/** A `t` that records its assertions in `checks`, each named with `prefix`. */
function recorder(checks: Check[], prefix: string): Recorder {
  const teardowns: (() => unknown)[] = []
  const pending: Promise<unknown>[] = []
  const record = (ok: boolean, name: string, diff: () => string) => {
    checks.push({ name: `${prefix}${name}`, ok, ...(ok ? {} : { diff: diff() }) })
    return ok
  }
  const compared =
    (compare: typeof same, fallback: string) =>
    (found: unknown, wanted: unknown, name = fallback) => {
      const { match, diff } = compare(found, wanted)
      return record(match, name, () => diff)
    }
  const shown = (value: unknown) => format(value)
  const t = {
    teardown: (fn: () => unknown) => void teardowns.push(fn),
    comment: () => {},
    pass: (name = '(unnamed test)') => record(true, name, () => ''),
    fail: (name = 'failed') => record(false, name, () => ''),
    ok: (value: unknown, name = 'expect truthy value') => record(Boolean(value), name, () => shown(value)),
    notOk: (value: unknown, name = 'expect falsey value') => record(!value, name, () => shown(value)),
    equal: (found: unknown, wanted: unknown, name = 'should be equal') => record(found === wanted, name, () => `${shown(found)} !== ${shown(wanted)}`),
    not: (found: unknown, wanted: unknown, name = 'should not be equal') => record(found !== wanted, name, () => `${shown(found)} === ${shown(wanted)}`),
    same: compared(same, 'should be equivalent'),
    strictSame: compared(strict, 'should be equivalent strictly'),
    match: compared(match, 'should match pattern'),
    test(name: string, fn: (t: Test) => unknown) {
      const sub = recorder(checks, `${prefix}${name} > `)
      const done = (async () => {
        try {
          await fn(sub.t)
        } catch (error) {
          record(false, `${name}: threw`, () => (error instanceof Error ? (error.stack ?? error.message) : String(error)))
        }
        await sub.report()
      })()
      pending.push(done)
      return done
    },
  }
  return {
    t: t as unknown as Test,
    async report() {
      await Promise.all(pending)
      for (const teardown of teardowns.reverse()) await teardown()
    },
  }
}

/** The `t` of a program, and `report()`, to call at its end: prints what it checked. */
export function checker(): Recorder {
  const checks: Check[] = []
  const root = recorder(checks, '')
  return {
    t: root.t,
    async report() {
      await root.report()
      console.log(JSON.stringify(checks))
    },
  }
}
