import { existsSync } from 'node:fs'
import { chromium } from 'playwright-core'
import t from 'tap'
import { loadContract } from '../src/contract/load.js'
import { build, testKey } from './helpers/app.js'

/** Debian's Chromium (apt-get install chromium); CI installs it and sets REQUIRE_BROWSER=1. */
const executablePath = '/usr/bin/chromium'
const browserMissing =
  existsSync(executablePath) || process.env.REQUIRE_BROWSER === '1' ? false : `no browser at ${executablePath}: skipped`

t.test('the documentation page, in a real browser: the service\'s title, the published spec, deprecation and stability shown, requests tried against this server', { skip: browserMissing }, async (t) => {
  const app = await build(t)
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })
  const browser = await chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  })
  t.teardown(() => browser.close())
  const page = await browser.newPage()
  page.setDefaultTimeout(20_000)
  // what the Content-Security-Policy blocks shows as a console error
  const consoleErrors: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text())
  })
  // the documents the page asks this server for
  const documents: string[] = []
  page.on('request', (request) => {
    const { pathname } = new URL(request.url())
    if (/\/(openapi\.(json|yaml)|json|yaml)$/.test(pathname)) documents.push(pathname)
  })
  await page.goto(`${origin}/v1/docs/`)

  await page.waitForSelector('#operations-pets-getPet')
  t.equal(await page.title(), 'Pet Store Service', 'the title is the spec\'s info.title')
  t.strictSame(documents, ['/v1/openapi.json'], 'the page shows the published spec, and no other document')
  const { operations, document } = loadContract()
  const webhooks = Object.keys((document as unknown as { webhooks: object }).webhooks)
  t.equal(await page.locator('.opblock').count(), operations.size + webhooks.length, 'every operation, and every webhook')
  t.equal(await page.locator('.opblock', { hasText: 'pet.status_changed' }).count(), 1, 'a webhook among them, by its name')
  t.equal(await page.locator('#operations-pets-getPet.opblock-deprecated').count(), 1, 'getPet is shown deprecated')
  // (a click expands the operation on a later frame: read it once its body is drawn)
  await page.click('#operations-pets-getPet .opblock-summary')
  await page.locator('#operations-pets-getPet .opblock-body .responses-wrapper').waitFor()
  const details = await page.locator('#operations-pets-getPet').innerText()
  t.match(details, /x-sunset[\s\S]*2030-12-05/, 'the removal date is on the page')
  t.match(details, /x-successor[\s\S]*listPets/)
  // the stability marker of the store's orders, on the operation and on its Idempotency-Key
  await page.click('#operations-store-placeOrder .opblock-summary')
  await page.locator('#operations-store-placeOrder .opblock-body .responses-wrapper').waitFor()
  const placeOrder = await page.locator('#operations-store-placeOrder').innerText()
  t.match(placeOrder, /x-stability[\s\S]*experimental/, 'placeOrder is shown experimental')
  t.match(placeOrder, /Idempotency-Key[\s\S]*x-stability[\s\S]*experimental/, 'and its Idempotency-Key')

  // Authorize with a key, then "Try it out" on listPets: the page calls this server.
  await page.click('.auth-wrapper .authorize')
  await page.fill('.modal-ux input[type=text]', testKey)
  await page.click('.modal-ux .auth-btn-wrapper .authorize')
  await page.click('.modal-ux .close-modal')
  await page.click('#operations-pets-listPets .opblock-summary')
  await page.click('#operations-pets-listPets .try-out__btn')
  await page.click('#operations-pets-listPets .execute')
  const status = page.locator('#operations-pets-listPets .live-responses-table tbody .response-col_status').first()
  await status.waitFor()
  t.equal((await status.innerText()).trim(), '200', 'listPets answered 200 through the page')
  t.strictSame(consoleErrors, [], 'the page works under its Content-Security-Policy: nothing blocked, no error')
})
