//! Reading raw events for the evaluator, as domain events the objectives classify.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use slaproof_domain::event::{EventSource, EventView};

/// An event as the evaluator reads it: the fields SLIs look at, plus when
/// it occurred and when it arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadEvent {
    pub occurred_at: DateTime<Utc>,
    pub received_at: DateTime<Utc>,
    /// The request the event is about, if the sender named one (gauge
    /// values are placed by it, see [`crate::gauge`]).
    pub request_id: Option<String>,
    /// The customer the request served, by the provider's reference: what
    /// decides which customer SLAs count it (`TrackedSla::scopes`).
    pub customer: Option<String>,
    pub fields: EventView,
}

/// The columns [`EventRow`] reads, in its order.
pub(crate) const EVENT_COLUMNS: &str = "occurred_at, received_at, request_id, customer, source, service, model, \
     status, error_class, latency_us, ttft_us, tpot_us, input_tokens, output_tokens, streaming, attributes";

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct EventRow {
    occurred_at: DateTime<Utc>,
    received_at: DateTime<Utc>,
    request_id: Option<String>,
    customer: Option<String>,
    source: String,
    service: String,
    model: Option<String>,
    status: Option<i32>,
    error_class: Option<String>,
    latency_us: Option<i64>,
    ttft_us: Option<i64>,
    tpot_us: Option<i64>,
    input_tokens: Option<i32>,
    output_tokens: Option<i32>,
    streaming: Option<bool>,
    attributes: serde_json::Value,
}

impl From<EventRow> for ReadEvent {
    fn from(r: EventRow) -> Self {
        // The schema's checks keep durations and tokens non-negative; a
        // value that still does not fit reads as absent rather than wrong.
        let unsigned = |v: Option<i64>| v.and_then(|v| u64::try_from(v).ok());
        let attrs: BTreeMap<String, f64> = match r.attributes {
            serde_json::Value::Object(map) => map
                .into_iter()
                .filter_map(|(k, v)| v.as_f64().map(|f| (k, f)))
                .collect(),
            _ => BTreeMap::new(),
        };
        ReadEvent {
            occurred_at: r.occurred_at,
            received_at: r.received_at,
            request_id: r.request_id,
            customer: r.customer,
            fields: EventView {
                service: Some(r.service),
                model: r.model,
                status: r.status.and_then(|s| u16::try_from(s).ok()),
                error_class: r.error_class,
                source: r.source.parse::<EventSource>().ok(),
                streaming: r.streaming,
                latency_us: unsigned(r.latency_us),
                ttft_us: unsigned(r.ttft_us),
                tpot_us: unsigned(r.tpot_us),
                input_tokens: unsigned(r.input_tokens.map(i64::from)),
                output_tokens: unsigned(r.output_tokens.map(i64::from)),
                attrs,
            },
        }
    }
}
