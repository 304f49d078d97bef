/**
 * Run in the copy of the walk "a breaking change" (test/changing-the-api.walk.ts), once version 3
 * is served beside them (test/helpers/checks.ts prints what it checked): versions 1 and 2 answer
 * as before, as test/versions.test.ts has them answer served side by side, and each
 * subscription is sent an event as its version shows it (SQLite). Every answer, and every
 * delivery, checked against its version's document.
 */
import { checker } from '../helpers/checks.js'
import { eventsPerVersion, servedSideBySide, sideBySide } from '../helpers/side-by-side.js'

const { t, report } = checker()

await t.test(sideBySide, servedSideBySide)
await t.test("SQLite: events in each subscription's version", async (t) => eventsPerVersion(t, {}))

await report()
