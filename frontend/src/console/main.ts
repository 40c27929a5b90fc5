// The provider's console: a provider admin's token (from the provider's
// identity provider, or the one `slaproof up` prints), kept for this tab
// only, and one view per section, chosen by the address's fragment so that
// the browser's back button and links work.

import '../style.css'
import '../forms.css'
import './console.css'
import { Api, ApiError } from '../api'
import { el } from '../dom'
import { payloadOf } from '../token'
import { VIEWS, type View } from './views'

const view = document.getElementById('view') as HTMLElement
const nav = document.getElementById('nav') as HTMLElement
const KEY = 'slaproof.console.token'

function signIn(reason?: string): void {
  nav.hidden = true
  const input = el('textarea', { id: 'token', rows: '4', spellcheck: 'false', autocomplete: 'off' })
  const form = el(
    'form',
    { class: 'sign-in' },
    el('h2', {}, 'Sign in'),
    el('p', {}, 'Paste a provider admin’s API token (a JWT from your identity provider, or the one slaproof up prints). It is kept in this tab only.'),
    reason ? el('p', { class: 'error', role: 'alert' }, reason) : null,
    el('label', { for: 'token' }, 'API token'),
    input,
    el('p', {}, el('button', { type: 'submit' }, 'Sign in')),
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    sessionStorage.setItem(KEY, input.value.trim())
    void route()
  })
  view.replaceChildren(form)
  input.focus()
}

/** A token that came in a link (`#token=…`) signs in only once the person
 * at the screen says so: otherwise anyone could send a provider a link
 * that signs it into another tenant's console (login CSRF), where what it
 * then enters (customers, webhook URLs) would land. */
function confirmLink(token: string): void {
  nav.hidden = true
  const claims = payloadOf(token)
  const shown = (key: string): string => {
    const v = claims?.[key]
    if (Array.isArray(v)) return v.join(', ')
    return v === undefined || v === null ? '—' : String(v)
  }
  const expires = typeof claims?.exp === 'number' ? new Date(claims.exp * 1000).toLocaleString() : '—'
  const yes = el('button', { type: 'submit', id: 'link-sign-in' }, 'Sign in with it')
  const no = el('button', { type: 'button', id: 'link-refuse' }, 'Not mine: sign in otherwise')
  const form = el(
    'form',
    { class: 'sign-in', 'data-testid': 'confirm-link' },
    el('h2', {}, 'Sign in from a link?'),
    el('p', {}, 'The address you opened carries an API token. Use it only if you made the link yourself (slaproof up prints one): a link from someone else would sign you into their console, and what you enter would be theirs.'),
    el(
      'dl',
      {},
      el('dt', {}, 'Tenant'),
      el('dd', { 'data-testid': 'link-tenant' }, shown('tenant')),
      el('dt', {}, 'Signed in as'),
      el('dd', {}, shown('sub')),
      el('dt', {}, 'Roles'),
      el('dd', {}, shown('roles')),
      el('dt', {}, 'Valid until'),
      el('dd', {}, expires),
    ),
    el('p', {}, yes, ' ', no),
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    sessionStorage.setItem(KEY, token)
    void route()
  })
  no.addEventListener('click', () => {
    sessionStorage.removeItem(KEY)
    signIn()
  })
  view.replaceChildren(form)
  document.documentElement.dataset.ready = 'true'
  yes.focus()
}

function renderNav(current: string): void {
  nav.hidden = false
  nav.replaceChildren(
    el(
      'ul',
      {},
      ...VIEWS.map((v: View) =>
        el('li', {}, el('a', { href: `#${v.id}`, ...(v.id === current ? { 'aria-current': 'page' } : {}) }, v.title)),
      ),
      el('li', {}, el('button', { type: 'button', id: 'sign-out', class: 'link' }, 'Sign out')),
    ),
  )
  document.getElementById('sign-out')?.addEventListener('click', () => {
    sessionStorage.removeItem(KEY)
    signIn()
  })
}

async function route(): Promise<void> {
  // A token in the fragment (#token=…) leaves the address at once, and
  // signs in only once confirmed.
  const fragment = new URLSearchParams(window.location.hash.slice(1))
  const given = fragment.get('token')
  if (given) {
    window.history.replaceState(null, '', `${window.location.pathname}#slas`)
    confirmLink(given)
    return
  }
  const token = sessionStorage.getItem(KEY)
  if (!token) {
    signIn()
    return
  }
  const api = new Api(token)
  const [id, ...rest] = window.location.hash.slice(1).split('/')
  const current = VIEWS.find((v) => v.id === id) ?? VIEWS[0]
  renderNav(current.id)
  view.setAttribute('aria-busy', 'true')
  delete view.dataset.view
  try {
    const content = await current.render(api, rest.map(decodeURIComponent))
    view.replaceChildren(content)
    document.title = `${current.title} · slaproof console`
    view.dataset.view = [current.id, ...rest].join('/')
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      sessionStorage.removeItem(KEY)
      signIn(`The token was refused: ${e.message}`)
      return
    }
    view.replaceChildren(el('p', { class: 'error', role: 'alert' }, e instanceof Error ? e.message : String(e)))
  } finally {
    view.setAttribute('aria-busy', 'false')
    document.documentElement.dataset.ready = 'true'
  }
}

window.addEventListener('hashchange', () => void route())
void route()
