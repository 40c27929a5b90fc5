//! Every request body of the API read whole, within a deadline and a size cap, before any handler runs: a client that sends its body slowly is answered 408 and its connection freed, instead of holding a connection and a task for as long as it likes.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use slaproof_http::Problem;

/// The largest body the API reads (axum's default, which the API's
/// extractors applied before): SLA documents are capped at 1 MiB within it.
pub(crate) const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Reads the body within `timeout`: 408 past it, 413 over
/// [`MAX_BODY_BYTES`], 400 when the connection fails mid-body; the handler
/// gets the body already read.
pub(crate) async fn read_within(
    State(timeout): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_BODY_BYTES)).await;
    let bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Err(_) => {
            return Problem::new(
                StatusCode::REQUEST_TIMEOUT,
                "body-timeout",
                "The request body took too long",
            )
            .with_detail(format!(
                "the body did not arrive whole within {} s of the headers (api.body_read_timeout_secs)",
                timeout.as_secs()
            ))
            .into_response();
        }
        Ok(Err(err)) if is_too_large(&err) => {
            return Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body-too-large",
                "The request body is too large",
            )
            .with_detail(format!(
                "the API reads bodies of at most {MAX_BODY_BYTES} bytes"
            ))
            .into_response();
        }
        Ok(Err(err)) => {
            return Problem::new(
                StatusCode::BAD_REQUEST,
                "body-unreadable",
                "The request body cannot be read",
            )
            .with_detail(format!("the body cannot be read: {err}"))
            .into_response();
        }
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Whether reading stopped at the size cap.
fn is_too_large(err: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}
