// <slaproof-dashboard>: the embedded customer dashboard in one tag.
//
//   <script src="https://slaproof.example/embed/slaproof-embed.js" defer></script>
//   <slaproof-dashboard token="…" theme="dark" brand="#0a7"></slaproof-dashboard>
//
// The token is an embed token the provider's backend minted for this
// customer (POST /v1/embed-tokens). The element wraps an iframe of
// /embed on the same origin as this script, so the dashboard runs isolated
// from the host page and under its own Content-Security-Policy.
class SlaproofDashboard extends HTMLElement {
  static get observedAttributes() {
    return ['token', 'theme', 'brand', 'height']
  }

  connectedCallback() {
    this.render()
  }

  attributeChangedCallback() {
    if (this.isConnected) this.render()
  }

  render() {
    const token = this.getAttribute('token')
    if (!token) return
    const base = new URL(SlaproofDashboard.scriptSrc, location.href)
    const src = new URL('/embed/', base)
    src.searchParams.set('token', token)
    for (const name of ['theme', 'brand']) {
      const value = this.getAttribute(name)
      if (value) src.searchParams.set(name, value)
    }
    const frame = document.createElement('iframe')
    frame.src = src.toString()
    frame.title = this.getAttribute('title') ?? 'Service level dashboard'
    frame.loading = 'lazy'
    frame.referrerPolicy = 'no-referrer'
    frame.style.border = '0'
    frame.style.width = '100%'
    frame.style.height = this.getAttribute('height') ?? '900px'
    this.replaceChildren(frame)
  }
}
SlaproofDashboard.scriptSrc = document.currentScript ? document.currentScript.src : location.href
customElements.define('slaproof-dashboard', SlaproofDashboard)
