//! Stored telemetry events. The ingest service writes them in bulk; this
//! module has the row shape and a plain insert for tools and tests.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::EventId;

use crate::{StoreError, TenantTx};

pub use slaproof_domain::event::EventSource;

/// One request or probe, as stored.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StoredEvent {
    pub id: EventId,
    pub occurred_at: DateTime<Utc>,
    pub source: EventSource,
    pub service: String,
    /// The customer the request served, by the provider's reference.
    pub customer: Option<String>,
    pub model: Option<String>,
    pub request_id: Option<String>,
    pub status: Option<i32>,
    pub error_class: Option<String>,
    pub latency_us: Option<i64>,
    pub ttft_us: Option<i64>,
    pub tpot_us: Option<i64>,
    pub input_tokens: Option<i32>,
    pub output_tokens: Option<i32>,
    pub streaming: Option<bool>,
    pub attributes: serde_json::Value,
}

/// Inserts one event for the transaction's tenant. Its day's partition must
/// exist (see [`crate::partitions`]).
pub async fn insert(tx: &mut TenantTx, event: &StoredEvent) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO events (tenant_id, occurred_at, id, source, service, model, request_id, status, \
             error_class, latency_us, ttft_us, tpot_us, input_tokens, output_tokens, streaming, attributes, \
             customer) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
    )
    .bind(tx.tenant().uuid())
    .bind(event.occurred_at)
    .bind(event.id.uuid())
    .bind(event.source.as_str())
    .bind(&event.service)
    .bind(&event.model)
    .bind(&event.request_id)
    .bind(event.status)
    .bind(&event.error_class)
    .bind(event.latency_us)
    .bind(event.ttft_us)
    .bind(event.tpot_us)
    .bind(event.input_tokens)
    .bind(event.output_tokens)
    .bind(event.streaming)
    .bind(&event.attributes)
    .bind(&event.customer)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Inserts many events for the transaction's tenant, received at
/// `received_at` each (tools and benchmarks that replay traffic; ingest
/// writes through `COPY`). Their days' partitions must exist.
#[tracing::instrument(skip(tx, events), fields(count = events.len()))]
pub async fn insert_received(
    tx: &mut TenantTx,
    events: &[(StoredEvent, DateTime<Utc>)],
) -> Result<(), StoreError> {
    const CHUNK: usize = 10_000;
    for chunk in events.chunks(CHUNK) {
        let column = |f: &dyn Fn(&StoredEvent) -> Option<i64>| {
            chunk.iter().map(|(e, _)| f(e)).collect::<Vec<_>>()
        };
        let text = |f: &dyn Fn(&StoredEvent) -> Option<String>| {
            chunk.iter().map(|(e, _)| f(e)).collect::<Vec<_>>()
        };
        sqlx::query(
            "INSERT INTO events (tenant_id, occurred_at, id, received_at, source, service, model, \
                 request_id, status, error_class, latency_us, ttft_us, tpot_us, input_tokens, \
                 output_tokens, streaming, attributes, customer) \
             SELECT $1, o, i, r, src, svc, m, rid, s::int4, ec, l, tt, tp, it::int4, ot::int4, st, a, c \
             FROM UNNEST($2::timestamptz[], $3::uuid[], $4::timestamptz[], $5::text[], $6::text[], \
                 $7::text[], $8::text[], $9::int8[], $10::text[], $11::int8[], $12::int8[], \
                 $13::int8[], $14::int8[], $15::int8[], $16::bool[], $17::jsonb[], $18::text[]) \
                 AS t(o, i, r, src, svc, m, rid, s, ec, l, tt, tp, it, ot, st, a, c)",
        )
        .bind(tx.tenant().uuid())
        .bind(chunk.iter().map(|(e, _)| e.occurred_at).collect::<Vec<_>>())
        .bind(chunk.iter().map(|(e, _)| e.id.uuid()).collect::<Vec<_>>())
        .bind(chunk.iter().map(|(_, r)| *r).collect::<Vec<_>>())
        .bind(text(&|e| Some(e.source.as_str().to_owned())))
        .bind(text(&|e| Some(e.service.clone())))
        .bind(text(&|e| e.model.clone()))
        .bind(text(&|e| e.request_id.clone()))
        .bind(column(&|e| e.status.map(i64::from)))
        .bind(text(&|e| e.error_class.clone()))
        .bind(column(&|e| e.latency_us))
        .bind(column(&|e| e.ttft_us))
        .bind(column(&|e| e.tpot_us))
        .bind(column(&|e| e.input_tokens.map(i64::from)))
        .bind(column(&|e| e.output_tokens.map(i64::from)))
        .bind(chunk.iter().map(|(e, _)| e.streaming).collect::<Vec<_>>())
        .bind(
            chunk
                .iter()
                .map(|(e, _)| e.attributes.clone())
                .collect::<Vec<_>>(),
        )
        .bind(text(&|e| e.customer.clone()))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// How many events the tenant has in `[from, to)`.
pub async fn count(
    tx: &mut TenantTx,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<i64, StoreError> {
    let n: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE tenant_id = $1 AND occurred_at >= $2 AND occurred_at < $3",
    )
    .bind(tx.tenant().uuid())
    .bind(from)
    .bind(to)
    .fetch_one(&mut **tx)
    .await?;
    Ok(n)
}

/// Whether the tenant has stored any event, or has had its events read by
/// the evaluator (a watermark): a tool that writes a tenant's past (the
/// demo's history) must come before either, since the evaluator learns
/// events in the order they were received.
pub async fn any_or_evaluated(tx: &mut TenantTx) -> Result<bool, StoreError> {
    let found: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM events WHERE tenant_id = $1) \
             OR EXISTS (SELECT 1 FROM evaluator_watermarks WHERE tenant_id = $1)",
    )
    .bind(tx.tenant().uuid())
    .fetch_one(&mut **tx)
    .await?;
    Ok(found)
}
