//! Ingest refusals: slaproof's RFC 9457 problem documents (`slaproof-http`)
//! with the per-event `errors` a refused batch needs, plus `Retry-After` and
//! `WWW-Authenticate`.

use std::collections::HashMap;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::event::EventError;

/// Most refusals an answer lists one by one; the rest are counted in its
/// `rejected` and `counts`.
pub(crate) const MAX_ERRORS_LISTED: usize = 100;

/// Most `(field, reason)` pairs an answer counts apart; refusals of any
/// further pair are counted together in a last entry (`field` `*`).
pub(crate) const MAX_COUNTS: usize = 100;

/// Keeps the first [`MAX_ERRORS_LISTED`] refusals for an answer.
pub(crate) fn listed(mut errors: Vec<EventError>) -> Vec<EventError> {
    errors.truncate(MAX_ERRORS_LISTED);
    errors
}

/// How many refusals of an answer share a field and a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusalCount {
    pub field: String,
    /// The reason up to the value it quotes (`invalid type`, `must be an
    /// HTTP status between 100 and 599`), so that refusals of one rule
    /// count together.
    pub reason: String,
    pub count: usize,
}

/// A reason without the value it quotes: cut before the first `: `,
/// `, got ` or `"`.
fn rule(reason: &str) -> &str {
    let end = [": ", ", got ", "\""]
        .iter()
        .filter_map(|marker| reason.find(marker))
        .min()
        .unwrap_or(reason.len());
    match reason[..end].trim_end() {
        "" => reason,
        rule => rule,
    }
}

/// Every refusal counted by field and rule, most frequent first (then by
/// field and reason): at most [`MAX_COUNTS`] pairs, then one entry with
/// field `*` and reason `other` for the rest, so the counts always add up
/// to the number of refusals.
pub(crate) fn counts(errors: &[EventError]) -> Vec<RefusalCount> {
    let mut by_pair: HashMap<(&str, &str), usize> = HashMap::new();
    let mut others = 0;
    for e in errors {
        let pair = (e.field.as_str(), rule(&e.reason));
        let room = by_pair.len() < MAX_COUNTS;
        match by_pair.get_mut(&pair) {
            Some(n) => *n += 1,
            None if room => {
                by_pair.insert(pair, 1);
            }
            None => others += 1,
        }
    }
    let mut out: Vec<RefusalCount> = by_pair
        .into_iter()
        .map(|((field, reason), count)| RefusalCount {
            field: field.to_owned(),
            reason: reason.to_owned(),
            count,
        })
        .collect();
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.field.cmp(&b.field))
            .then_with(|| a.reason.cmp(&b.reason))
    });
    if others > 0 {
        out.push(RefusalCount {
            field: "*".into(),
            reason: "other".into(),
            count: others,
        });
    }
    out
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
    /// Sent with `Connection: close`: the rest of the request is not read.
    close: bool,
}

impl IngestProblem {
    /// A problem of a kind documented under `/problems/<slug>`.
    pub(crate) fn new(status: StatusCode, slug: &str, title: impl Into<String>) -> Self {
        Self {
            document: Box::new(slaproof_http::Problem::new(status, slug, title)),
            retry_after_secs: None,
            challenge: false,
            close: false,
        }
    }

    pub(crate) fn with_detail(mut self, detail: impl Into<String>) -> Self {
        *self.document = self.document.with_detail(detail);
        self
    }

    /// The refusals: the first [`MAX_ERRORS_LISTED`] as the `errors`
    /// extension member, and all of them counted by field and reason as
    /// `counts` (see [`counts`]); the detail says how many there are.
    pub(crate) fn with_errors(mut self, errors: Vec<EventError>) -> Self {
        if !errors.is_empty() {
            let counted = serde_json::to_value(counts(&errors)).unwrap_or_default();
            let errors = serde_json::to_value(listed(errors)).unwrap_or_default();
            *self.document = self
                .document
                .with_extension("errors", errors)
                .with_extension("counts", counted);
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

    /// 429: this tenant already has its share of the gate in use.
    pub(crate) fn tenant_busy(share: usize, retry_after_secs: u64) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "tenant-at-capacity",
            "Too many requests in progress for this tenant",
        )
        .with_detail(format!(
            "this tenant already has {share} requests in progress, its share of ingest; \
             retry after the time in Retry-After"
        ))
        .retry_after(retry_after_secs)
    }

    /// 429: the key sends faster than its rate limit.
    pub(crate) fn rate_limited(per_sec: f64, burst: u32, retry_after_secs: u64) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate-limited",
            "Rate limit exceeded",
        )
        .with_detail(format!(
            "this ingest key may send {per_sec} requests per second (bursts of {burst}); \
             retry after the time in Retry-After"
        ))
        .retry_after(retry_after_secs)
    }

    /// 408: the body did not arrive in time; the connection is closed.
    pub(crate) fn body_timeout(secs: u64) -> Self {
        let mut problem = Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "request-timeout",
            "Request body too slow",
        )
        .with_detail(format!(
            "the whole body must arrive within {secs} s of the request's admission; \
             nothing was stored"
        ));
        problem.close = true;
        problem
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
        if self.close {
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_counted_by_field_and_rule_and_add_up() {
        let mut errors: Vec<EventError> = (0..50)
            .map(|i| {
                EventError::new(
                    i,
                    "status",
                    format!(
                        "must be an HTTP status between 100 and 599, got {}",
                        600 + i
                    ),
                )
            })
            .collect();
        errors.push(EventError::new(
            50,
            "status",
            "invalid type: string \"x\", expected u16",
        ));
        errors.push(EventError::new(
            51,
            "time",
            "is in the future: 2026-… is after …",
        ));
        let counted = counts(&errors);
        assert_eq!(
            counted,
            [
                RefusalCount {
                    field: "status".into(),
                    reason: "must be an HTTP status between 100 and 599".into(),
                    count: 50
                },
                RefusalCount {
                    field: "status".into(),
                    reason: "invalid type".into(),
                    count: 1
                },
                RefusalCount {
                    field: "time".into(),
                    reason: "is in the future".into(),
                    count: 1
                },
            ]
        );
    }

    #[test]
    fn past_the_pairs_counted_apart_the_rest_are_counted_together() {
        let errors: Vec<EventError> = (0..MAX_COUNTS + 50)
            .map(|i| EventError::new(i, format!("attributes.a{i}"), "must be a number"))
            .collect();
        let counted = counts(&errors);
        assert_eq!(counted.len(), MAX_COUNTS + 1);
        assert_eq!(
            counted.last().unwrap(),
            &RefusalCount {
                field: "*".into(),
                reason: "other".into(),
                count: 50
            }
        );
        let total: usize = counted.iter().map(|c| c.count).sum();
        assert_eq!(total, errors.len());
    }

    #[test]
    fn an_answer_lists_the_first_hundred_and_counts_them_all() {
        let errors: Vec<EventError> = (0..9_000)
            .map(|i| EventError::new(i, "time", "is required (RFC 3339)"))
            .collect();
        let problem =
            IngestProblem::new(StatusCode::UNPROCESSABLE_ENTITY, "x", "X").with_errors(errors);
        let body = serde_json::to_value(&*problem.document).unwrap();
        assert_eq!(body["errors"].as_array().unwrap().len(), MAX_ERRORS_LISTED);
        assert_eq!(
            body["counts"],
            serde_json::json!([{"field": "time", "reason": "is required (RFC 3339)", "count": 9000}])
        );
    }
}
