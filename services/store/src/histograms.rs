//! GenAI histogram data points from OTLP metrics, stored as sent: bounds,
//! bucket counts, sum and count of one time series over one interval.
//! Aggregates, so never turned into per-request events.

use chrono::{DateTime, Utc};

use crate::{StoreError, TenantTx};

/// Whether a point's counts are for its own interval or since its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Temporality {
    Delta,
    Cumulative,
}

impl Temporality {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delta => "delta",
            Self::Cumulative => "cumulative",
        }
    }
}

/// One explicit-bucket histogram data point.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HistogramPoint {
    /// Derived from the point's identity, so a re-sent export is stored once.
    pub id: uuid::Uuid,
    pub metric: String,
    pub unit: String,
    pub service: String,
    pub model: Option<String>,
    /// The point's other attributes.
    pub attributes: serde_json::Value,
    pub temporality: Temporality,
    pub start_time: Option<DateTime<Utc>>,
    pub time: DateTime<Utc>,
    /// Strictly increasing, finite.
    pub bounds: Vec<f64>,
    /// One more than `bounds`, or none (a point with only count and sum).
    pub bucket_counts: Vec<i64>,
    pub count: i64,
    pub sum: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// Stores points for the transaction's tenant; returns how many were new
/// (the others were stored before, by an earlier send of the same export).
/// One statement per point: exports carry tens to hundreds of points, not
/// the event volumes `COPY` is for.
pub async fn insert(tx: &mut TenantTx, points: &[HistogramPoint]) -> Result<u64, StoreError> {
    let tenant = tx.tenant().uuid();
    let mut stored = 0;
    for p in points {
        stored += sqlx::query(
            "INSERT INTO histogram_points (tenant_id, id, metric, unit, service, model, attributes, \
                 temporality, start_time, time, bounds, bucket_counts, count, sum, min, max) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
             ON CONFLICT DO NOTHING",
        )
        .bind(tenant)
        .bind(p.id)
        .bind(&p.metric)
        .bind(&p.unit)
        .bind(&p.service)
        .bind(&p.model)
        .bind(&p.attributes)
        .bind(p.temporality.as_str())
        .bind(p.start_time)
        .bind(p.time)
        .bind(&p.bounds)
        .bind(&p.bucket_counts)
        .bind(p.count)
        .bind(p.sum)
        .bind(p.min)
        .bind(p.max)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    }
    Ok(stored)
}

/// A stored point, as charts read it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredPoint {
    pub metric: String,
    pub unit: String,
    pub service: String,
    pub model: Option<String>,
    pub attributes: serde_json::Value,
    pub temporality: String,
    pub start_time: Option<DateTime<Utc>>,
    pub time: DateTime<Utc>,
    pub bounds: Vec<f64>,
    pub bucket_counts: Vec<i64>,
    pub count: i64,
    pub sum: Option<f64>,
}

/// The tenant's points of one metric in `[from, to)`, by time.
pub async fn list(
    tx: &mut TenantTx,
    metric: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<StoredPoint>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT metric, unit, service, model, attributes, temporality, start_time, time, bounds, \
             bucket_counts, count, sum FROM histogram_points \
         WHERE tenant_id = $1 AND metric = $2 AND time >= $3 AND time < $4 ORDER BY time, service, model",
    )
    .bind(tx.tenant().uuid())
    .bind(metric)
    .bind(from)
    .bind(to)
    .fetch_all(&mut **tx)
    .await?)
}
