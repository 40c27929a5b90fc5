// The embedded customer dashboard: what the embed token in the address
// allows, per SLA, read from the API with that token. Parts the token does
// not allow are never requested; the page says they are not shared.

import './style.css'
import { Api, ApiError } from './api'
import { percentileChart } from './chart'
import { dataTable, el, notShared } from './dom'
import { burn, count, percent, periodOf, viewerZone, when } from './format'
import type {
  AlertsView,
  AttestationsView,
  LatestCheck,
  PeriodResult,
  PeriodsView,
  Dashboard,
  ListOut,
  ObjectiveDashboard,
  SlaSummary,
} from './model'
import { type EmbedClaims, claimsOf, holds, takeToken } from './token'
import { uptimeBar } from './uptime'

const app = document.getElementById('app') as HTMLElement

/** The provider's logo (`?logo=https://…`), for the header. */
function logo(params: URLSearchParams): HTMLElement | null {
  const src = params.get('logo')
  if (!src) return null
  try {
    if (new URL(src).protocol !== 'https:') return null
  } catch {
    return null
  }
  return el('img', { class: 'logo', src, alt: params.get('logo_alt') ?? 'Provider logo', referrerpolicy: 'no-referrer' })
}

function applyTheme(params: URLSearchParams): void {
  const theme = params.get('theme')
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme
  const brand = params.get('brand')
  // A colour only: anything else could carry CSS.
  if (brand && /^#[0-9a-fA-F]{3}([0-9a-fA-F]{3})?$/.test(brand)) {
    document.documentElement.style.setProperty('--brand', brand)
  }
}

/** A slice length in words: `1 minute`, `15 minutes`, `1 hour`, `1 day`. */
function spanName(secs: number): string {
  const [n, unit] = secs % 86_400 === 0 ? [secs / 86_400, 'day'] : secs % 3600 === 0 ? [secs / 3600, 'hour'] : [secs / 60, 'minute']
  return `${n} ${unit}${n === 1 ? '' : 's'}`
}

function scopeFor(d: Dashboard, field: string, fallback: string): string {
  return d.redacted.find((r) => r.field === field || r.field.startsWith(`${field}`))?.scope ?? fallback
}

function objectiveCard(d: Dashboard, o: ObjectiveDashboard): HTMLElement {
  const card = el('article', { class: 'objective', 'data-objective': o.objective })
  card.append(el('h3', {}, o.objective), el('p', { class: 'family' }, o.family))
  if (o.numbers === undefined) {
    card.append(notShared('This objective', scopeFor(d, `objectives[${o.objective}]`, 'sla:read')))
    return card
  }
  const n = o.numbers
  if (n === null) {
    card.append(el('p', {}, 'No evaluation yet.'))
    return card
  }
  const noData = n.total === 0
  const state = noData ? 'no-data' : !n.met ? 'missed' : n.at_risk ? 'at-risk' : 'met'
  const label = {
    'no-data': 'No requests yet',
    missed: 'Below target',
    'at-risk': 'At risk',
    met: 'Meeting target',
  }[state]
  const remaining =
    n.budget_allowed > 0 ? Math.max(0, Math.round((n.budget_remaining * 100) / n.budget_allowed)) : null
  card.append(
    el('p', { class: `badge ${state}`, 'data-testid': 'state' }, label),
    el(
      'dl',
      {},
      el('dt', {}, 'Compliance'),
      el(
        'dd',
        { 'data-testid': 'compliance' },
        n.compliance_ppm === null || n.compliance_ppm === undefined
          ? 'no events yet'
          : percent(n.compliance_ppm),
        el('span', { class: 'target' }, ` target ${percent(n.target_ppm)}`),
      ),
      el('dt', {}, 'Error budget left'),
      el(
        'dd',
        { 'data-testid': 'budget' },
        remaining === null ? 'none allowed yet' : `${remaining}%`,
        remaining === null
          ? null
          : el('meter', {
              min: '0',
              max: '100',
              low: '25',
              optimum: '100',
              value: String(remaining),
              'aria-label': 'Error budget left',
            }),
      ),
      el('dt', {}, 'Burn rate'),
      el('dd', { 'data-testid': 'burn' }, burn(n.burn_rate_milli)),
      el('dt', {}, 'Period'),
      el('dd', {}, periodOf(n.period_start, n.period_end)),
      el('dt', {}, o.slice_secs ? 'Intervals' : 'Requests'),
      el(
        'dd',
        { 'data-testid': 'counts' },
        `${count(n.good)} good of ${count(n.total)}`,
        o.slice_secs ? el('span', { class: 'target' }, ` of ${spanName(o.slice_secs)} each`) : null,
      ),
    ),
  )
  return card
}

