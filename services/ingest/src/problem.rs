//! Ingest refusals: slaproof's RFC 9457 problem documents (`slaproof-http`)
//! with the per-event `errors` a refused batch needs, plus `Retry-After` and
//! `WWW-Authenticate`.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::event::EventError;

/// Most refusals an answer lists one by one; the rest are counted in its
/// `rejected`.
pub(crate) const MAX_ERRORS_LISTED: usize = 100;

/// Keeps the first [`MAX_ERRORS_LISTED`] refusals for an answer.
pub(crate) fn listed(mut errors: Vec<EventError>) -> Vec<EventError> {
    errors.truncate(MAX_ERRORS_LISTED);
    errors
}

/// An ingest refusal: slaproof's problem document plus the headers that
/// tell a sender what to do next. OTLP answers carry the same status and
/// headers with another body (see `otlp::refusal`).
#[derive(Debug, Clone)]
pub(crate) struct IngestProblem {
    // Boxed: refusals travel in every `Result` of the request path, and a
    // small error keeps the happy path's values small.
    document: Box<slaproof_http::Problem>,
    /// Seconds after which a retry may succeed (sent as `Retry-After`).
    retry_after_secs: Option<u64>,
    /// Sent as `WWW-Authenticate` on 401.
    challenge: bool,
}

impl IngestProblem {
    /// A problem of a kind documented under `/problems/<slug>`.
    pub(crate) fn new(status: StatusCode, slug: &str, title: impl Into<String>) -> Self {
        Self {
            document: Box::new(slaproof_http::Problem::new(status, slug, title)),
            retry_after_secs: None,
            challenge: false,
        }
    }

    pub(crate) fn with_detail(mut self, detail: impl Into<String>) -> Self {
        *self.document = self.document.with_detail(detail);
        self
    }

    /// Every refused event, as the `errors` extension member.
    /// The refusals, the first [`MAX_ERRORS_LISTED`] of them:
    /// the detail counts them all.
    pub(crate) fn with_errors(mut self, errors: Vec<EventError>) -> Self {
        let errors = listed(errors);
        if !errors.is_empty() {
            let errors = serde_json::to_value(errors).unwrap_or_default();
            *self.document = self.document.with_extension("errors", errors);
        }
        self
    }

    pub(crate) fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }

    /// 401 for a missing, malformed, unknown or revoked key: one answer for
    /// all, so a caller learns nothing about which keys exist.
    pub(crate) fn unauthorized() -> Self {
        let mut problem = Self::new(StatusCode::UNAUTHORIZED, "unauthorized", "Unauthorized")
            .with_detail("send a valid, unrevoked ingest key as `Authorization: Bearer spk_…`");
        problem.challenge = true;
        problem
    }

    /// 429: the writers are behind; the client should slow down and retry.
    pub(crate) fn overloaded(retry_after_secs: u64) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "overloaded",
            "Ingest is at capacity",
        )
        .with_detail("the writers are behind; retry after the time in Retry-After")
        .retry_after(retry_after_secs)
    }

    /// 503: the database cannot take the batch right now; nothing was stored.
    pub(crate) fn unavailable(retry_after_secs: u64) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "Storage unavailable",
        )
        .with_detail("the batch was not stored; retry it unchanged after the time in Retry-After")
        .retry_after(retry_after_secs)
    }

    /// 413 for a body over the limit, before or after decompression.
    pub(crate) fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            "Request body too large",
        )
        .with_detail(format!(
            "the body is over {limit} bytes; send smaller batches"
        ))
    }

    /// 400 for a body that cannot be read as a batch at all.
    pub(crate) fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", "Bad request").with_detail(detail)
    }

    /// 500: logged once where it happened; the client sees nothing of it.
    pub(crate) fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
        )
        .with_detail("the batch was not stored")
    }

    pub(crate) fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.document.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// Seconds after which a retry may succeed, when one may.
    #[cfg(test)]
    pub(crate) fn retry_after_secs(&self) -> Option<u64> {
        self.retry_after_secs
    }

    /// `title: detail`, for answers that carry one message (OTLP).
    pub(crate) fn message(&self) -> String {
        match &self.document.detail {
            Some(detail) => format!("{}: {detail}", self.document.title),
            None => self.document.title.clone(),
        }
    }

    /// `Retry-After` and `WWW-Authenticate`, whatever the body's shape.
    pub(crate) fn add_headers(&self, headers: &mut HeaderMap) {
        if let Some(secs) = self.retry_after_secs {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.challenge {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"slaproof-ingest\""),
            );
        }
    }
}

impl IntoResponse for IngestProblem {
    fn into_response(self) -> Response {
        let mut headers = HeaderMap::new();
        self.add_headers(&mut headers);
        let mut response = self.document.into_response();
        response.headers_mut().extend(headers);
        response
    }
}
