// Reads from the API with the embed token. Errors carry the problem
// document's words (RFC 9457) so the page can say what went wrong.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

export class Api {
  constructor(readonly token: string) {}

  async get<T>(path: string): Promise<T> {
    return (await this.request('GET', path)).json() as Promise<T>
  }

  /** A read answered as text (an exported document). */
  async text(path: string): Promise<string> {
    return (await this.request('GET', path)).text()
  }

  /** A write with a JSON body; answers the JSON answer (or null). */
  async send<T>(method: string, path: string, body?: unknown): Promise<T | null> {
    const res = await this.request(method, path, body)
    const text = await res.text()
    return text ? (JSON.parse(text) as T) : null
  }

  private async request(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.token}`,
      accept: 'application/json, application/yaml',
    }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    })
    if (!res.ok) {
      let detail = res.statusText
      try {
        const problem = (await res.json()) as { detail?: string; title?: string }
        detail = problem.detail ?? problem.title ?? detail
      } catch {
        // not a problem document
      }
      throw new ApiError(res.status, detail)
    }
    return res
  }
}
