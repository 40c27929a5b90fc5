// The uptime bar: the range cut into equal cells, each coloured by the
// share of good events it held against the objective's target, maintenance
// marked, with a summary in words for those who do not see the colours.

import { el } from './dom'
import { clock, count, day, percent } from './format'
import type { MinutePoint } from './model'


const dayOf = (ms: number) => day(new Date(ms).toISOString())

interface Cell {
  start: number
  end: number
  good: number
  total: number
  maintenance: boolean
}

/** The bar of `[from, to)` in `cells` equal intervals (a day's 96 quarter
 * hours, or a period's days); `daily` labels cells by their date. */
export function uptimeBar(
  points: MinutePoint[],
  from: string,
  to: string,
  targetPpm: number,
  cellCount = 96,
  daily = false,
): HTMLElement {
  const CELLS = cellCount
  const start = new Date(from).getTime()
  const end = new Date(to).getTime()
  const width = (end - start) / CELLS
  const cells: Cell[] = Array.from({ length: CELLS }, (_, i) => ({
    start: start + i * width,
    end: start + (i + 1) * width,
    good: 0,
    total: 0,
    maintenance: false,
  }))
  for (const p of points) {
    const i = Math.floor((new Date(p.minute).getTime() - start) / width)
    const cell = cells[i]
    if (!cell) continue
    cell.good += p.good
    cell.total += p.total
    if (p.maintenance) cell.maintenance = true
  }
  let bad = 0
  let good = 0
  let total = 0
  const list = el('ol', { class: `uptime-bar${daily ? ' daily' : ''}`, 'aria-hidden': 'true' })
  for (const c of cells) {
    good += c.good
    total += c.total
    const ppm = c.total > 0 ? Math.floor((c.good * 1_000_000) / c.total) : null
    const state =
      ppm === null ? 'none' : ppm >= targetPpm ? 'ok' : ppm >= 900_000 ? 'degraded' : 'down'
    if (state === 'degraded' || state === 'down') bad += 1
    const title =
      (daily ? `${dayOf(c.start)}: ` : `${clock(c.start)}–${clock(c.end)}: `) +
      (ppm === null ? 'no requests' : `${percent(ppm)} good of ${count(c.total)}`) +
      (c.maintenance ? ', maintenance' : '')
    list.append(
      el('li', {
        class: `cell ${state}${c.maintenance ? ' maintenance' : ''}`,
        title,
        'data-state': state,
      }),
    )
  }
  const overall = total > 0 ? percent(Math.floor((good * 1_000_000) / total)) : 'no requests'
  const words =
    total > 0
      ? `${overall} of ${count(total)} requests good; ${bad} of ${CELLS} ${daily ? 'days' : 'intervals'} below target.`
      : 'No requests in this range.'
  return el(
    'figure',
    { class: 'uptime' },
    list,
    el(
      'figcaption',
      {},
      el('span', { class: 'sr-summary', 'data-testid': daily ? 'period-summary' : 'uptime-summary' }, words),
      el(
        'span',
        { class: 'legend', 'aria-hidden': 'true' },
        el('span', { class: 'swatch ok' }),
        'met ',
        el('span', { class: 'swatch degraded' }),
        'below target ',
        el('span', { class: 'swatch down' }),
        'below 90% ',
        el('span', { class: 'swatch maintenance' }),
        'maintenance',
      ),
    ),
  )
}
