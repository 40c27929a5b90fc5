//! `POST /v1/gauges`: values delivered later by callback, one per request
//! (a quality score for a request id), for gauge objectives.
//!
//! The body, the key, the limits, the 429 gate and the per-value errors are
//! those of `POST /v1/events`: a JSON array or NDJSON, gzip allowed, each
//! refused value named by index, field and reason; `?atomic=true` refuses
//! the whole batch for one bad value.
//!
//! Placing a value in time: an SLA about requests means the request's time,
//! so a value counts at its request's `occurred_at`, found by `(service,
//! request_id)` among the stored events. The value is stored at once even
//! when the event is not there yet (callbacks race batched telemetry); the
//! evaluator attributes it once the event is stored. The sender's `time`
//! (when it measured the value) is kept for the record only: a judge that
//! scores a November request on 1 December must not move it into December.
//!
//! Retries: one value per `(metric, service, request_id)`. The same value
//! again is a duplicate and answered as stored; a different value is
//! refused (`field: value`, 409 when nothing else in the batch is stored)
//! rather than replacing the first, because a value may already be counted
//! into a frozen period and a verdict must not move by a re-send.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SubsecRound, Utc};
use serde::{Deserialize, Serialize};
use slaproof_domain::objective::GaugeName;
use slaproof_store::gauges::{self, GaugeValue, GaugeWrite};

use crate::body::{self, BatchFormat};
use crate::budget::{self, Kept};
use crate::event::{EventError, TimeBounds, text};
use crate::metrics::{self, Refusal};
use crate::native::EventsQuery;
use crate::problem::{IngestProblem, RefusalCount};
use crate::writer::WriteError;
use crate::{Ingest, Memory};

/// A value as `POST /v1/gauges` receives it. Every field is optional here
/// so a missing one is reported by name; unknown fields are ignored.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct GaugeIn {
    /// The gauge, as objectives name it (`quality_score`).
    pub metric: Option<String>,
    /// A finite number.
    pub value: Option<f64>,
    /// The service and request id of the request the value is about.
    pub service: Option<String>,
    pub request_id: Option<String>,
    /// When the value was measured, RFC 3339; kept, not used for placing.
    pub time: Option<String>,
}

/// The answer to an accepted batch of values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GaugesOut {
    /// Values in the body.
    pub received: usize,
    /// Values now durably stored (new or already there with the same number).
    pub accepted: usize,
    /// Accepted values that were new.
    pub stored: u64,
    /// Accepted values stored before (a retry), left unchanged.
    pub duplicates: u64,
    /// Values refused, invalid or conflicting; the first 100 are listed in
    /// `errors`, and all of them counted by field and reason in `counts`.
    pub rejected: usize,
    pub errors: Vec<EventError>,
    #[serde(default)]
    pub counts: Vec<RefusalCount>,
}

/// The valid values of a batch with their batch positions, and the refusals.
#[derive(Debug, Default)]
pub(crate) struct CheckedGauges {
    pub received: usize,
    pub values: Vec<(usize, GaugeValue)>,
    pub errors: Vec<EventError>,
}

impl GaugeIn {
    /// The value as it will be stored, or the first rule it breaks.
    pub(crate) fn validate(
        self,
        index: usize,
        bounds: &TimeBounds,
    ) -> Result<GaugeValue, EventError> {
        self.validate_inner(bounds)
            .map_err(|(field, reason)| EventError::new(index, field, reason))
    }

