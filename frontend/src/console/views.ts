// The console's sections. Each reads and writes through the API with the
// signed-in token; errors are shown where they happen, in the API's words.

import { type Api, ApiError } from '../api'
import { dataTable, el } from '../dom'
import { count, percent, when } from '../format'

export interface View {
  id: string
  title: string
  render(api: Api, args: string[]): Promise<HTMLElement>
}

interface Page<T> {
  data: T[]
  next_cursor?: string | null
}

type Row = Record<string, unknown>

/** A table of `rows`, one column per `[heading, cell]`. */
function table(caption: string, rows: Row[], columns: [string, (r: Row) => Node | string][]): HTMLElement {
  if (rows.length === 0) return el('p', { class: 'empty' }, `No ${caption.toLowerCase()} yet.`)
  const out = dataTable(
    columns.map(([h]) => h),
    rows.map((r) => el('tr', {}, ...columns.map(([, cell]) => el('td', {}, cell(r))))),
  )
  out.prepend(el('caption', {}, caption))
  return out
}

const text = (v: unknown): string => (v === null || v === undefined ? '—' : String(v))

/** What a window's status means for the provider: maintenance is excluded only with the customer's agreement. */
const standing: Record<string, string> = {
  planned: 'planned: excluded, inside the SLA\'s maintenance schedule',
  beyond_cap: 'beyond the cap: the part past the SLA\'s cap counts against you until the customer accepts it',
  proposed: 'proposed: outside the SLA\'s maintenance schedule, it counts against you until the customer accepts it',
  emergency: 'emergency: announced with less than the SLA\'s notice, it counts against you until the customer accepts it',
  accepted: 'accepted by the customer: excluded',
  cancelled: 'cancelled',
}
const meaning = (status: unknown): string => (typeof status === 'string' && standing[status]) || text(status)
const time = (v: unknown): string => (typeof v === 'string' ? when(v) : '—')

/** A form whose fields are text inputs; `submit` gets their values and
 * answers what to show, or throws to show the API's refusal in place. */
function form(
  legend: string,
  fields: [name: string, label: string][],
  button: string,
  submit: (values: Record<string, string>) => Promise<Node>,
): HTMLElement {
  const out = el('div', { class: 'outcome', 'aria-live': 'polite' })
  const f = el(
    'form',
    { class: 'inline' },
    el(
      'fieldset',
      {},
      el('legend', {}, legend),
      ...fields.map(([name, label]) =>
        el('p', {}, el('label', { for: `f-${name}` }, label), el('input', { id: `f-${name}`, name, type: 'text', autocomplete: 'off' })),
      ),
      el('p', {}, el('button', { type: 'submit' }, button)),
    ),
    out,
  )
  f.addEventListener('submit', (e) => {
    e.preventDefault()
    const values = Object.fromEntries(new FormData(f).entries()) as Record<string, string>
    void submit(values)
      .then((node) => out.replaceChildren(node))
      .catch((err) => out.replaceChildren(el('p', { class: 'error', role: 'alert' }, err instanceof Error ? err.message : String(err))))
  })
  return f
}

const TEMPLATE = `apiVersion: slaproof/v1
kind: SLA
metadata:
  name: my-sla
spec:
  service: chat
  customer: my-customer
  window: {calendar: month, timeZone: UTC}
  objectives:
  - name: availability
    target: 99.9%
    ratio: {good: status < 500}
`

/** The SLA document editor: applying shows each problem the API names, in
 * place under the document, and marks the document invalid. */