async function attestations(api: Api, claims: EmbedClaims, sla: string): Promise<HTMLElement> {
  const section = el('section', { class: 'attestations', 'aria-labelledby': `att-${sla}` })
  section.append(el('h3', { id: `att-${sla}` }, 'Proofs of closed periods'))
  if (!holds(claims, 'attestation:read')) {
    section.append(notShared('The proof of each closed period', 'attestation:read'))
    return section
  }
  const view = await api.get<AttestationsView>(
    `/v1/slas/${encodeURIComponent(sla)}/attestations?limit=12`,
  )
  if (view.attestations.length === 0) {
    section.append(el('p', {}, 'No period has closed yet.'))
    return section
  }
  const rows: HTMLTableRowElement[] = []
  for (const a of view.attestations) {
    const status =
      a.status === 'anchored'
        ? `Proven and anchored (${a.anchor_path})`
        : a.status === 'proven'
          ? 'Proven, anchoring'
          : a.status === 'pending'
            ? 'Being proven'
            : 'Not provable'
    rows.push(
      el(
        'tr',
        { 'data-status': a.status },
        el('td', {}, periodOf(a.period_start, a.period_end)),
        el('td', {}, a.objective),
        el(
          'td',
          {},
          status,
          a.reason ? el('span', { class: 'reason' }, ` — ${a.reason}`) : null,
          // A one-party setup's key can forge: said beside every proof made with one.
          a.status === 'anchored' || a.status === 'proven'
            ? el(
                'span',
                { class: 'key-setup', 'data-key-setup': a.key_setup },
                a.key_setup === 'ceremony'
                  ? ' — key from a multi-party ceremony'
                  : ' — development key: whoever ran its setup could forge this proof',
              )
            : null,
        ),
        el(
          'td',
          {},
          el('code', {}, a.id),
          a.status === 'anchored'
            ? el(
                'a',
                {
                  href: `/audit/?attestation=${encodeURIComponent(a.id)}#token=${encodeURIComponent(api.token)}`,
                  target: '_blank',
                  rel: 'noopener noreferrer',
                  class: 'verify-link',
                },
                'Check this proof',
              )
            : null,
        ),
      ),
    )
  }
  section.append(dataTable(['Period', 'Objective', 'Status', 'Attestation'], rows))
  return section
}

/** The customer's last check of its own requests against the
 * transparency log (docs/TRANSPARENCY.md): once for the whole page. */
async function requestCheck(api: Api, claims: EmbedClaims): Promise<HTMLElement> {
  const section = el('section', { class: 'request-check', 'aria-labelledby': 'request-check' })
  section.append(el('h2', { id: 'request-check' }, 'Your requests in the transparency log'))
  if (!holds(claims, 'attestation:read')) {
    section.append(notShared('The check of your requests against the log', 'attestation:read'))
    return section
  }
  const { check } = await api.get<LatestCheck>('/v1/transparency/checks/latest')
  if (!check) {
    section.append(el('p', { 'data-testid': 'request-check' }, 'Your request log has not been checked against it yet.'))
    return section
  }
  const c = check.counts
  const problems = c.disagreeing + c.altered + c.missing
  section.append(
    el(
      'p',
      { 'data-testid': 'request-check', 'data-problems': String(problems) },
      `Last checked ${when(check.checked_at)}` +
        (check.head_day ? ` against the log as of ${check.head_day}` : '') +
        `: ${count(c.included)} of ${count(c.requests)} requests included as you saw them` +
        (problems > 0
          ? `; ${count(c.disagreeing)} recorded differently, ${count(c.altered)} changed after logging, ${count(c.missing)} missing`
          : '') +
        (c.not_logged > 0 ? `; ${count(c.not_logged)} not logged yet` : '') +
        '.',
    ),
  )
  return section
}

