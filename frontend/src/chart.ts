// The latency chart: p50, p95 and p99 per minute with uPlot, and the same
// in words (the figure's caption) for screen readers and for print.

import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { el } from './dom'
import { duration } from './format'
import type { PercentilePoint } from './model'

type Measure = 'latency' | 'ttft' | 'tpot'

const NAMES: Record<Measure, string> = {
  latency: 'Latency',
  ttft: 'Time to first token',
  tpot: 'Time per output token',
}

export function percentileChart(
  points: PercentilePoint[],
  measure: Measure,
  unit = 'minutes',
): HTMLElement | null {
  const rows = points.filter((p) => p[measure].count > 0)
  if (rows.length === 0) return null
  const xs = rows.map((p) => new Date(p.minute).getTime() / 1000)
  const ms = (v: number | undefined) => (v === undefined ? null : v / 1000)
  const p50 = rows.map((p) => ms(p[measure].p50_us))
  const p95 = rows.map((p) => ms(p[measure].p95_us))
  const p99 = rows.map((p) => ms(p[measure].p99_us))
  const worst = Math.max(...rows.map((p) => p[measure].p99_us ?? 0))
  const sorted = rows.map((p) => p[measure].p50_us ?? 0).sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0
  const canvas = el('div', { class: 'chart', 'aria-hidden': 'true' })
  const figure = el(
    'figure',
    { class: 'percentiles', 'data-measure': measure },
    el('h4', {}, NAMES[measure]),
    canvas,
    el(
      'figcaption',
      { 'data-testid': `${measure}-summary` },
      `${NAMES[measure]} over ${rows.length} ${unit}: typical (median p50) ${duration(median)}, ` +
        `worst p99 ${duration(worst)}.`,
    ),
  )
  const style = getComputedStyle(document.documentElement)
  const color = (name: string) => style.getPropertyValue(name).trim() || '#888'
  const draw = () => {
    const width = Math.max(280, canvas.clientWidth)
    canvas.replaceChildren()
    new uPlot(
      {
        width,
        height: 200,
        scales: { x: { time: true } },
        axes: [
          { stroke: color('--muted'), grid: { stroke: color('--grid') } },
          {
            stroke: color('--muted'),
            grid: { stroke: color('--grid') },
            values: (_u, ticks) => ticks.map((t) => `${t} ms`),
            size: 64,
          },
        ],
        series: [
          {},
          { label: 'p50', stroke: color('--series-1'), width: 1.5 },
          { label: 'p95', stroke: color('--series-2'), width: 1.5 },
          { label: 'p99', stroke: color('--series-3'), width: 1.5 },
        ],
      },
      [xs, p50, p95, p99],
      canvas,
    )
  }
  // Drawn once it is in the page and has a width, and again on resizes.
  requestAnimationFrame(draw)
  let last = 0
  new ResizeObserver(() => {
    if (Math.abs(canvas.clientWidth - last) > 8) {
      last = canvas.clientWidth
      draw()
    }
  }).observe(canvas)
  return figure
}