function editor(api: Api, name: string | null, document: string): HTMLElement {
  const area = el('textarea', { id: 'document', rows: '24', spellcheck: 'false', 'aria-describedby': 'document-problems' })
  area.value = document
  const problems = el('div', { id: 'document-problems', 'aria-live': 'polite' })
  const outcome = el('p', { class: 'outcome', role: 'status' })
  const apply = el('button', { type: 'submit', id: 'apply' }, name ? 'Apply as a new version' : 'Create the SLA')
  const f = el(
    'form',
    { class: 'editor' },
    el('label', { for: 'document' }, 'The SLA document (slaproof/v1 or OpenSLO YAML)'),
    area,
    problems,
    el('p', {}, apply),
    outcome,
  )
  f.addEventListener('submit', (e) => {
    e.preventDefault()
    apply.disabled = true
    problems.replaceChildren()
    outcome.textContent = ''
    area.removeAttribute('aria-invalid')
    api
      .send<{ name: string; version: number; outcome: string }>('POST', '/v1/slas', { document: area.value })
      .then((applied) => {
        outcome.textContent = applied
          ? `${applied.name}: ${applied.outcome === 'unchanged' ? 'unchanged, no new version' : `version ${applied.version} ${applied.outcome}`}.`
          : 'Applied.'
      })
      .catch((err) => {
        // "document: spec.objectives[0].target: must be …" — one line per
        // problem, each with the path in the document it is about.
        const detail = err instanceof ApiError ? err.message : String(err)
        const lines = detail.replace(/^document: /, '').split('\n').filter(Boolean)
        area.setAttribute('aria-invalid', 'true')
        problems.replaceChildren(
          el('p', { class: 'error', role: 'alert' }, `The document was not applied: ${lines.length} problem${lines.length > 1 ? 's' : ''}.`),
          el(
            'ul',
            { class: 'problems' },
            ...lines.map((line) => {
              const at = line.indexOf(': ')
              return at > 0
                ? el('li', { 'data-path': line.slice(0, at) }, el('code', {}, line.slice(0, at)), ` ${line.slice(at + 2)}`)
                : el('li', {}, line)
            }),
          ),
        )
        area.focus()
      })
      .finally(() => {
        apply.disabled = false
      })
  })
  return f
}

const DIMENSIONS: [string, string][] = [
  ['model', 'model'],
  ['status', 'HTTP status'],
  ['error_class', 'error class'],
  ['customer', 'customer'],
  ['source', 'source (provider, probe, client)'],
  ['streaming', 'streaming or not'],
]

/** Where an objective's bad events came from over the last hours, by one
 * dimension or a numeric attribute, as the API breaks them down. */
function attribution(api: Api, sla: string, objectives: string[]): HTMLElement {
  const select = (id: string, label: string, options: [string, string][]) =>
    el('p', {}, el('label', { for: id }, label), el('select', { id, name: id }, ...options.map(([v, t]) => el('option', { value: v }, t))))
  const out = el('div', { class: 'outcome', 'aria-live': 'polite' })
  const f = el(
    'form',
    { class: 'inline', id: 'attribution' },
    el(
      'fieldset',
      {},
      el('legend', {}, 'Where bad events came from'),
      select('a-objective', 'Objective', objectives.map((o) => [o, o])),
      select('a-by', 'By', DIMENSIONS),
      el('p', {}, el('label', { for: 'a-attr' }, 'or by an attribute (its name)'), el('input', { id: 'a-attr', name: 'a-attr', type: 'text', autocomplete: 'off' })),
      select('a-hours', 'Over the last', [
        ['1', 'hour'],
        ['6', '6 hours'],
        ['24', '24 hours'],
      ]),
      el('p', {}, el('button', { type: 'submit' }, 'Break down')),
    ),
    out,
  )
  f.addEventListener('submit', (e) => {
    e.preventDefault()
    const data = new FormData(f)
    const attr = String(data.get('a-attr') ?? '').trim()
    const by = attr ? `attr.${attr}` : String(data.get('a-by'))
    // Both ends from this clock: the server's own now would make the
    // stretch a little longer than asked.
    const now = Date.now()
    const from = new Date(now - Number(data.get('a-hours')) * 3600_000).toISOString()
    const query = new URLSearchParams({ objective: String(data.get('a-objective')), by, from, to: new Date(now).toISOString() })
    api
      .get<Row>(`/v1/slas/${encodeURIComponent(sla)}/attribution?${query.toString()}`)
      .then((answer) => {
        const bad = Number(answer.bad)
        const rows = (answer.contributions as Row[] | undefined) ?? []
        out.replaceChildren(
          el('p', { 'data-testid': 'attribution-summary' }, `${count(bad)} bad of ${count(Number(answer.total))} counted events since ${when(String(answer.from))}, over ${count(Number(answer.values))} values of ${by}.`),
          table(`Bad events by ${by}`, rows, [
            ['Value', (r) => (r.value === null || r.value === undefined ? '(none)' : String(r.value))],
            ['Bad', (r) => count(Number(r.bad))],
            ['Counted', (r) => count(Number(r.total))],
            ['Share of the bad', (r) => (bad > 0 ? `${((100 * Number(r.bad)) / bad).toFixed(1)}%` : '—')],
          ]),
        )
      })
      .catch((err) => out.replaceChildren(el('p', { class: 'error', role: 'alert' }, err instanceof Error ? err.message : String(err))))
  })
  return f
}

