//! `POST /v1/events`: the native batch API.
//!
//! Policy for a batch with invalid events: by default the valid events are
//! stored and the invalid ones reported (207 Multi-Status, each with index,
//! field and reason); with `?atomic=true` one invalid event refuses the
//! whole batch (422) and nothing is stored. A batch in which no event is
//! valid is refused with 422 either way. Every 2xx is sent after the commit.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use slaproof_store::events::StoredEvent;

use crate::body::{self, BatchFormat};
use crate::budget::{self, Kept};
use crate::event::{EventError, EventIn, IdSeed, TimeBounds};
use crate::metrics::{self, Refusal};
use crate::problem::{IngestProblem, RefusalCount};
use crate::{Ingest, Memory};

/// Longest `Idempotency-Key` accepted.
const MAX_IDEMPOTENCY_KEY: usize = 200;

/// Query parameters of `POST /v1/events`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct EventsQuery {
    /// Refuse the whole batch when any event is invalid.
    #[serde(default)]
    pub atomic: bool,
}

/// The answer to an accepted batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventsOut {
    /// Events in the body.
    pub received: usize,
    /// Valid events, now durably stored (new or already there).
    pub accepted: usize,
    /// Accepted events that were new.
    pub stored: u64,
    /// Accepted events stored before (a retry), left unchanged.
    pub duplicates: u64,
    /// Events refused; the first 100 are listed in `errors`, and all of
    /// them counted by field and reason in `counts`.
    pub rejected: usize,
    pub errors: Vec<EventError>,
    #[serde(default)]
    pub counts: Vec<RefusalCount>,
}

/// The valid events of a batch and the refusals, in batch order.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    pub received: usize,
    pub events: Vec<StoredEvent>,
    pub errors: Vec<EventError>,
}

/// Parses and validates a decoded body, one event after the other, so
/// that only one event is held parsed at a time; the valid events are
/// charged to the request's memory as they are kept. CPU-bound; runs off
/// the I/O threads.
pub(crate) fn check(
    format: BatchFormat,
    body: &[u8],
    bounds: &TimeBounds,
    idempotency_key: Option<&str>,
    memory: &mut Memory,
) -> Result<Checked, IngestProblem> {
    let items = body::items(format, body)?;
    let mut checked = Checked {
        received: items.len(),
        events: Vec::with_capacity(items.len()),
        errors: Vec::new(),
    };
    let mut kept = Kept::new(memory);
    kept.charge(items.len() * size_of::<StoredEvent>())?;
    for (index, text) in items.into_iter().enumerate() {
        let seed = match idempotency_key {
            Some(key) => IdSeed::Batch { key, index },
            None => IdSeed::Fresh,
        };
        match body::parse_one::<EventIn>(index, text).and_then(|e| e.validate(index, bounds, seed))
        {
            Ok(event) => {
                kept.charge(budget::event_bytes(&event))?;
                checked.events.push(event);
            }
            Err(err) => {
                kept.charge(budget::error_bytes(&err))?;
                checked.errors.push(err);
            }
        }
    }
    kept.flush()?;
    Ok(checked)
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, IngestProblem> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match value.to_str() {
        Ok(key) if !key.is_empty() && key.len() <= MAX_IDEMPOTENCY_KEY => Ok(Some(key.to_owned())),
        _ => Err(IngestProblem::bad_request(format!(
            "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} visible ASCII characters"
        ))),
    }
}

#[tracing::instrument(skip_all, fields(tenant, events))]
pub(crate) async fn post_events(
    State(ingest): State<Arc<Ingest>>,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
    request: Request,
) -> Response {
    match handle(&ingest, query, request).await {
        Ok(response) => response,
        Err(problem) => problem.into_response(),
    }
}

async fn handle(
    ingest: &Ingest,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
    request: Request,
) -> Result<Response, IngestProblem> {
    let format = body::batch_format(request.headers())?;
    let key = idempotency_key(request.headers())?;
    let Query(query) = query.map_err(|e| IngestProblem::bad_request(e.body_text()))?;
    let (admission, who, _memory, body) = ingest.admit(request).await?.split();

    let checked = ingest
        .off_thread(body, format.syntax(), move |body, bounds, memory| {
            check(format, body, &bounds, key.as_deref(), memory)
        })
        .await?;
    tracing::Span::current().record("events", checked.received);

    metrics::refused(Refusal::Invalid, checked.errors.len());
    if !checked.errors.is_empty() && (query.atomic || checked.events.is_empty()) {
        metrics::refused(Refusal::Atomic, checked.events.len());
        let detail = if query.atomic {
            format!(
                "{} of {} events are invalid and the batch is atomic; nothing was stored",
                checked.errors.len(),
                checked.received
            )
        } else {
            format!(
                "none of the {} events is valid; nothing was stored",
                checked.received
            )
        };
        return Err(IngestProblem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid-events",
            "Invalid events",
        )
        .with_detail(detail)
        .with_errors(checked.errors));
    }

    let written = ingest
        .store(&admission, who.tenant, &checked.events)
        .await?;
    let status = if checked.errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::MULTI_STATUS
    };
    let out = EventsOut {
        received: checked.received,
        accepted: checked.events.len(),
        stored: written.stored,
        duplicates: written.duplicates,
        rejected: checked.errors.len(),
        counts: crate::problem::counts(&checked.errors),
        errors: crate::problem::listed(checked.errors),
    };
    Ok((status, Json(out)).into_response())
}
