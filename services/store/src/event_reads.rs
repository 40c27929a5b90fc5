//! Reading stored events back as domain events (the fields objectives classify, when each occurred and arrived): the row shape the evaluator's readers share, and the scan the API's attribution reads.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use slaproof_domain::attribution::Dimension;
use slaproof_domain::event::{EventSource, EventView};

use crate::{StoreError, TenantTx};

/// An event as its readers see it: the fields SLIs look at, plus when it
/// occurred and when it arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadEvent {
    pub occurred_at: DateTime<Utc>,
    pub received_at: DateTime<Utc>,
    /// The request the event is about, if the sender named one (gauge
    /// values are placed by it).
    pub request_id: Option<String>,
    /// The customer the request served, by the provider's reference: what
    /// decides which customer SLAs count it.
    pub customer: Option<String>,
    pub fields: EventView,
}

/// The columns [`EventRow`] reads, in its order.
pub const EVENT_COLUMNS: &str = "occurred_at, received_at, request_id, customer, source, service, model, \
     status, error_class, latency_us, ttft_us, tpot_us, input_tokens, output_tokens, streaming, attributes";

/// One row of [`EVENT_COLUMNS`]; read it as a [`ReadEvent`].
#[derive(Debug, sqlx::FromRow)]
pub struct EventRow {
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

/// The events an attribution reads: one service's (and one customer's,
/// for a customer's SLA) that occurred in `[from, to)` and were received
/// before `received_before`.
#[derive(Debug, Clone, Copy)]
pub struct AttributionScan<'a> {
    pub service: &'a str,
    /// `None`: every customer's requests (a service-wide SLA).
    pub customer: Option<&'a str>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub received_before: DateTime<Utc>,
    pub dimension: &'a Dimension,
}

/// The SQL expression giving a dimension's value as text; an attribute's
/// name is bound as `$7`, never spliced.
fn dimension_expression(dimension: &Dimension) -> &'static str {
    match dimension {
        Dimension::Model => "model",
        Dimension::Status => "status::text",
        Dimension::ErrorClass => "error_class",
        Dimension::Source => "source",
        Dimension::Streaming => "streaming::text",
        Dimension::Customer => "customer",
        Dimension::Attr(_) => "attributes ->> $7::text",
    }
}

#[derive(sqlx::FromRow)]
struct AttributedRow {
    #[sqlx(flatten)]
    event: EventRow,
    dimension: Option<String>,
}

/// Hands every event of `scan` to `each` with its value of the scan's
/// dimension, as the rows stream in (nothing is held but the row at hand).
#[tracing::instrument(skip(tx, each))]
pub async fn attribution_scan(
    tx: &mut TenantTx,
    scan: AttributionScan<'_>,
    mut each: impl FnMut(ReadEvent, Option<String>),
) -> Result<(), StoreError> {
    let attr = match scan.dimension {
        Dimension::Attr(name) => name.as_str(),
        _ => "",
    };
    // $6 and $7 appear in every query, so Postgres always knows their types.
    let sql = format!(
        "SELECT {EVENT_COLUMNS}, {} AS dimension FROM events WHERE tenant_id = $1 AND occurred_at >= $2 \
         AND occurred_at < $3 AND received_at < $4 AND service = $5 \
         AND ($6::text IS NULL OR customer = $6) AND ($7::text IS NOT NULL)",
        dimension_expression(scan.dimension)
    );
    let mut rows = sqlx::query_as::<_, AttributedRow>(&sql)
        .bind(tx.tenant().uuid())
        .bind(scan.from)
        .bind(scan.to)
        .bind(scan.received_before)
        .bind(scan.service)
        .bind(scan.customer)
        .bind(attr)
        .fetch(&mut **tx);
    while let Some(row) = rows.try_next().await? {
        each(ReadEvent::from(row.event), row.dimension);
    }
    Ok(())
}