const slas: View = {
  id: 'slas',
  title: 'SLAs',
  async render(api, args) {
    if (args[0] === 'new') {
      return el('section', {}, el('h2', {}, 'New SLA'), editor(api, null, TEMPLATE))
    }
    if (args[0]) {
      const name = args[0]
      const [doc, sla] = await Promise.all([api.text(`/v1/slas/${encodeURIComponent(name)}/export`), api.get<Row>(`/v1/slas/${encodeURIComponent(name)}`)])
      const objectives = ((sla.objectives as Row[] | undefined) ?? []).filter((o) => o.kind !== 'gauge').map((o) => String(o.name))
      return el(
        'section',
        {},
        el('h2', {}, name),
        el('p', {}, el('a', { href: '#slas' }, 'All SLAs')),
        editor(api, name, doc),
        objectives.length > 0 ? attribution(api, name, objectives) : el('p', { class: 'empty' }, 'No objective counts events to break down.'),
      )
    }
    const page = await api.get<Page<Row>>('/v1/slas?limit=200')
    return el(
      'section',
      {},
      el('h2', {}, 'SLAs'),
      el('p', {}, el('a', { href: '#slas/new', class: 'button' }, 'New SLA')),
      table('SLAs', page.data, [
        ['Name', (r) => el('a', { href: `#slas/${encodeURIComponent(String(r.name))}` }, String(r.name))],
        ['Version', (r) => text(r.current_version)],
        ['Customer', (r) => text(r.customer_ref)],
        ['Updated', (r) => time(r.updated_at)],
      ]),
    )
  },
}

/** The budget left, in millionths of the period's budget, as a percentage
 * (below zero: overspent). */
const budgetLeft = (ppm: number): string => `${(ppm / 10_000).toFixed(ppm % 10_000 === 0 ? 0 : 1)}%`

/** The provider's customers ranked by their SLAs' bad requests this period. */
function ranking(data: Row): HTMLElement {
  const rows = (data.ranking as Row[] | undefined) ?? []
  const shown = rows.length
  const all = Number(data.customers ?? 0)
  return el(
    'div',
    { 'data-testid': 'ranking' },
    table('Customers by bad requests this period', rows, [
      ['Customer', (r) => (r.name ? `${text(r.name)} (${text(r.customer)})` : text(r.customer))],
      ['SLAs', (r) => text(r.slas)],
      ['Bad requests', (r) => count(Number(r.bad_events))],
      ['Requests', (r) => count(Number(r.requests))],
      ['Objectives missing', (r) => text(r.objectives_missed)],
      [
        'Closest to missing',
        (r) => {
          const w = r.worst as Row | null | undefined
          if (!w) return '—'
          const compliance = typeof w.compliance_ppm === 'number' ? percent(w.compliance_ppm) : 'no requests yet'
          return el(
            'span',
            {},
            el('a', { href: `#slas/${encodeURIComponent(String(w.sla))}` }, `${text(w.sla)} / ${text(w.objective)}`),
            `: ${compliance}, target ${percent(Number(w.target_ppm))}, budget left ${budgetLeft(Number(w.budget_remaining_ppm))}`,
          )
        },
      ],
    ]),
    el(
      'p',
      { class: 'note' },
      `${shown < all ? `The ${shown} of ${all} customers` : `All ${all} customers`} with an SLA verdict this period. Bad requests: for each SLA, its event-counting objective with the most, summed over the customer's SLAs.`,
    ),
  )
}

