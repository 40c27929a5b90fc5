// What every browser test shares: its environment, named checks that are
// all run and all reported, Debian's chromium, and axe-core.

import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { chromium } from 'playwright-core'

/** A required environment variable. */
export function env(name) {
  const value = process.env[name]
  if (!value) throw new Error(`${name} is not set`)
  return value
}

const failures = []

/** Records a check: every check runs, and `finish` names each that failed. */
export function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`)
  if (!ok) failures.push(what)
}

/** Exits non-zero naming the failed checks, or says all of `what` passed. */
export function finish(what) {
  if (failures.length > 0) {
    console.error(`\n${failures.length} check(s) failed:\n- ${failures.join('\n- ')}`)
    process.exit(1)
  }
  console.log(`\nall ${what} checks passed`)
}

/** Debian's chromium (the CHROMIUM variable), headless. */
export function launch() {
  return chromium.launch({ executablePath: env('CHROMIUM'), args: ['--no-sandbox', '--disable-gpu'] })
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** Runs axe-core in `page` (through the DevTools protocol: the pages'
 * policies allow no injected script) and checks for no serious or
 * critical violation. */
export async function axe(page, where) {
  await page.evaluate(axeSource)
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }))
  const serious = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  check(
    serious.length === 0,
    `${where}: no serious accessibility violations (${serious.map((v) => `${v.id}: ${v.nodes.map((n) => n.target).join(' ')}`).join(', ')})`,
  )
}
