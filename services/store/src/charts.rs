//! Charts read back from the evaluator's sketches: latency, TTFT and TPOT quantiles of an SLA's service per point of a range.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::ids::SlaId;
use slaproof_domain::minute::{ceil_minute, floor_hour, floor_minute};
use slaproof_domain::sketch::{SketchError, Sketches, Summary};

use crate::{StoreError, TenantTx};

/// A stored sketch column.
type Bytes = Option<Vec<u8>>;

/// The most points one chart read returns (a week of minutes).
pub const MAX_POINTS: i64 = 7 * 24 * 60;

fn corrupt(err: SketchError) -> StoreError {
    StoreError::Corrupt {
        what: "sketch",
        reason: err.0,
    }
}

/// One point of a chart: `[start, start + step)`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    pub start: DateTime<Utc>,
    pub latency: Summary,
    pub ttft: Summary,
    pub tpot: Summary,
}

/// Latency, TTFT and TPOT quantiles of an SLA's service over `[from, to)`
/// in points of `step` (whole minutes; hours read the hourly sketches when
/// `from` and `step` are whole hours), every point present, empty ones with
/// count 0. One query; the sketches are merged in Rust.
///
/// Each minute is read from the newest SLA version that has it (a version
/// is backfilled from its coverage start, so a minute is never counted
/// twice), among `versions` when given (a customer's own versions of an SLA
/// that moved between customers). `from` is rounded down and `to` up to
/// whole minutes.
#[tracing::instrument(skip(tx))]
pub async fn percentiles(
    tx: &mut TenantTx,
    sla: SlaId,
    versions: Option<&[i32]>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    step: Duration,
    quantiles: &[f64],
) -> Result<Vec<Point>, StoreError> {
    let invalid = |field, reason: String| StoreError::InvalidQuery { field, reason };
    if step < Duration::minutes(1) || step.num_seconds() % 60 != 0 || step.subsec_nanos() != 0 {
        return Err(invalid(
            "step",
            format!(
                "must be a whole number of minutes, got {}s",
                step.num_seconds()
            ),
        ));
    }
    if let Some(q) = quantiles.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        return Err(invalid(
            "quantiles",
            format!("must each lie in [0, 1], got {q}"),
        ));
    }
    let from = floor_minute(from);
    let to = ceil_minute(to);
    if to <= from {
        return Err(invalid(
            "to",
            format!("must be after from ({from}), got {to}"),
        ));
    }
    let (span, step_secs) = ((to - from).num_seconds(), step.num_seconds());
    let steps = (span + step_secs - 1) / step_secs;
    if steps > MAX_POINTS {
        return Err(invalid(
            "step",
            format!(
                "gives {steps} points from {from} to {to}; at most {MAX_POINTS} are read at once"
            ),
        ));
    }
    let hourly = step.num_seconds() % 3600 == 0 && floor_hour(from) == from;
    let (table, unit) = if hourly {
        ("evaluator_sketches_hourly", "hour")
    } else {
        ("evaluator_sketches", "minute")
    };
    let rows: Vec<(DateTime<Utc>, Bytes, Bytes, Bytes)> = sqlx::query_as(&format!(
        "SELECT DISTINCT ON ({unit}) {unit}, latency, ttft, tpot FROM {table} \
             WHERE tenant_id = $1 AND sla_id = $2 AND {unit} >= $3 AND {unit} < $4 \
               AND ($5::int4[] IS NULL OR version = ANY($5)) \
             ORDER BY {unit}, version DESC"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(from)
    .bind(to)
    .bind(versions)
    .fetch_all(&mut **tx)
    .await?;
    let mut points: Vec<Sketches> = vec![Sketches::default(); usize::try_from(steps).unwrap_or(0)];
    for (at, latency, ttft, tpot) in rows {
        let n = usize::try_from((at - from).num_seconds() / step.num_seconds()).unwrap_or(0);
        if let Some(point) = points.get_mut(n) {
            point
                .merge(&Sketches::decode(latency, ttft, tpot).map_err(corrupt)?)
                .map_err(corrupt)?;
        }
    }
    Ok(points
        .iter()
        .enumerate()
        .map(|(n, s)| Point {
            start: from + step * i32::try_from(n).unwrap_or(i32::MAX),
            latency: Summary::of(&s.latency, quantiles),
            ttft: Summary::of(&s.ttft, quantiles),
            tpot: Summary::of(&s.tpot, quantiles),
        })
        .collect())
}