const customers: View = {
  id: 'customers',
  title: 'Customers',
  async render(api) {
    const [standing, page] = await Promise.all([api.get<Row>('/v1/customers/ranking?limit=50'), api.get<Page<Row>>('/v1/customers?limit=200')])
    return el(
      'section',
      {},
      el('h2', {}, 'Customers'),
      ranking(standing),
      table('Customers', page.data, [
        ['Reference', (r) => text(r.external_ref)],
        ['Name', (r) => text(r.name)],
        ['Id', (r) => el('code', {}, text(r.id))],
        ['Since', (r) => time(r.created_at)],
      ]),
      form('Add a customer', [['external_ref', 'Your reference for it'], ['name', 'Name']], 'Add', async (v) => {
        const c = await api.send<Row>('POST', '/v1/customers', v)
        return el('p', {}, `Added ${text(c?.name)} (${text(c?.id)}).`)
      }),
    )
  },
}

const maintenance: View = {
  id: 'maintenance',
  title: 'Maintenance',
  async render(api) {
    const list = await api.get<Page<Row>>('/v1/slas?limit=50')
    const rows: Row[] = []
    for (const sla of list.data) {
      const windows = await api.get<{ data: Row[] }>(`/v1/slas/${encodeURIComponent(String(sla.name))}/maintenance-windows`)
      rows.push(...windows.data.map((w) => ({ ...w, sla: sla.name })))
    }
    return el(
      'section',
      {},
      el('h2', {}, 'Maintenance windows'),
      table('Maintenance windows', rows, [
        ['SLA', (r) => text(r.sla)],
        ['From', (r) => time(r.starts_at)],
        ['To', (r) => time(r.ends_at)],
        ['Status', (r) => text(r.status)],
        ['Why', (r) => text(r.description)],
      ]),
      form(
        'Announce a window',
        [
          ['sla', 'SLA (empty: every SLA)'],
          ['starts_at', 'From (RFC 3339, e.g. 2026-12-24T02:00:00Z)'],
          ['ends_at', 'To (RFC 3339)'],
          ['description', 'What is done'],
        ],
        'Announce',
        async (v) => {
          const w = await api.send<Row>('POST', '/v1/maintenance-windows', {
            ...(v.sla ? { sla: v.sla } : {}),
            starts_at: v.starts_at,
            ends_at: v.ends_at,
            description: v.description,
          })
          return el('p', { 'data-testid': 'announced' }, `Announced: ${time(w?.starts_at)} – ${time(w?.ends_at)} (${meaning(w?.status)}).`)
        },
      ),
    )
  },
}

