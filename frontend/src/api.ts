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
    const res = await fetch(path, {
      headers: { authorization: `Bearer ${this.token}`, accept: 'application/json' },
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
    return (await res.json()) as T
  }
}
