// First-render timing of the embedded dashboard, for tests/examples/page-bench.rs:
// loads each URL RUNS times in a fresh context (no cache) and prints the
// median and the spread, from navigation to the page marking itself ready.
//
// Environment: URLS (newline-separated `label|url`), RUNS, CHROMIUM.

import { launch } from './harness.mjs'

const runs = Number(process.env.RUNS ?? '7')
const browser = await launch()
for (const line of (process.env.URLS ?? '').split('\n').filter(Boolean)) {
  const [label, url] = line.split('|')
  const times = []
  for (let i = 0; i < runs; i++) {
    const context = await browser.newContext({ viewport: { width: 1200, height: 1400 } })
    const page = await context.newPage()
    const started = performance.now()
    await page.goto(url)
    await page.waitForSelector('html[data-ready="true"]', { timeout: 60000 })
    times.push(performance.now() - started)
    await context.close()
  }
  times.sort((a, b) => a - b)
  const median = times[Math.floor(times.length / 2)]
  console.log(`${label}: median ${median.toFixed(0)} ms (min ${times[0].toFixed(0)}, max ${times[times.length - 1].toFixed(0)}, ${runs} loads)`)
}
await browser.close()
