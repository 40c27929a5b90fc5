// Numbers and times in words a customer reads at a glance; times in the
// viewer's own time zone, which the page names.

export const viewerZone = Intl.DateTimeFormat().resolvedOptions().timeZone

const dateTime = new Intl.DateTimeFormat(undefined, {
  dateStyle: 'medium',
  timeStyle: 'short',
})
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' })
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' })

export function when(iso: string): string {
  return dateTime.format(new Date(iso))
}

export function day(iso: string): string {
  return dateOnly.format(new Date(iso))
}

export function clock(ms: number): string {
  return timeOnly.format(new Date(ms))
}

/** Parts per million as a percentage with as many decimals as a target
 * such as 99.95% needs. */
export function percent(ppm: number): string {
  const value = ppm / 10_000
  const decimals = ppm % 10_000 === 0 ? 0 : ppm % 1_000 === 0 ? 1 : ppm % 100 === 0 ? 2 : 3
  return `${value.toFixed(decimals)}%`
}

export function count(n: number): string {
  return new Intl.NumberFormat().format(n)
}

/** Microseconds as ms or s. */
export function duration(us: number): string {
  if (us >= 1_000_000) return `${(us / 1_000_000).toFixed(2)} s`
  if (us >= 1_000) return `${(us / 1_000).toFixed(us >= 100_000 ? 0 : 1)} ms`
  return `${us} µs`
}

export function burn(milli: number): string {
  return `${(milli / 1000).toFixed(2)}×`
}

export function periodOf(start: string, end: string): string {
  // The end is exclusive: show its day before.
  const last = new Date(new Date(end).getTime() - 1)
  return `${day(start)} – ${dateOnly.format(last)}`
}
