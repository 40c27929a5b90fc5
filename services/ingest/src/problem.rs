//! RFC 9457 problem documents for ingest refusals, shaped like the rest of
//! slaproof's (`type`, `title`, `status`, `detail`) plus the per-event
//! `errors` a refused batch needs.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::event::EventError;

/// A problem document (`application/problem+json`).
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Every refused event, when the problem is about events.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<EventError>,
    /// Seconds after which a retry may succeed (also sent as `Retry-After`).
    #[serde(skip)]
    pub retry_after_secs: Option<u64>,
    /// Sent as `WWW-Authenticate` on 401.
    #[serde(skip)]
    pub challenge: bool,
}

impl Problem {
    /// A problem of a kind documented under `/problems/<slug>`.
    pub fn new(status: StatusCode, slug: &str, title: impl Into<String>) -> Self {
        Self {
            kind: format!("https://slaproof.dev/problems/{slug}"),
            title: title.into(),
            status: status.as_u16(),
            detail: None,
            errors: Vec::new(),
            retry_after_secs: None,
            challenge: false,
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_errors(mut self, errors: Vec<EventError>) -> Self {
        self.errors = errors;
        self
    }

    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }

    /// 401 for a missing, malformed, unknown or revoked key: one answer for
    /// all, so a caller learns nothing about which keys exist.
    pub fn unauthorized() -> Self {
        let mut problem = Self::new(StatusCode::UNAUTHORIZED, "unauthorized", "Unauthorized")
            .with_detail("send a valid, unrevoked ingest key as `Authorization: Bearer spk_…`");
        problem.challenge = true;
        problem
    }

    /// 429: the writers are behind; the client should slow down and retry.
    pub fn overloaded(retry_after_secs: u64) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "overloaded",
            "Ingest is at capacity",
        )
        .with_detail("the writers are behind; retry after the time in Retry-After")
        .retry_after(retry_after_secs)
    }

    /// 503: the database cannot take the batch right now; nothing was stored.
    pub fn unavailable(retry_after_secs: u64) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "Storage unavailable",
        )
        .with_detail("the batch was not stored; retry it unchanged after the time in Retry-After")
        .retry_after(retry_after_secs)
    }

    /// 413 for a body over the limit, before or after decompression.
    pub fn too_large(limit: usize) -> Self {
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
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", "Bad request").with_detail(detail)
    }

    /// 500: logged once where it happened; the client sees nothing of it.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
        )
        .with_detail("the batch was not stored")
    }

    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = serde_json::to_vec(&self).unwrap_or_default();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(secs) = self.retry_after_secs {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.challenge {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"slaproof-ingest\""),
            );
        }
        response
    }
}