const RULES: Record<string, string> = {
  'page-1h': 'fast burn (1 hour)',
  'page-6h': 'burn over 6 hours',
  'ticket-3d': 'slow burn (3 days)',
}

async function alerts(api: Api, claims: EmbedClaims, sla: string): Promise<HTMLElement> {
  const section = el('section', { class: 'alerts', 'aria-labelledby': `alerts-${sla}` })
  section.append(el('h3', { id: `alerts-${sla}` }, 'Alerts'))
  if (!holds(claims, 'alert:read')) {
    section.append(notShared('Alerts', 'alert:read'))
    return section
  }
  const view = await api.get<AlertsView>(`/v1/slas/${encodeURIComponent(sla)}/alerts`)
  const firing = view.alerts.filter((a) => a.firing)
  if (firing.length === 0) {
    section.append(el('p', { 'data-testid': 'alerts' }, 'No alert is firing: no objective is burning its error budget too fast.'))
    return section
  }
  section.append(
    el(
      'ul',
      { 'data-testid': 'alerts' },
      ...firing.map((a) =>
        el(
          'li',
          { class: 'firing' },
          el('strong', {}, a.objective),
          `: ${RULES[a.rule] ?? a.rule}, burning ${burn(a.long_burn_milli)} the sustainable rate, since ${when(a.changed_at)}.`,
        ),
      ),
    ),
  )
  return section
}

async function closedPeriods(api: Api, sla: string): Promise<HTMLElement> {
  const section = el('section', { class: 'periods', 'aria-labelledby': `periods-${sla}` })
  section.append(el('h3', { id: `periods-${sla}` }, 'Closed periods'))
  const view = await api.get<PeriodsView>(`/v1/slas/${encodeURIComponent(sla)}/periods`)
  if (view.periods.length === 0) {
    section.append(el('p', {}, 'No period has closed yet.'))
    return section
  }
  const rows = [...view.periods]
    .sort((a, b) => b.period_start.localeCompare(a.period_start) || a.objective.localeCompare(b.objective))
    .slice(0, 48)
  section.append(
    dataTable(
      ['Period', 'Objective', 'Result', 'Compliance', 'Arrived late'],
      rows.map((p) =>
        el(
          'tr',
          { 'data-met': String(p.met) },
          el('td', {}, periodOf(p.period_start, p.period_end)),
          el('td', {}, p.objective),
          el('td', { class: p.met ? 'met' : 'missed' }, p.met ? 'Met' : 'Missed'),
          el(
            'td',
            {},
            p.compliance_ppm === null || p.compliance_ppm === undefined ? 'no requests' : percent(p.compliance_ppm),
            el('span', { class: 'target' }, ` target ${percent(p.target_ppm)}`),
          ),
          late(p),
        ),
      ),
    ),
  )
  if (rows.some((p) => p.late_total_now > 0)) {
    section.append(
      el(
        'p',
        { class: 'note' },
        "Requests that arrived after a period's late grace are shown, not counted: the result stays as it was judged.",
      ),
    )
  }
  return section
}

/** A closed period's requests that arrived after its late grace, counted
 * now (those since the result was frozen included), and how many failed. */
function late(p: PeriodResult): HTMLTableCellElement {
  const now = p.late_total_now ?? 0
  if (now === 0) return el('td', { 'data-late': '0' }, '—')
  const failed = now - (p.late_good_now ?? 0)
  const since = now - (p.late_total ?? 0)
  return el(
    'td',
    { 'data-late': String(now) },
    `${count(now)} (${count(failed)} failed)`,
    since > 0 && el('span', { class: 'target' }, ` ${count(since)} since the result`),
  )
}

