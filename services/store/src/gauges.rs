//! Gauge values delivered by callback, one per (metric, service, request
//! id). Ingest stores them; the evaluator attributes each to its request's
//! event and counts it (`slaproof-evaluator`'s `gauge` module).
//!
//! A stored value is never replaced: the same value again is a duplicate (a
//! retry), a different one a conflict the sender is told about. Verdicts
//! customers are paid on must not move because a score was re-sent, and a
//! value already counted into a frozen period could not be taken back.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::{StoreError, TenantTx};

/// One value as ingest stores it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GaugeValue {
    pub metric: String,
    pub service: String,
    pub request_id: String,
    /// Finite (the schema refuses NaN and infinities).
    pub value: f64,
    /// When the sender measured it, if it said.
    pub measured_at: Option<DateTime<Utc>>,
}

/// What writing a batch of values did, in batch order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GaugeWrite {
    /// Values new to the store.
    pub stored: u64,
    /// Values stored before with the same number (a retry), left unchanged.
    pub duplicates: u64,
    /// Positions (in the slice written) of values whose key holds a
    /// different number; they were not stored. With the stored number.
    pub conflicts: Vec<(usize, f64)>,
}

/// A stored value and where the evaluator placed it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredGauge {
    pub metric: String,
    pub service: String,
    pub request_id: String,
    pub value: f64,
    pub measured_at: Option<DateTime<Utc>>,
    pub received_at: DateTime<Utc>,
    /// The request's time, once its event was found.
    pub occurred_at: Option<DateTime<Utc>>,
    pub arrived_at: Option<DateTime<Utc>>,
    pub attributed_at: Option<DateTime<Utc>>,
    /// When the evaluator gave up on it (pending too long); never counted.
    pub expired_at: Option<DateTime<Utc>>,
}

/// Stores `values` for the transaction's tenant (one statement), skipping
/// keys already stored and reporting those whose number differs. The caller
/// commits, or rolls back to refuse the batch.
pub async fn insert(tx: &mut TenantTx, values: &[GaugeValue]) -> Result<GaugeWrite, StoreError> {
    if values.is_empty() {
        return Ok(GaugeWrite::default());
    }
    let tenant = tx.tenant().uuid();
    let metric: Vec<&str> = values.iter().map(|v| v.metric.as_str()).collect();
    let service: Vec<&str> = values.iter().map(|v| v.service.as_str()).collect();
    let request: Vec<&str> = values.iter().map(|v| v.request_id.as_str()).collect();
    let value: Vec<f64> = values.iter().map(|v| v.value).collect();
    let measured: Vec<Option<DateTime<Utc>>> = values.iter().map(|v| v.measured_at).collect();
    // Within one statement a key given twice is inserted once (DO NOTHING
    // skips the second), and the second is then judged like a retry.
    let inserted: Vec<i64> = sqlx::query_scalar(
        "WITH batch AS ( \
             SELECT * FROM UNNEST($2::text[], $3::text[], $4::text[], $5::float8[], $6::timestamptz[]) \
                 WITH ORDINALITY AS b(metric, service, request_id, value, measured_at, ord)), \
         ins AS ( \
             INSERT INTO gauge_values (tenant_id, metric, service, request_id, value, measured_at) \
             SELECT DISTINCT ON (metric, service, request_id) $1, metric, service, request_id, value, measured_at \
             FROM batch ORDER BY metric, service, request_id, ord \
             ON CONFLICT DO NOTHING RETURNING metric, service, request_id) \
         SELECT min(b.ord) FROM batch b JOIN ins USING (metric, service, request_id) \
         GROUP BY b.metric, b.service, b.request_id",
    )
    .bind(tenant)
    .bind(&metric)
    .bind(&service)
    .bind(&request)
    .bind(&value)
    .bind(&measured)
    .fetch_all(&mut **tx)
    .await?;
    let mut write = GaugeWrite {
        stored: inserted.len() as u64,
        ..GaugeWrite::default()
    };
    if inserted.len() == values.len() {
        return Ok(write);
    }
    // Positions are 1-based in ORDINALITY.
    let new: std::collections::HashSet<usize> = inserted
        .iter()
        .filter_map(|&o| usize::try_from(o - 1).ok())
        .collect();
    let stored: HashMap<(String, String, String), f64> =
        sqlx::query_as::<_, (String, String, String, f64)>(
            "SELECT g.metric, g.service, g.request_id, g.value FROM gauge_values g \
             JOIN UNNEST($2::text[], $3::text[], $4::text[]) AS b(metric, service, request_id) \
                 USING (metric, service, request_id) \
             WHERE g.tenant_id = $1",
        )
        .bind(tenant)
        .bind(&metric)
        .bind(&service)
        .bind(&request)
        .fetch_all(&mut **tx)
        .await?
        .into_iter()
        .map(|(m, s, r, v)| ((m, s, r), v))
        .collect();
    for (i, v) in values.iter().enumerate() {
        if new.contains(&i) {
            continue;
        }
        let key = (v.metric.clone(), v.service.clone(), v.request_id.clone());
        match stored.get(&key) {
            // Equal as stored: float8 round-trips an f64 exactly.
            Some(&old) if old == v.value => write.duplicates += 1,
            Some(&old) => write.conflicts.push((i, old)),
            // Not new and not there cannot happen inside one transaction;
            // counted as a duplicate rather than invented as a conflict.
            None => write.duplicates += 1,
        }
    }
    Ok(write)
}

/// The tenant's value for one request, if stored.
pub async fn find(
    tx: &mut TenantTx,
    metric: &str,
    service: &str,
    request_id: &str,
) -> Result<Option<StoredGauge>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT metric, service, request_id, value, measured_at, received_at, occurred_at, arrived_at, \
             attributed_at, expired_at FROM gauge_values \
         WHERE tenant_id = $1 AND metric = $2 AND service = $3 AND request_id = $4",
    )
    .bind(tx.tenant().uuid())
    .bind(metric)
    .bind(service)
    .bind(request_id)
    .fetch_optional(&mut **tx)
    .await?)
}

/// How many of the tenant's values still wait for their request's event.
pub async fn pending(tx: &mut TenantTx) -> Result<i64, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM gauge_values \
         WHERE tenant_id = $1 AND attributed_at IS NULL AND expired_at IS NULL",
    )
    .bind(tx.tenant().uuid())
    .fetch_one(&mut **tx)
    .await?)
}

/// How many of the tenant's values the evaluator gave up on (pending past
/// the bound); they never count.
pub async fn expired(tx: &mut TenantTx) -> Result<i64, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM gauge_values WHERE tenant_id = $1 AND expired_at IS NOT NULL",
    )
    .bind(tx.tenant().uuid())
    .fetch_one(&mut **tx)
    .await?)
}