    fn validate_inner(self, bounds: &TimeBounds) -> Result<GaugeValue, (String, String)> {
        let metric = self
            .metric
            .ok_or_else(|| ("metric".to_owned(), "is required".to_owned()))?;
        let metric = GaugeName::parse(&metric)
            .map_err(|e| ("metric".to_owned(), e.to_string()))?
            .to_string();
        let value = match self.value {
            None => return Err(("value".into(), "is required (a number)".into())),
            Some(v) if !v.is_finite() => {
                return Err(("value".into(), format!("must be a finite number, got {v}")));
            }
            Some(v) => v,
        };
        let service = text("service", self.service)?
            .ok_or_else(|| ("service".to_owned(), "is required".to_owned()))?;
        let request_id = text("request_id", self.request_id)?.ok_or_else(|| {
            (
                "request_id".to_owned(),
                "is required: the request the value is about".to_owned(),
            )
        })?;
        let measured_at = match self.time {
            None => None,
            Some(time) => {
                let at = DateTime::parse_from_rfc3339(&time)
                    .map_err(|e| {
                        (
                            "time".to_owned(),
                            format!(
                                "must be an RFC 3339 time such as 2026-11-30T12:00:00.250Z: {e}"
                            ),
                        )
                    })?
                    .with_timezone(&Utc)
                    .trunc_subsecs(6);
                bounds.check(at).map_err(|r| ("time".to_owned(), r))?;
                Some(at)
            }
        };
        Ok(GaugeValue {
            metric,
            service,
            request_id,
            value,
            measured_at,
        })
    }
}