function credits(d: Dashboard): HTMLElement {
  const section = el('section', { class: 'credits', 'aria-labelledby': `credits-${d.sla}` })
  section.append(el('h3', { id: `credits-${d.sla}` }, 'Service credits'))
  if (d.credits === undefined) {
    section.append(notShared('Credits', scopeFor(d, 'credits', 'sla:read:credits')))
    return section
  }
  if (d.credits.length === 0) {
    section.append(el('p', {}, 'No credit is owed for the closed periods.'))
    return section
  }
  const list = el('ul')
  for (const c of d.credits) {
    list.append(
      el(
        'li',
        { 'data-credit': c.credit },
        `${periodOf(c.period_start, c.period_end)}: ${c.total} ${c.currency}`,
        c.corrections > 0 ? ` (corrected ${c.corrections}×)` : '',
      ),
    )
  }
  section.append(list)
  return section
}

/** What the charts span: the last day of minutes, or the period so far in hours. */
type Mode = 'day' | 'period'

async function slaSection(
  api: Api,
  claims: EmbedClaims,
  sla: string,
  range: string,
  mode: Mode,
): Promise<HTMLElement> {
  const base = `/v1/slas/${encodeURIComponent(sla)}/dashboard`
  const latest = await api.get<Dashboard>(`${base}${range}`)
  // The period (from the latest evaluation) and, when the token may read
  // history, its days and (for the period view) its hours.
  const period = latest.objectives.find((o) => o.numbers)?.numbers ?? null
  const history = latest.objectives.some((o) => o.minutes)
  const span = (step: string): string | null =>
    period
      ? `${base}?from=${encodeURIComponent(period.period_start)}&to=${encodeURIComponent(period.period_end)}&step=${step}`
      : null
  const daysPath = history ? span('1d') : null
  const hoursPath = history && mode === 'period' ? span('1h') : null
  const [days, hours, alertsPart, periodsPart, proofsPart] = await Promise.all([
    daysPath ? api.get<Dashboard>(daysPath) : null,
    hoursPath ? api.get<Dashboard>(hoursPath) : null,
    alerts(api, claims, sla),
    closedPeriods(api, sla),
    attestations(api, claims, sla),
  ])
  const d = hours ?? latest
  const unit = d.step_secs >= 86_400 ? 'days' : d.step_secs >= 3600 ? 'hours' : 'minutes'
  const section = el('section', { class: 'sla', 'data-sla': sla, 'aria-labelledby': `sla-${sla}` })
  section.append(
    el('h2', { id: `sla-${sla}` }, sla),
    el(
      'p',
      { class: 'range' },
      `${when(d.from)} – ${when(d.to)}, in your time zone (${viewerZone})` +
        (d.time_zone && d.time_zone !== viewerZone ? `; the SLA's periods follow ${d.time_zone}.` : '.'),
    ),
  )
  const cards = el('div', { class: 'objectives' })
  for (const o of d.objectives) cards.append(objectiveCard(d, o))
  section.append(cards, alertsPart)

  const uptime = el('section', { class: 'uptime-section', 'aria-labelledby': `up-${sla}` })
  uptime.append(el('h3', { id: `up-${sla}` }, 'Uptime'))
  const withMinutes = d.objectives.find((o) => o.minutes && o.numbers)
  if (withMinutes?.minutes && withMinutes.numbers) {
    const dayPoints = days?.objectives.find((o) => o.objective === withMinutes.objective)?.minutes
    if (period && dayPoints) {
      const length = Math.round(
        (new Date(period.period_end).getTime() - new Date(period.period_start).getTime()) / 86_400_000,
      )
      uptime.append(
        el('h4', {}, `The period, day by day (${periodOf(period.period_start, period.period_end)})`),
        uptimeBar(dayPoints, period.period_start, period.period_end, withMinutes.numbers.target_ppm, length, true),
      )
    }
    uptime.append(
      el('h4', {}, mode === 'period' ? 'The period so far' : 'The last day'),
      el('p', { class: 'which' }, `Objective ${withMinutes.objective}`),
      uptimeBar(withMinutes.minutes, d.from, d.to, withMinutes.numbers.target_ppm),
    )
  } else {
    uptime.append(notShared('The minute-by-minute history', scopeFor(d, 'objectives', 'sla:read:history')))
  }
  section.append(uptime)

  const latency = el('section', { class: 'latency', 'aria-labelledby': `lat-${sla}` })
  latency.append(el('h3', { id: `lat-${sla}` }, 'Response times'))
  if (d.percentiles === undefined) {
    latency.append(notShared('Response time percentiles', scopeFor(d, 'percentiles', 'sla:read:latency')))
  } else {
    const charts = (['latency', 'ttft', 'tpot'] as const)
      .map((m) => percentileChart(d.percentiles ?? [], m, unit))
      .filter((c): c is HTMLElement => c !== null)
    if (charts.length === 0) latency.append(el('p', {}, 'No requests in this range.'))
    latency.append(...charts)
  }
  section.append(latency)

  if (d.maintenance && d.maintenance.length > 0) {
    const list = el('ul')
    for (const m of d.maintenance) list.append(el('li', {}, `${when(m.starts_at)} – ${when(m.ends_at)}`))
    section.append(el('section', { class: 'maintenance' }, el('h3', {}, 'Maintenance'), list))
  }
  section.append(periodsPart, credits(d), proofsPart)
  return section
}

