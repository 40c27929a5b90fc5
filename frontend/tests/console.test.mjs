// Browser test of the provider's console, driven by
// tests/tests/e2e/pages.rs (a tenant with the SLA chat-sla and the
// customer acme-corp). Runs Debian's chromium through playwright-core;
// exits non-zero naming every check that failed.
//
// Environment: BASE_URL, TOKEN (a provider admin's), CHROMIUM, SHOTS.

import { axe, check, env, finish, launch } from './harness.mjs'

/** Waits for the section `view` (e.g. `slas/chat-sla`) to be shown. */
const ready = async (page, view) => {
  await page.waitForSelector(`#view[data-view="${view}"][aria-busy="false"]`)
}

const browser = await launch()
const context = await browser.newContext({ viewport: { width: 1200, height: 1300 } })
const page = await context.newPage()
const errors = []
page.on('pageerror', (e) => errors.push(e.message))
await page.goto(`${env('BASE_URL')}/console/`)
await page.waitForSelector('#token')

// Keyboard: the token field has the focus; signing in by keyboard.
check((await page.evaluate(() => document.activeElement?.id)) === 'token', 'the token field has the focus')
await page.fill('#token', 'not-a-token')
await page.keyboard.press('Tab')
await page.keyboard.press('Enter')
await page.waitForSelector('.sign-in .error')
check((await page.locator('.sign-in .error').innerText()).includes('refused'), 'a bad token is refused, and the page says so')
await page.fill('#token', env('TOKEN'))
await page.click('.sign-in button')
await ready(page, 'slas')
check((await page.locator('a[href="#slas/chat-sla"]').count()) === 1, 'the SLA list shows chat-sla')
await axe(page, 'SLA list')
await page.screenshot({ path: `${env('SHOTS')}/console-slas-light-desktop.png`, fullPage: true })

// The document, applied with an error: the problem is shown in place.
await page.click('a[href="#slas/chat-sla"]')
await ready(page, 'slas/chat-sla')
const doc = await page.inputValue('#document')
check(doc.includes('name: chat-sla'), 'the editor holds the exported document')
await page.fill('#document', doc.replace('target: 99.9%', 'target: 199%'))
await page.click('#apply')
await page.waitForSelector('#document-problems li')
const paths = await page.locator('#document-problems li[data-path]').evaluateAll((els) => els.map((e) => e.dataset.path))
check(paths.some((p) => p.startsWith('spec.objectives[0].target')), `the problem names its path in place (${paths.join(', ')})`)
check((await page.getAttribute('#document', 'aria-invalid')) === 'true', 'the document is marked invalid')
check((await page.evaluate(() => document.activeElement?.id)) === 'document', 'focus returns to the document')
await page.screenshot({ path: `${env('SHOTS')}/console-sla-error-light-desktop.png`, fullPage: true })
await page.fill('#document', doc.replace('target: 99.9%', 'target: 99.95%'))
await page.click('#apply')
await page.waitForFunction(() => (document.querySelector('.editor .outcome')?.textContent ?? '').length > 0)
const outcome = await page.locator('.editor .outcome').innerText()
check(outcome.includes('version 2'), `the fixed document is applied as version 2 (${outcome})`)
check((await page.locator('#document-problems li').count()) === 0, 'the problems are gone')

// Where the bad events came from: answered in place; a bad attribute name
// is refused in the API's words.
await page.selectOption('#a-hours', '24')
await page.click('#attribution button[type="submit"]')
await page.waitForSelector('[data-testid="attribution-summary"]')
const summary = await page.locator('[data-testid="attribution-summary"]').innerText()
check(/^0 bad of 0 counted events since .* over 0 values of model\.$/.test(summary), `the breakdown answers for the last day (${summary})`)
await page.fill('#a-attr', 're gion')
await page.click('#attribution button[type="submit"]')
await page.waitForSelector('#attribution .error')
check((await page.locator('#attribution .error').innerText()).includes('attr.re gion'), 'a bad attribute name is refused in place')
await axe(page, 'SLA page with the breakdown')

// Customers: listed, and one added.
await page.click('a[href="#customers"]')
await ready(page, 'customers')
check((await page.locator('td', { hasText: 'acme-corp' }).count()) === 2, 'the ranking and the customers list show acme-corp')
const ranked = await page.locator('[data-testid="ranking"] tbody tr').first().innerText()
check(ranked.includes('acme-corp') && ranked.includes('chat-sla'), `the ranking names acme-corp and its SLA closest to missing (${ranked})`)
await axe(page, 'customers with the ranking')
await page.fill('#f-external_ref', 'globex')
await page.fill('#f-name', 'Globex')
await page.click('form.inline button')
await page.waitForSelector('.outcome p')
check((await page.locator('.outcome p').innerText()).startsWith('Added Globex'), 'a customer is added')