/// Parses and validates a decoded body, one value after the other, the
/// kept ones charged to the request's memory (twice: they are copied for
/// the write). CPU-bound; runs off the I/O threads.
pub(crate) fn check(
    format: BatchFormat,
    body: &[u8],
    bounds: &TimeBounds,
    memory: &mut Memory,
) -> Result<CheckedGauges, IngestProblem> {
    let items = body::items(format, body)?;
    let mut checked = CheckedGauges {
        received: items.len(),
        values: Vec::with_capacity(items.len()),
        errors: Vec::new(),
    };
    let mut kept = Kept::new(memory);
    kept.charge(items.len() * size_of::<(usize, GaugeValue)>())?;
    for (index, text) in items.into_iter().enumerate() {
        match body::parse_one::<GaugeIn>(index, text).and_then(|v| v.validate(index, bounds)) {
            Ok(v) => {
                kept.charge(2 * budget::gauge_bytes(&v))?;
                checked.values.push((index, v));
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

#[tracing::instrument(skip_all, fields(tenant, values))]
pub(crate) async fn post_gauges(
    State(ingest): State<Arc<Ingest>>,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
    request: Request,
) -> Response {
    match handle(&ingest, query, request).await {
        Ok(response) => response,
        Err(problem) => problem.into_response(),
    }
}

fn invalid(detail: String, errors: Vec<EventError>) -> IngestProblem {
    IngestProblem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid-gauges",
        "Invalid gauge values",
    )
    .with_detail(detail)
    .with_errors(errors)
}

async fn handle(
    ingest: &Ingest,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
    request: Request,
) -> Result<Response, IngestProblem> {
    let format = body::batch_format(request.headers())?;
    let Query(query) = query.map_err(|e| IngestProblem::bad_request(e.body_text()))?;
    let (admission, who, _memory, body) = ingest.admit(request).await?.split();
    let checked = ingest
        .off_thread(body, format.syntax(), move |body, bounds, memory| {
            check(format, body, &bounds, memory)
        })
        .await?;
    tracing::Span::current().record("values", checked.received);

    metrics::gauges_refused(Refusal::Invalid, checked.errors.len());
    if !checked.errors.is_empty() && (query.atomic || checked.values.is_empty()) {
        metrics::gauges_refused(Refusal::Atomic, checked.values.len());
        let detail = if query.atomic {
            format!(
                "{} of {} values are invalid and the batch is atomic; nothing was stored",
                checked.errors.len(),
                checked.received
            )
        } else {
            format!(
                "none of the {} values is valid; nothing was stored",
                checked.received
            )
        };
        return Err(invalid(detail, checked.errors));
    }

    let values: Vec<GaugeValue> = checked.values.iter().map(|(_, v)| v.clone()).collect();
    let written = {
        let _writer = ingest.gate.writer(&admission).await?;
        write(ingest, who.tenant, &values, query.atomic).await
    }
    .map_err(|err| ingest.not_stored("gauge values", &err))?;

    let mut errors = checked.errors;
    for &(i, old) in &written.conflicts {
        let (index, new) = &checked.values[i];
        errors.push(EventError::new(
            *index,
            "value",
            format!(
                "{} for {} request {:?} is stored already as {old}; a stored value is never replaced, \
                 so {} was not stored",
                new.metric, new.service, new.request_id, new.value
            ),
        ));
    }
    errors.sort_by_key(|e| e.index);
    let accepted = checked.values.len() - written.conflicts.len();
    metrics::gauges_refused(Refusal::Conflict, written.conflicts.len());
    if !written.conflicts.is_empty() && (query.atomic || accepted == 0) {
        metrics::gauges_refused(Refusal::Atomic, accepted);
        let detail = format!(
            "{} of {} values conflict with values stored before; nothing was stored",
            written.conflicts.len(),
            checked.received
        );
        return Err(IngestProblem::new(
            StatusCode::CONFLICT,
            "gauge-conflict",
            "Gauge value conflict",
        )
        .with_detail(detail)
        .with_errors(errors));
    }
    metrics::gauges_accepted(written.stored, written.duplicates);
    let status = if errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::MULTI_STATUS
    };
    let out = GaugesOut {
        received: checked.received,
        accepted,
        stored: written.stored,
        duplicates: written.duplicates,
        rejected: errors.len(),
        counts: crate::problem::counts(&errors),
        errors: crate::problem::listed(errors),
    };
    Ok((status, Json(out)).into_response())
}

/// Stores the values in one transaction; an atomic batch with a conflict
/// is rolled back (and its conflicts returned to refuse it).
async fn write(
    ingest: &Ingest,
    tenant: slaproof_domain::ids::TenantId,
    values: &[GaugeValue],
    atomic: bool,
) -> Result<GaugeWrite, WriteError> {
    let mut tx = ingest.db.tenant_tx(tenant).await?;
    let written = gauges::insert(&mut tx, values).await?;
    if atomic && !written.conflicts.is_empty() {
        tx.rollback().await?;
        return Ok(GaugeWrite {
            stored: 0,
            duplicates: 0,
            ..written
        });
    }
    tx.commit().await?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds() -> TimeBounds {
        TimeBounds::at(
            "2026-11-30T12:00:00Z".parse().unwrap(),
            30,
            chrono::Duration::minutes(5),
        )
    }

    fn refusal(json: serde_json::Value) -> (String, String) {
        let err = serde_json::from_value::<GaugeIn>(json)
            .unwrap()
            .validate(2, &bounds())
            .unwrap_err();
        assert_eq!(err.index, 2);
        (err.field, err.reason)
    }

    #[test]
    fn a_value_keeps_its_request_and_measured_time() {
        let v = serde_json::from_value::<GaugeIn>(serde_json::json!({
            "metric": "quality_score", "value": 0.82, "service": "chat",
            "request_id": "r1", "time": "2026-11-30T11:00:00.1234567Z", "extra": 1
        }))
        .unwrap()
        .validate(0, &bounds())
        .unwrap();
        assert_eq!(v.metric, "quality_score");
        assert_eq!(v.value, 0.82);
        assert_eq!(v.request_id, "r1");
        assert_eq!(
            v.measured_at.unwrap().timestamp_subsec_micros(),
            123_456,
            "microseconds, as stored"
        );
    }

    #[test]
    fn refusals_name_the_field() {
        let base = serde_json::json!({"metric": "quality_score", "value": 1, "service": "chat", "request_id": "r"});
        let without = |k: &str| {
            let mut v = base.clone();
            v.as_object_mut().unwrap().remove(k);
            v
        };
        let with = |k: &str, x: serde_json::Value| {
            let mut v = base.clone();
            v[k] = x;
            v
        };
        for field in ["metric", "value", "service", "request_id"] {
            assert_eq!(refusal(without(field)).0, field);
        }
        assert_eq!(refusal(with("metric", "Quality".into())).0, "metric");
        assert_eq!(refusal(with("request_id", "".into())).0, "request_id");
        let (field, reason) = refusal(with("time", "2026-12-01T00:00:00Z".into()));
        assert_eq!(field, "time");
        assert!(reason.contains("future"), "{reason}");
    }
}