function fail(message: string): void {
  app.replaceChildren(el('p', { class: 'error', role: 'alert' }, message))
  app.setAttribute('aria-busy', 'false')
}

async function main(): Promise<void> {
  const params = new URLSearchParams(window.location.search)
  applyTheme(params)
  const token = takeToken()
  const claims = token ? claimsOf(token) : null
  if (!token || !claims) {
    fail('This dashboard link is incomplete: ask the service for a new one.')
    return
  }
  const api = new Api(token)
  try {
    const names =
      claims.dashboard === 'overview'
        ? (await api.get<ListOut<SlaSummary>>('/v1/slas?limit=50')).data.map((s) => s.name)
        : [claims.dashboard]
    // `from` and `to` (RFC 3339) pick the range, `step` its points' width;
    // the last day of minutes by default.
    const range = new URLSearchParams()
    for (const key of ['from', 'to', 'step']) {
      const value = params.get(key)
      if (value) range.set(key, value)
    }
    const query = range.size > 0 ? `?${range}` : ''
    const render = async (mode: Mode): Promise<void> => {
      app.setAttribute('aria-busy', 'true')
      delete document.documentElement.dataset.ready
      const [checkPart, ...sections] = await Promise.all([
        requestCheck(api, claims),
        ...names.map((n) => slaSection(api, claims, n, query, mode)),
      ])
      const toggle = (which: Mode, label: string): HTMLElement => {
        const button = el('button', { type: 'button', 'aria-pressed': String(mode === which), 'data-mode': which }, label)
        button.addEventListener('click', () => {
          if (mode === which) return
          void render(which).then(() => {
            ;(document.querySelector(`button[data-mode="${which}"]`) as HTMLElement | null)?.focus()
          })
        })
        return button
      }
      const header = el(
        'header',
        {},
        logo(params),
        el('h1', {}, 'Service level'),
        el('p', { class: 'expires' }, `This view expires ${when(new Date(claims.exp * 1000).toISOString())}.`),
        range.size > 0
          ? null
          : el(
              'div',
              { class: 'modes', role: 'group', 'aria-label': 'Charts show' },
              toggle('day', 'The last day'),
              toggle('period', 'The period so far'),
            ),
      )
      app.replaceChildren(header, ...sections, checkPart)
      if (sections.length === 0) app.append(el('p', {}, 'No service level agreement yet.'))
      app.setAttribute('aria-busy', 'false')
      document.documentElement.dataset.view = mode
      document.documentElement.dataset.ready = 'true'
    }
    await render(params.get('view') === 'period' ? 'period' : 'day')
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      fail('This dashboard link has expired or was withdrawn: reload the page that shows it.')
    } else {
      fail(`The dashboard could not be loaded: ${err instanceof Error ? err.message : String(err)}`)
    }
    document.documentElement.dataset.ready = 'error'
  }
}

void main()
