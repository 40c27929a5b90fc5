// Browser test of the embedded dashboard, driven by
// tests/tests/e2e/pages.rs, which stores known data, serves the platform
// and mints the tokens. Runs Debian's chromium through playwright-core and
// exits non-zero naming every check that failed.
//
// Environment: BASE_URL, TOKEN_FULL (every read scope), TOKEN_NARROW
// (sla:read and sla:read:uptime only), RANGE (`from=…&to=…`), CHROMIUM
// (the browser), SHOTS (where the screenshots go).

import { mkdirSync } from 'node:fs'
import { axe, check, env, finish, launch } from './harness.mjs'

const base = env('BASE_URL')
const range = env('RANGE')
const shots = env('SHOTS')
mkdirSync(shots, { recursive: true })

const browser = await launch()

/** Whether every label of `labels` (`|`-separated) is a short duration:
 * under a second in ms, else in s (`250 ms`, `12 s`), never `12000 ms`. */
function shortDurations(labels) {
  return labels.split('|').every((l) => /^(0|\d{1,3}(\.\d+)? ms|\d+(\.\d+)? s)$/.test(l))
}

/** Opens the dashboard with `token`; answers the page, the API paths it
 * requested, and the milliseconds to its first full render. */
async function open(token, { width = 1200, height = 1400, scheme = 'light', extra = '', span = range } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme: scheme })
  const page = await context.newPage()
  const requested = []
  const errors = []
  page.on('request', (r) => requested.push(new URL(r.url()).pathname))
  page.on('pageerror', (e) => errors.push(e.message))
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()))
  const started = Date.now()
  await page.goto(`${base}/embed/?token=${token}&${span}${extra}`)
  await page.waitForSelector('html[data-ready]', { timeout: 20000 })
  const millis = Date.now() - started
  return { page, context, requested, errors, millis }
}

