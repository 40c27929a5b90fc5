// The provider's console: a provider admin's token (from the provider's
// identity provider, or the one `slaproof up` prints), kept for this tab
// only, and one view per section, chosen by the address's fragment so that
// the browser's back button and links work.

import '../style.css'
import '../forms.css'
import './console.css'
import { Api, ApiError } from '../api'
import { el } from '../dom'
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
  // A token in the fragment (#token=…) signs in and leaves the address.
  const fragment = new URLSearchParams(window.location.hash.slice(1))
  const given = fragment.get('token')
  if (given) {
    sessionStorage.setItem(KEY, given)
    window.history.replaceState(null, '', `${window.location.pathname}#slas`)
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
