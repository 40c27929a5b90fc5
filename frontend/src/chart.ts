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

/** A tick of the y axis (milliseconds) as a short label: `250 ms`, `1.5 s`,
 * `10 s`, never `10000 ms`. */
export function axisDuration(ms: number): string {
  if (ms === 0) return '0'
  if (Math.abs(ms) >= 1000) return `${Number((ms / 1000).toFixed(2))} s`
  return `${Number(ms.toFixed(2))} ms`
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
  // uPlot spreads a single instant over a thousand days of time axis: one
  // point gets an empty step either side of it instead.
  const step = unit === 'hours' ? 3600 : 60
  const framed: uPlot.AlignedData =
    xs.length === 1
      ? [[xs[0] - step, xs[0], xs[0] + step], [null, p50[0], null], [null, p95[0], null], [null, p99[0], null]]
      : [xs, p50, p95, p99]
  const canvas = el('div', { class: 'chart', 'aria-hidden': 'true' })
  const figure = el(
    'figure',
    { class: 'percentiles', 'data-measure': measure },
    el('h4', {}, NAMES[measure]),
    canvas,
    el(
      'figcaption',
      { 'data-testid': `${measure}-summary` },
      `${NAMES[measure]} over ${rows.length} ${rows.length === 1 ? unit.replace(/s$/, '') : unit}: typical (median p50) ${duration(median)}, ` +
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
        hooks: {
          // What the time axis spans, once set, for the browser test.
          setScale: [
            (u, key) => {
              const { min, max } = u.scales.x
              if (key === 'x' && min !== undefined && max !== undefined) figure.dataset.xSpanSecs = String(max - min)
            },
          ],
        },
        axes: [
          { stroke: color('--muted'), grid: { stroke: color('--grid') } },
          {
            stroke: color('--muted'),
            grid: { stroke: color('--grid') },
            values: (_u, ticks) => {
              const labels = ticks.map(axisDuration)
              figure.dataset.yLabels = labels.join('|')
              return labels
            },
            // As wide as the longest label drawn, so none is clipped.
            size: (self, values, axisIdx, cycleNum) => {
              const axis = self.axes[axisIdx]
              if (cycleNum > 1) return (axis as { _size?: number })._size ?? 48
              const longest = (values ?? []).reduce((a, v) => (v.length > a.length ? v : a), '')
              let size = (axis.ticks?.size ?? 10) + (axis.gap ?? 5)
              if (longest !== '') {
                self.ctx.font = Array.isArray(axis.font) ? axis.font[0] : (axis.font ?? '12px sans-serif')
                size += self.ctx.measureText(longest).width / devicePixelRatio
              }
              return Math.ceil(size)
            },
          },
        ],
        series: [
          {},
          { label: 'p50', stroke: color('--series-1'), width: 1.5 },
          { label: 'p95', stroke: color('--series-2'), width: 1.5 },
          { label: 'p99', stroke: color('--series-3'), width: 1.5 },
        ],
      },
      framed,
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
