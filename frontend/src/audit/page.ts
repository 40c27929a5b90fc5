// The auditor's page: a bundle from files or from the API, the checks run
// in the browser, each shown with its result in words.

import '../style.css'
import '../forms.css'
import './audit.css'
import { el } from '../dom'
import { periodOf, viewerZone } from '../format'
import { FILES, parseBundle } from './bundle'
import { type Check, audit, sentence, verdictOf } from './checks'

const form = document.getElementById('audit') as HTMLFormElement
const result = document.getElementById('result') as HTMLElement
const input = (id: string) => document.getElementById(id) as HTMLInputElement

// Prefilled from the link: the attestation id (?attestation=…), and a
// token only in the fragment (#token=…), which browsers never send to a
// server. Never the chain or a pin: whoever sends the link would choose
// what the proof is checked against.
const params = new URLSearchParams(window.location.search)
const linked = params.get('attestation')
if (linked) input('attestation').value = linked
const fragment = new URLSearchParams(window.location.hash.slice(1))
if (fragment.get('token')) {
  input('token').value = fragment.get('token') ?? ''
  window.history.replaceState(null, '', window.location.pathname + window.location.search)
}

async function filesOf(list: FileList): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const file of Array.from(list)) {
    if ((FILES as readonly string[]).includes(file.name)) out[file.name] = await file.text()
  }
  return out
}

async function fromApi(id: string, token: string): Promise<Record<string, string>> {
  const res = await fetch(`/v1/attestations/${encodeURIComponent(id)}/bundle`, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
    credentials: 'omit',
  })
  const body = (await res.json()) as Record<string, unknown> & { detail?: string }
  if (!res.ok) throw new Error(body.detail ?? `the API answered ${res.status}`)
  const out: Record<string, string> = {}
  for (const [name, content] of Object.entries(body)) out[name] = JSON.stringify(content)
  return out
}

const LABEL: Record<Check['status'], string> = {
  passed: 'Passed',
  failed: 'Failed',
  'not-checked': 'Not checked',
}

function show(summary: string, period: string, checks: Check[]): void {
  // Fails closed, as `slaproof verify`: green only when every check passed.
  const v = verdictOf(checks)
  const verdict =
    v.kind === 'failed'
      ? `${v.failed.length} check${v.failed.length > 1 ? 's' : ''} failed: ${v.failed.join(', ')}. Do not rely on this claim.`
      : v.kind === 'unverified'
        ? `Not verified: nothing failed, but ${v.notChecked.length} check${v.notChecked.length > 1 ? 's were' : ' was'} not done: ${v.notChecked.join(', ')}. The claim is not established until they are (see below; slaproof verify runs them all).`
        : 'Verified: every check passed; the claim is proven and anchored as stated.'
  const list = el('ol', { class: 'checks' })
  for (const c of checks) {
    list.append(
      el(
        'li',
        { class: c.status, 'data-check': c.name, 'data-status': c.status },
        el('span', { class: 'status' }, LABEL[c.status]),
        el('strong', {}, c.name),
        el('p', { class: 'means' }, c.means),
        el('p', { class: 'detail' }, c.detail),
      ),
    )
  }
  result.replaceChildren(
    el('h2', {}, 'Result'),
    el('p', { class: 'claim' }, summary),
    el('p', { class: 'period' }, `The period: ${period}, in your time zone (${viewerZone}).`),
    el('p', { class: `verdict ${v.kind}`, role: 'status', 'data-testid': 'verdict' }, verdict),
    list,
  )
  document.documentElement.dataset.checked = v.kind
}

// Files dropped anywhere on the page go to the file input, as if chosen.
const drop = document.getElementById('drop') as HTMLElement
document.addEventListener('dragover', (event) => {
  event.preventDefault()
  drop.classList.add('over')
})
document.addEventListener('dragleave', () => drop.classList.remove('over'))
document.addEventListener('drop', (event) => {
  event.preventDefault()
  drop.classList.remove('over')
  const files = event.dataTransfer?.files
  if (files && files.length > 0) {
    input('files').files = files
    drop.textContent = `${files.length} file${files.length > 1 ? 's' : ''} dropped: ${Array.from(files, (f) => f.name).join(', ')}.`
  }
})

form.addEventListener('submit', (event) => {
  event.preventDefault()
  void (async () => {
    const button = input('verify') as unknown as HTMLButtonElement
    button.disabled = true
    result.replaceChildren(el('p', {}, 'Checking…'))
    try {
      const files = input('files').files
      const raw =
        files && files.length > 0
          ? await filesOf(files)
          : input('attestation').value.trim()
            ? await fromApi(input('attestation').value.trim(), input('token').value.trim())
            : null
      if (!raw) throw new Error('choose the four files, or give an attestation id and a token')
      const bundle = parseBundle(raw)
      const rpc = input('rpc').value.trim() || null
      const chain = input('chain').value.trim()
      if (chain && !/^[0-9]+$/.test(chain)) throw new Error(`the chain id ${chain} is not a number`)
      const checks = await audit(bundle, rpc, {
        vkSha256: input('vk').value.trim() || undefined,
        chainId: chain ? Number(chain) : undefined,
        eas: input('eas').value.trim() || undefined,
        attester: input('attester').value.trim() || undefined,
      })
      const c = bundle.statement.claim
      show(
        sentence(bundle.statement),
        periodOf(new Date(c.period_start * 1000).toISOString(), new Date(c.period_end * 1000).toISOString()),
        checks,
      )
    } catch (e) {
      result.replaceChildren(
        el('p', { class: 'error', role: 'alert' }, e instanceof Error ? e.message : String(e)),
      )
      document.documentElement.dataset.checked = 'error'
    } finally {
      button.disabled = false
    }
  })()
})
document.documentElement.dataset.ready = 'true'
