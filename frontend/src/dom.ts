// Building the page's elements from data: text is always set as text, so
// nothing an API answer holds can become markup.

type Child = Node | string | null | undefined | false

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'class') node.className = value
    else node.setAttribute(name, value)
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    node.append(typeof child === 'string' ? document.createTextNode(child) : child)
  }
  return node
}

/** A plain sentence saying what the token does not share, in place of the
 * part it would show. */
export function notShared(what: string, scope: string): HTMLElement {
  return el(
    'p',
    { class: 'not-shared', 'data-not-shared': scope },
    `${what} is not shared with you (it needs the ${scope} permission).`,
  )
}

/** A table with one heading per column and the given body rows. */
export function dataTable(headings: string[], rows: HTMLTableRowElement[]): HTMLTableElement {
  return el(
    'table',
    {},
    el('thead', {}, el('tr', {}, ...headings.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, ...rows),
  )
}
