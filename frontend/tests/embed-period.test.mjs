// The embedded dashboard over the current period (tests/tests/e2e/pages.rs
// stores requests from the period's start): the period's days as an uptime
// bar, and the charts switched from the last day to the period so far with
// the keyboard.
//
// Environment: BASE_URL, TOKEN, DAYS (in the period), TOTAL (requests
// stored), CHROMIUM, SHOTS.

import { check, env, finish, launch } from './harness.mjs'

const browser = await launch()
const context = await browser.newContext({ viewport: { width: 1200, height: 1500 }, locale: 'en-US' })
const page = await context.newPage()
const errors = []
page.on('pageerror', (e) => errors.push(e.message))
await page.goto(`${env('BASE_URL')}/embed/?token=${env('TOKEN')}`)
await page.waitForSelector('html[data-ready="true"]')

const days = await page.locator('.uptime-bar.daily .cell').count()
check(days === Number(env('DAYS')), `the period's uptime bar has a cell per day (${days} of ${env('DAYS')})`)
const total = new Intl.NumberFormat('en-US').format(Number(env('TOTAL')))
const summary = await page.locator('[data-testid="period-summary"]').innerText()
check(summary.includes(`of ${total} requests good`), `the period's bar counts every request stored (${summary})`)
check((await page.locator('.uptime-bar.daily .cell.none').count()) >= days - 2, 'the days without requests are marked so')

// Keyboard: the first controls are the two views; Enter on "the period so
// far" redraws the charts over the period in hours and keeps the focus.
await page.keyboard.press('Tab')
await page.keyboard.press('Tab')
check((await page.evaluate(() => document.activeElement?.dataset.mode)) === 'period', 'Tab reaches "The period so far"')
await page.keyboard.press('Enter')
await page.waitForSelector('html[data-view="period"][data-ready="true"]')
await page.waitForFunction(() => document.activeElement?.tagName === 'BUTTON')
check((await page.evaluate(() => document.activeElement?.dataset.mode)) === 'period', 'the focus stays on the pressed view')
check((await page.getAttribute('button[data-mode="period"]', 'aria-pressed')) === 'true', 'the pressed view says it is pressed')
const caption = await page.locator('[data-testid="latency-summary"]').innerText()
check(/over \d+ hours/.test(caption), `the latency chart is over the period's hours (${caption})`)
check(errors.length === 0, `no script errors (${errors.join('; ')})`)
await page.screenshot({ path: `${env('SHOTS')}/dashboard-period-light-desktop.png`, fullPage: true })

await browser.close()
finish('period')