// Every read scope: everything shown, nothing refused.
{
  const { page, context, requested, errors, millis } = await open(env('TOKEN_FULL'))
  console.log(`first render with every scope: ${millis} ms`)
  check((await page.evaluate(() => document.documentElement.dataset.ready)) === 'true', 'full: the page loaded')
  check(errors.length === 0, `full: no script or console errors (${errors.join('; ')})`)
  check(!page.url().includes('token='), 'full: the token was removed from the address')
  check((await page.locator('article.objective').count()) === 4, 'full: four objectives')
  const availability = page.locator('article[data-objective="availability"]')
  // November is closed; the current period (December) has no requests yet.
  check((await availability.locator('[data-testid="state"]').innerText()) === 'No requests yet',
    'full: the current period says it has no requests yet')
  const uptime = await page.locator('[data-testid="uptime-summary"]').innerText()
  check(uptime.includes('99.167% of 1,440 requests good') && uptime.includes('1 of 96 intervals below target'),
    `full: the uptime bar of 11 November (${uptime})`)
  check((await page.locator('.uptime-bar .cell.down').count()) === 1, 'full: one interval coloured down (01:00-01:15, 12 of 15 failed)')
  check((await page.locator('.uptime-bar .cell.ok').count()) === 95, 'full: the other 95 met')
  const latency = await page.locator('[data-testid="latency-summary"]').innerText()
  check(latency.includes('over 1440 minutes'), `full: the latency chart over the day's minutes (${latency})`)
  check((await page.locator('figure.percentiles canvas').count()) >= 1, 'full: the chart is drawn')
  await page.waitForFunction(() => document.querySelector('figure.percentiles[data-measure="latency"]')?.dataset.yLabels)
  const yLabels = await page.locator('figure.percentiles[data-measure="latency"]').getAttribute('data-y-labels')
  check(shortDurations(yLabels), `full: the latency axis labels are short durations (${yLabels})`)
  check((await page.locator('[data-not-shared]').count()) === 0, 'full: nothing said to be unshared')
  check((await page.locator('section.attestations tbody tr').count()) === 4, 'full: the four attestations of November')
  const closed = await page.locator('section.periods tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.met))
  check(closed.length === 4 && closed.filter((m) => m === 'false').length === 2,
    `full: November's four results, two missed (availability 99.6% < 99.9%, good-minutes 98% < 99%) (${closed.join(', ')})`)
  const late = await page.locator('section.periods tbody tr').evaluateAll((rows) =>
    rows.map((r) => [r.cells[1].innerText, r.cells[4].dataset.late, r.cells[4].innerText]))
  const lateAvailability = late.find(([objective]) => objective === 'availability')
  check(lateAvailability !== undefined && lateAvailability[1] === '1' &&
    lateAvailability[2].includes('1 (1 failed)') && lateAvailability[2].includes('1 since the result'),
    `full: the failure that arrived after November closed is shown on it, not counted (${JSON.stringify(late)})`)
  // A time-slice objective counts hours, not requests (#34: it said
  // "Requests 5 good of 6").
  const slices = page.locator('article[data-objective="good-minutes"]')
  const sliceCounts = await slices.locator('[data-testid="counts"]').innerText()
  check((await slices.locator('dt', { hasText: 'Intervals' }).count()) === 1 && sliceCounts.includes('of 1 hour each'),
    `full: the good-minutes objective counts hour intervals (${sliceCounts})`)
  check((await availability.locator('dt', { hasText: 'Requests' }).count()) === 1,
    'full: availability counts requests')
  check((await page.locator('[data-testid="alerts"]').count()) === 1, 'full: the alerts are shown')
  check((await page.locator('.range').first().innerText()).includes('your time zone'), 'full: the time zone is named')
  check(requested.some((p) => p.endsWith('/attestations')), 'full: the attestations were requested')
  const logCheck = page.locator('[data-testid="request-check"]')
  const logText = await logCheck.innerText()
  check(logText.includes('1 of 2 requests included as you saw them') && logText.includes('1 missing'),
    `full: the last check of the customer's request log (${logText})`)
  check((await logCheck.getAttribute('data-problems')) === '1', 'full: the check has one problem (a missing request)')
  await axe(page, 'full')
  await page.screenshot({ path: `${shots}/dashboard-light-desktop.png`, fullPage: true })
  await context.close()
}

// A range with one minute of requests (a 12-second one at 02:00 on the
// 12th): the chart's time axis spans that minute, not the years uPlot
// spread one point over.
{
  const { page, context, errors } = await open(env('TOKEN_FULL'), {
    span: 'from=2026-11-12T02:00:00Z&to=2026-11-12T02:30:00Z',
  })
  check(errors.length === 0, `one point: no script or console errors (${errors.join('; ')})`)
  const latency = await page.locator('[data-testid="latency-summary"]').innerText()
  check(latency.includes('over 1 minute:'), `one point: one minute of latency (${latency})`)
  await page.waitForFunction(() => document.querySelector('figure.percentiles[data-measure="latency"]')?.dataset.xSpanSecs)
  const span = Number(await page.locator('figure.percentiles[data-measure="latency"]').getAttribute('data-x-span-secs'))
  check(span > 0 && span <= 3600, `one point: the time axis spans ${span} s around the minute, not years`)
  // Its 12-second request: the axis reads in seconds.
  const labels = await page.locator('figure.percentiles[data-measure="latency"]').getAttribute('data-y-labels')
  check(shortDurations(labels) && labels.includes(' s'), `one point: the axis up to 12 s is labelled in seconds (${labels})`)
  await context.close()
}

// sla:read and sla:read:uptime only: what is refused is never requested,
// and the page says it is not shared.
{
  const { page, context, requested, errors } = await open(env('TOKEN_NARROW'))
  check(errors.length === 0, `narrow: no script or console errors (${errors.join('; ')})`)
  check(!requested.some((p) => p.endsWith('/attestations')), 'narrow: attestations never requested')
  check(!requested.some((p) => p.startsWith('/v1/transparency/')), 'narrow: the log check never requested')
  const refused = await page.locator('[data-not-shared]').evaluateAll((els) => els.map((e) => e.dataset.notShared))
  check(!requested.some((p) => p.endsWith('/alerts')), 'narrow: alerts never requested')
  for (const scope of ['attestation:read', 'sla:read:credits', 'sla:read:latency', 'alert:read']) {
    check(refused.includes(scope), `narrow: says ${scope} is not shared (${refused.join(', ')})`)
  }
  check((await page.locator('figure.percentiles').count()) === 0, 'narrow: no latency chart')
  check((await page.locator('article[data-objective="availability"] [data-testid="compliance"]').count()) === 1,
    'narrow: availability (uptime) still shown')
  await context.close()
}

// An expired or forged token: a plain page that says so, no script.
{
  const context = await browser.newContext()
  const page = await context.newPage()
  const answer = await page.goto(`${base}/embed/?token=not.a.token`)
  check(answer.status() === 401, `forged: 401 (${answer.status()})`)
  check((await page.locator('h1').innerText()) === 'Dashboard unavailable', 'forged: says the dashboard is unavailable')
  await context.close()
}

// Screenshots: light and dark, desktop and phone.
for (const scheme of ['light', 'dark']) {
  for (const [device, width, height] of [['desktop', 1200, 1400], ['phone', 390, 844]]) {
    if (scheme === 'light' && device === 'desktop') continue
    const { page, context } = await open(env('TOKEN_FULL'), { width, height, scheme })
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1)
    check(!overflow, `${scheme} ${device}: no sideways scrolling`)
    await page.screenshot({ path: `${shots}/dashboard-${scheme}-${device}.png`, fullPage: true })
    await context.close()
  }
}

// A brand colour from the embed parameters, and nothing but a colour.
{
  const { page, context } = await open(env('TOKEN_FULL'), {
    extra: '&brand=%23aa3300&theme=dark&logo=https%3A%2F%2Fcdn.example.com%2Flogo.svg&logo_alt=Acme%20AI',
  })
  check((await page.getAttribute('img.logo', 'src')) === 'https://cdn.example.com/logo.svg', 'the provider logo is shown')
  check((await page.getAttribute('img.logo', 'alt')) === 'Acme AI', 'the logo has its text alternative')
  const brand = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--brand').trim())
  check(brand === '#aa3300', `brand colour applied (${brand})`)
  check((await page.evaluate(() => document.documentElement.dataset.theme)) === 'dark', 'theme=dark applied')
  await context.close()
  const bad = await open(env('TOKEN_FULL'), { extra: '&brand=red;background:url(x)&logo=javascript:alert(1)' })
  check((await bad.page.locator('img.logo').count()) === 0, 'a logo that is not https is ignored')
  const kept = await bad.page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--brand').trim())
  check(kept === '#2456d6', `a brand that is not a colour is ignored (${kept})`)
  await bad.context.close()
}

await browser.close()
finish('dashboard')
