// The embed token: taken from the page's address once, then kept in memory
// only (the address is rewritten without it), and read for what it allows.

export interface EmbedClaims {
  tenant: string
  customer: string
  /** `overview` (every SLA of the customer) or the one SLA it shows. */
  dashboard: string
  scopes: string[]
  exp: number
}

/** A JWT's payload, unverified (for showing whose token it is); `null`
 * when it is not a JWT. */
export function payloadOf(token: string): Record<string, unknown> | null {
  const part = token.split('.')[1]
  if (!part) return null
  try {
    const value: unknown = JSON.parse(atob(part.replace(/-/g, '+').replace(/_/g, '/')))
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

/** The claims of a JWT, unverified: the API verifies the token on every
 * read; the page only needs to know which reads it may make. */
export function claimsOf(token: string): EmbedClaims | null {
  const part = token.split('.')[1]
  if (!part) return null
  try {
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/'))
    const claims = JSON.parse(json) as Partial<EmbedClaims>
    if (typeof claims.dashboard !== 'string' || !Array.isArray(claims.scopes)) return null
    return claims as EmbedClaims
  } catch {
    return null
  }
}

/** The token from `?token=`, removed from the address bar and history so
 * that it is not copied along with the link or left in the history. */
export function takeToken(): string | null {
  const url = new URL(window.location.href)
  const token = url.searchParams.get('token')
  if (token) {
    url.searchParams.delete('token')
    window.history.replaceState(null, '', url.pathname + url.search + url.hash)
  }
  return token
}

/** Whether the token holds `scope`: scopes are exact names, as the API
 * checks them. */
export function holds(claims: EmbedClaims, scope: string): boolean {
  return claims.scopes.includes(scope)
}