const keys: View = {
  id: 'keys',
  title: 'Ingest keys',
  async render(api) {
    const page = await api.get<Page<Row>>('/v1/ingest-keys?limit=200')
    return el(
      'section',
      {},
      el('h2', {}, 'Ingest keys'),
      table('Ingest keys', page.data, [
        ['Name', (r) => text(r.name)],
        ['Prefix', (r) => el('code', {}, text(r.prefix))],
        ['Created', (r) => time(r.created_at)],
        [
          'Revoked',
          (r) => {
            if (r.revoked_at) return time(r.revoked_at)
            const button = el('button', { type: 'button', class: 'link', 'data-revoke': String(r.id) }, `Revoke ${text(r.name)}`)
            button.addEventListener('click', () => {
              if (!window.confirm(`Revoke the key ${text(r.name)}? Senders using it are refused at once.`)) return
              void api
                .send('DELETE', `/v1/ingest-keys/${encodeURIComponent(String(r.id))}`)
                .then(() => button.replaceWith(document.createTextNode('revoked now')))
                .catch((err) => button.replaceWith(el('span', { class: 'error', role: 'alert' }, err instanceof Error ? err.message : String(err))))
            })
            return button
          },
        ],
      ]),
      form('Create a key', [['name', 'What it is for']], 'Create', async (v) => {
        const k = await api.send<Row>('POST', '/v1/ingest-keys', v)
        return el('p', {}, 'The key, shown this once: ', el('code', { 'data-testid': 'new-key' }, text(k?.key)))
      }),
    )
  },
}

const probes: View = {
  id: 'probes',
  title: 'Probes',
  async render(api) {
    const page = await api.get<Page<Row>>('/v1/probes?limit=200')
    return el(
      'section',
      {},
      el('h2', {}, 'Synthetic probes'),
      table('Probes', page.data, [
        ['Name', (r) => text(r.name)],
        ['Kind', (r) => text(r.kind)],
        ['URL', (r) => text(r.url)],
        ['Every', (r) => `${text(r.interval_secs)} s`],
        ['Enabled', (r) => (r.enabled ? 'yes' : 'no')],
      ]),
      form(
        'Add an HTTP probe',
        [
          ['name', 'Name (a-z, 0-9, . and -)'],
          ['service', 'The service its results count for'],
          ['url', 'URL (https)'],
        ],
        'Add',
        async (v) => {
          const probe = await api.send<Row>('POST', '/v1/probes', { ...v, kind: 'http' })
          return el('p', {}, `Added ${text(probe?.name)}: every ${text(probe?.interval_secs)} s.`)
        },
      ),
    )
  },
}

const webhooks: View = {
  id: 'webhooks',
  title: 'Webhooks',
  async render(api, args) {
    if (args[0]) {
      const attempts = await api.get<Page<Row>>(`/v1/webhook-endpoints/${encodeURIComponent(args[0])}/attempts`)
      return el(
        'section',
        {},
        el('h2', {}, 'Deliveries'),
        el('p', {}, el('a', { href: '#webhooks' }, 'All endpoints')),
        table('Delivery attempts', attempts.data, [
          ['When', (r) => time(r.started_at)],
          ['Event', (r) => text(r.event_type)],
          ['Attempt', (r) => text(r.attempt)],
          ['Status', (r) => text(r.status)],
          ['Error', (r) => text(r.error)],
        ]),
      )
    }
    const page = await api.get<Page<Row>>('/v1/webhook-endpoints?limit=200')
    return el(
      'section',
      {},
      el('h2', {}, 'Webhook endpoints'),
      table('Webhook endpoints', page.data, [
        ['URL', (r) => el('a', { href: `#webhooks/${encodeURIComponent(String(r.id))}` }, text(r.url))],
        ['Events', (r) => (Array.isArray(r.event_types) ? r.event_types.join(', ') : '—')],
        ['Enabled', (r) => (r.enabled ? 'yes' : text(r.disabled_reason ?? 'no'))],
      ]),
      form(
        'Add an endpoint',
        [
          ['url', 'URL (https)'],
          ['event_types', 'Event types, comma-separated (empty: every type)'],
        ],
        'Add',
        async (v) => {
          const types = v.event_types
            .split(',')
            .map((t) => t.trim())
            .filter(Boolean)
          const made = await api.send<{ secret?: string }>('POST', '/v1/webhook-endpoints', {
            url: v.url,
            ...(types.length > 0 ? { event_types: types } : {}),
          })
          return el('p', {}, 'The signing secret, shown this once: ', el('code', {}, text(made?.secret)))
        },
      ),
    )
  },
}

