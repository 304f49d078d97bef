import { existsSync } from 'node:fs'
import { chromium } from 'playwright-core'
import t from 'tap'
import { loadContract } from '../src/contract/load.js'
import { build, testKey } from './helpers/app.js'
import { oldestSpecPath } from './helpers/spec.js'

/** Debian's Chromium (apt-get install chromium); CI installs it and sets REQUIRE_BROWSER=1. */
const executablePath = '/usr/bin/chromium'
const browserMissing = existsSync(executablePath) || process.env.REQUIRE_BROWSER === '1' ? false : `no browser at ${executablePath}: skipped`

t.test(
  'the documentation pages, in a real browser: titled with their versions and linking each other, deprecation and stability shown, requests tried against this server with no filter filled in',
  { skip: browserMissing },
  async (t) => {
    const app = await build(t)
    const origin = await app.listen({ host: '127.0.0.1', port: 0 })
    const browser = await chromium.launch({
      executablePath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    })
    t.teardown(() => browser.close())
    const page = await browser.newPage()
    // a bound for a page that never draws, not a speed: on a loaded 2-core machine (CI's, with the
    // other Node's tests, the walk-throughs and the bench beside it) a page took more than 20 s
    page.context().setDefaultTimeout(180_000)
    // what the Content-Security-Policy blocks shows as a console error
    const consoleErrors: string[] = []
    page.context().on('console', (message) => {
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
    t.equal(await page.title(), 'Pet Store Service — version 1', "the tab's title is the spec's info.title, with its version")
    t.strictSame(documents, ['/v1/docs/json'], 'the page shows its copy of the published spec, and no other document')
    t.strictSame(await page.locator('.topbar select option').allInnerTexts(), ['Pet Store Service — version 1'], 'so does the definition menu')
    t.match(await page.locator('.info .title').innerText(), /^Pet Store Service — version 1/, 'and the heading')
    const { operations, document } = loadContract(oldestSpecPath)
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

    // version 2, linked from version 1's page: its own title, a link back, and "Try it out" that
    // fills no optional filter, so a first Execute lists the pets there are
    // (Swagger UI opens the links of a description in a new tab)
    const [v2] = await Promise.all([page.context().waitForEvent('page'), page.click('.info .description a[href="/v2/docs/"]')])
    await v2.waitForSelector('#operations-pets-listPets')
    t.equal(await v2.title(), 'Pet Store Service — version 2', "version 1's page links version 2's")
    t.strictSame(await v2.locator('.topbar select option').allInnerTexts(), ['Pet Store Service — version 2'])
    t.equal(await v2.locator('.info .description a[href="/v1/docs/"]').count(), 1, "which links version 1's")
    await app.inject({ method: 'POST', url: '/v1/pets', headers: { authorization: `Bearer ${testKey}` }, payload: { name: 'Tom', categoryId: 2 } })
    await v2.click('.auth-wrapper .authorize')
    await v2.fill('.modal-ux input[type=text]', testKey)
    await v2.click('.modal-ux .auth-btn-wrapper .authorize')
    await v2.click('.modal-ux .close-modal')
    await v2.click('#operations-pets-listPets .opblock-summary')
    await v2.click('#operations-pets-listPets .try-out__btn')
    const field = (name: string) => v2.locator(`#operations-pets-listPets tr[data-param-name="${name}"] input`)
    for (const name of ['id', 'categoryId', 'after']) t.equal(await field(name).inputValue(), '', `Try it out leaves ${name} empty`)
    t.equal(await v2.locator('#operations-pets-listPets tr[data-param-name="status"] select').inputValue(), '', 'and status unchosen')
    await v2.click('#operations-pets-listPets .execute')
    const url = v2.locator('#operations-pets-listPets .request-url pre')
    await url.waitFor()
    t.equal(await url.innerText(), `${origin}/v2/pets?limit=20`, 'the request asks for no filter (limit is its default)')
    const body = v2.locator('#operations-pets-listPets .live-responses-table .response-col_description pre').first()
    t.strictSame(
      JSON.parse(await body.innerText()).map(({ name }: { name: string }) => name),
      ['Tom'],
      'and its answer lists the pet',
    )
    t.strictSame(consoleErrors, [], 'the pages work under their Content-Security-Policy: nothing blocked, no error')
  },
)
