//! RFC 9457 problem documents: every HTTP error slaproof answers.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A problem document (`application/problem+json`).
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// A URI naming the kind of problem; `about:blank` when the status says
    /// it all.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Extension members (RFC 9457 §3.2), e.g. the scope a 403 is missing.
    #[serde(flatten, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extensions: serde_json::Map<String, serde_json::Value>,
}

impl Problem {
    /// A problem of a kind documented under `/problems/<slug>`.
    pub fn new(status: StatusCode, slug: &str, title: impl Into<String>) -> Self {
        Self {
            kind: format!("https://slaproof.dev/problems/{slug}"),
            title: title.into(),
            status: status.as_u16(),
            detail: None,
            extensions: serde_json::Map::new(),
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Adds an extension member; `type`, `title`, `status` and `detail`
    /// are the standard members and cannot be replaced this way.
    pub fn with_extension(mut self, name: &str, value: impl Into<serde_json::Value>) -> Self {
        if !matches!(name, "type" | "title" | "status" | "detail") {
            self.extensions.insert(name.to_owned(), value.into());
        }
        self
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self).unwrap_or_default();
        let mut response = (status, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        response
    }
}