// The embed snippet generator.
await page.click('a[href="#embed"]')
await ready(page, 'embed')
await page.click('form.inline button[type="submit"]')
await page.waitForSelector('[data-testid="iframe-snippet"]')
const snippet = await page.locator('[data-testid="iframe-snippet"]').innerText()
check(snippet.includes('/embed/?token=ey'), 'the iframe snippet carries a fresh embed token')
check((await page.locator('[data-testid="component-snippet"]').innerText()).includes('<slaproof-dashboard token='), 'the web component snippet too')
await axe(page, 'embed generator')

// Maintenance: a window announced two days ahead; one ending before it
// starts is refused, in place.
await page.click('a[href="#maintenance"]')
await ready(page, 'maintenance')
const ahead = (hours) => new Date(Date.now() + hours * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z')
await page.fill('#f-sla', 'chat-sla')
await page.fill('#f-starts_at', ahead(48))
await page.fill('#f-ends_at', ahead(47))
await page.fill('#f-description', 'database upgrade')
await page.click('form.inline button')
await page.waitForSelector('form.inline .outcome .error')
check((await page.locator('form.inline .outcome .error').innerText()).length > 0, 'a window that ends before it starts is refused in place')
await page.fill('#f-ends_at', ahead(49))
await page.click('form.inline button')
await page.waitForSelector('[data-testid="announced"]')
const announced = await page.locator('[data-testid="announced"]').innerText()
check(announced.startsWith('Announced'), 'a maintenance window is announced')
// Two days ahead is short of the 72-hour notice: the provider is told what that means.
check(announced.includes('emergency') && announced.includes('until the customer accepts it'), `the window's standing is explained: ${announced}`)

// Ingest keys: one made (shown once), then revoked.
await page.click('a[href="#keys"]')
await ready(page, 'keys')
await page.fill('#f-name', 'eu-west gateway')
await page.click('form.inline button')
await page.waitForSelector('[data-testid="new-key"]')
check((await page.locator('[data-testid="new-key"]').innerText()).startsWith('spk_'), 'a new ingest key is shown once')
await page.click('a[href="#customers"]')
await ready(page, 'customers')
await page.click('a[href="#keys"]')
await ready(page, 'keys')
page.once('dialog', (d) => d.accept())
await page.locator('button[data-revoke]').last().click()
await page.waitForSelector('text=revoked now')
check(true, 'a key is revoked from the console')

// Every other section renders.
for (const section of ['maintenance', 'keys', 'probes', 'webhooks']) {
  await page.click(`a[href="#${section}"]`)
  await ready(page, section)
  check((await page.locator('#view .error').count()) === 0, `the ${section} section renders`)
}
check(errors.length === 0, `no script errors (${errors.join('; ')})`)

// The SLA list in light and dark, on a desktop and a phone.
for (const [scheme, device, width, height] of [
  ['dark', 'desktop', 1200, 1300],
  ['light', 'phone', 390, 844],
]) {
  const other = await browser.newContext({ viewport: { width, height }, colorScheme: scheme })
  const shown = await other.newPage()
  await shown.goto(`${env('BASE_URL')}/console/#token=${env('TOKEN')}`)
  await shown.click('#link-sign-in')
  await ready(shown, 'slas')
  check(!(await shown.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1)), `${scheme} ${device}: no sideways scrolling`)
  await shown.screenshot({ path: `${env('SHOTS')}/console-slas-${scheme}-${device}.png`, fullPage: true })
  await other.close()
}

// A phone, dark.
const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: 'dark' })
const small = await phone.newPage()
// A token in a link is not used until confirmed (login CSRF): the page
// names the token's tenant and makes no API call before the click.
const calls = []
small.on('request', (r) => {
  if (r.url().includes('/v1/')) calls.push(r.url())
})
await small.goto(`${env('BASE_URL')}/console/#token=${env('TOKEN')}`)
await small.waitForSelector('[data-testid="confirm-link"]')
check(!(await small.evaluate(() => window.location.hash.includes('token'))), 'the token leaves the address at once')
check((await small.locator('[data-testid="link-tenant"]').innerText()).length > 10, 'the confirmation names the token\'s tenant')
check(calls.length === 0 && (await small.evaluate(() => sessionStorage.length)) === 0, `nothing is read or kept before the click (${calls.join(', ')})`)
await axe(small, 'sign in from a link')
await small.click('#link-sign-in')
await ready(small, 'slas')
// The keyboard checks start from a fresh load (the tab keeps the token).
await small.reload()
await ready(small, 'slas')
await small.keyboard.press('Tab')
check((await small.evaluate(() => document.activeElement?.className)) === 'skip', 'the first Tab reaches the skip link')
await small.keyboard.press('Enter')
check((await small.evaluate(() => document.activeElement?.id)) === 'view', 'the skip link moves the focus to the content')
check(!(await small.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1)), 'phone: no sideways scrolling')
await small.screenshot({ path: `${env('SHOTS')}/console-slas-dark-phone.png`, fullPage: true })

await browser.close()
finish('console')