const READ_SCOPES = [
  'sla:read',
  'sla:read:uptime',
  'sla:read:latency',
  'sla:read:history',
  'sla:read:credits',
  'maintenance:read',
  'attestation:read',
]

const embed: View = {
  id: 'embed',
  title: 'Embed',
  async render(api) {
    const [customers, slaList, origins] = await Promise.all([
      api.get<Page<Row>>('/v1/customers?limit=200'),
      api.get<Page<Row>>('/v1/slas?limit=200'),
      api.get<{ origins: string[] }>('/v1/embed-origins'),
    ])
    const select = (id: string, label: string, options: [string, string][]) =>
      el('p', {}, el('label', { for: id }, label), el('select', { id, name: id }, ...options.map(([v, t]) => el('option', { value: v }, t))))
    const out = el('div', { class: 'outcome', 'aria-live': 'polite' })
    const f = el(
      'form',
      { class: 'inline' },
      el(
        'fieldset',
        {},
        el('legend', {}, 'A dashboard for one customer'),
        select('customer', 'Customer', customers.data.map((c) => [String(c.id), `${text(c.name)} (${text(c.external_ref)})`])),
        select('dashboard', 'Shows', [['overview', 'every SLA of the customer'], ...slaList.data.map((s): [string, string] => [String(s.name), `the SLA ${text(s.name)}`])]),
        el(
          'fieldset',
          {},
          el('legend', {}, 'What it may show'),
          ...READ_SCOPES.map((scope) =>
            el('p', {}, el('input', { type: 'checkbox', id: `scope-${scope}`, name: 'scope', value: scope, checked: '' }), ' ', el('label', { for: `scope-${scope}`, class: 'inline' }, scope)),
          ),
        ),
        select('origin', 'Framed by', [['', 'any of the tenant’s embed origins'], ...origins.origins.map((o): [string, string] => [o, o])]),
        el('p', {}, el('button', { type: 'submit' }, 'Make the snippet')),
      ),
      out,
    )
    f.addEventListener('submit', (e) => {
      e.preventDefault()
      const data = new FormData(f)
      const origin = String(data.get('origin') ?? '')
      api
        .send<{ token?: string; expires_at: string }>('POST', '/v1/embed-tokens', {
          customer: data.get('customer'),
          dashboard: data.get('dashboard'),
          scopes: data.getAll('scope'),
          ...(origin ? { origin } : {}),
        })
        .then((minted) => {
          const base = window.location.origin
          const token = minted?.token ?? ''
          out.replaceChildren(
            el('p', {}, `A token valid until ${minted ? when(minted.expires_at) : '—'}. Your backend mints one per page view (POST /v1/embed-tokens); these snippets show one.`),
            el('h3', {}, 'As an iframe'),
            el('pre', { 'data-testid': 'iframe-snippet' }, `<iframe src="${base}/embed/?token=${token}" title="Service level" style="border:0;width:100%;height:900px"></iframe>`),
            el('h3', {}, 'As a web component'),
            el('pre', { 'data-testid': 'component-snippet' }, `<script src="${base}/embed/slaproof-embed.js" defer></script>\n<slaproof-dashboard token="${token}"></slaproof-dashboard>`),
            el('p', {}, el('a', { href: `${base}/embed/?token=${token}`, target: '_blank', rel: 'noopener noreferrer' }, 'Open the dashboard')),
          )
        })
        .catch((err) => out.replaceChildren(el('p', { class: 'error', role: 'alert' }, err instanceof Error ? err.message : String(err))))
    })
    return el(
      'section',
      {},
      el('h2', {}, 'Embed a customer’s dashboard'),
      origins.origins.length === 0
        ? el('p', { class: 'error' }, 'No embed origin is set: PUT /v1/embed-origins with the origin of your console, or the dashboard cannot be framed.')
        : el('p', {}, `May be framed by: ${origins.origins.join(', ')}.`),
      f,
    )
  },
}

export const VIEWS: View[] = [slas, customers, maintenance, keys, probes, webhooks, embed]
