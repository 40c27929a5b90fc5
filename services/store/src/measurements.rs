//! Daily measurements fixed as a period goes: each provable objective's
//! good and bad weights per local day (revised when they change), and the
//! anchored commitment of each (`docs/TRANSPARENCY.md`). The evaluator
//! measures; the attestation worker commits and anchors; a period's proof
//! opens them.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, Utc};
use slaproof_domain::ids::SlaId;

use crate::{StoreError, TenantTx};

/// One measurement of one objective's day, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Measurement {
    pub sla_id: uuid::Uuid,
    pub sla_version: i32,
    pub objective: String,
    pub day_start: DateTime<Utc>,
    pub revision: i32,
    pub day_end: DateTime<Utc>,
    pub field: String,
    pub unit: String,
    pub threshold: i64,
    pub good: i64,
    pub bad: i64,
    pub measured_at: DateTime<Utc>,
    /// The evaluator's watermark the day was counted at (none for days
    /// measured before it was kept).
    pub counted_to: Option<DateTime<Utc>>,
}

/// A day's measurement to record (of the SLA version [`record_all`] names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMeasurement<'a> {
    pub objective: &'a str,
    pub day_start: DateTime<Utc>,
    pub day_end: DateTime<Utc>,
    pub field: &'a str,
    pub unit: &'a str,
    pub threshold: u32,
    pub good: u64,
    pub bad: u64,
}

/// The days of `days` (start, end) that need measuring for `sla` at
/// `version`: never measured, or whose rollups or maintenance windows
/// changed after the day was last measured (a revision recorded, or the
/// same numbers found again: `measurement_checks`), as of the instant
/// [`record_all`] was told it was measured at.
#[tracing::instrument(skip(tx, days))]
pub async fn stale_days(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    days: &[(DateTime<Utc>, DateTime<Utc>)],
) -> Result<Vec<DateTime<Utc>>, StoreError> {
    if days.is_empty() {
        return Ok(Vec::new());
    }
    let starts: Vec<DateTime<Utc>> = days.iter().map(|d| d.0).collect();
    let ends: Vec<DateTime<Utc>> = days.iter().map(|d| d.1).collect();
    let first = starts.iter().min().copied();
    let last = starts.iter().max().copied();
    // The days' latest measurements in one range scan of
    // `transparency_measurements_days` (every round asks this of every SLA
    // for a month of days), then the rollups and windows per day.
    Ok(sqlx::query_scalar(
        "SELECT d.s FROM unnest($4::timestamptz[], $5::timestamptz[]) AS d(s, e) \
         LEFT JOIN (SELECT day_start, min(last) AS at FROM ( \
             SELECT m.day_start, max(m.measured_at) AS last FROM transparency_measurements m \
             WHERE m.tenant_id = $1 AND m.sla_id = $2 AND m.sla_version = $3 \
               AND m.day_start >= $6 AND m.day_start <= $7 \
             GROUP BY m.day_start, m.objective) o GROUP BY day_start) r ON r.day_start = d.s \
         LEFT JOIN measurement_checks c ON c.tenant_id = $1 AND c.sla_id = $2 \
             AND c.sla_version = $3 AND c.day_start = d.s \
         CROSS JOIN LATERAL (SELECT greatest(r.at, c.checked_at) AS at) k \
         WHERE r.at IS NULL \
            OR EXISTS (SELECT 1 FROM evaluator_rollups_hourly h \
                WHERE h.tenant_id = $1 AND h.sla_id = $2 AND h.version = $3 \
                  AND h.hour > d.s - interval '1 hour' AND h.hour < d.e AND h.updated_at > k.at) \
            OR EXISTS (SELECT 1 FROM maintenance_windows w \
                WHERE w.tenant_id = $1 AND (w.sla_id = $2 OR w.sla_id IS NULL) \
                  AND w.starts_at < d.e AND w.ends_at > d.s AND w.changed_at > k.at) \
         ORDER BY d.s",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .bind(&starts)
    .bind(&ends)
    .bind(first)
    .bind(last)
    .fetch_all(&mut **tx)
    .await?)
}

/// A day's latest revision: objective, day, revision, end, field, unit, T, good, bad.
type Latest = (
    String,
    DateTime<Utc>,
    i32,
    DateTime<Utc>,
    String,
    String,
    i64,
    i64,
    i64,
);

/// Records each of `ms` (days of `sla` at `version`, counted at the
/// evaluator's watermark `counted_to`; a day and objective at most once)
/// as its day's next revision unless the latest one holds the same
/// measurement; answers how many were recorded. Days found unchanged are
/// noted as checked. At most three statements whatever the number of
/// days: an evaluator catching up measures a month of days for each SLA
/// at once.
///
/// `seen` is when the measurement's reads began, stamped as `measured_at`:
/// an instant after the rollups it read were committed (a day stamped
/// earlier than its rollups' `updated_at` would look changed, and be
/// counted again, every round after) and at which every maintenance
/// change stamped before it was visible (`maintenance::settled`): what
/// [`stale_days`] compares changes with.
#[tracing::instrument(skip(tx, ms), fields(sla = %sla, days = ms.len()))]
pub async fn record_all(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    counted_to: DateTime<Utc>,
    seen: DateTime<Utc>,
    ms: &[NewMeasurement<'_>],
) -> Result<usize, StoreError> {
    if ms.is_empty() {
        return Ok(0);
    }
    let objectives: Vec<&str> = ms.iter().map(|m| m.objective).collect();
    let starts: Vec<DateTime<Utc>> = ms.iter().map(|m| m.day_start).collect();
    let latest: Vec<Latest> = sqlx::query_as(
        "SELECT DISTINCT ON (m.objective, m.day_start) m.objective, m.day_start, m.revision, \
             m.day_end, m.field, m.unit, m.threshold, m.good, m.bad \
         FROM transparency_measurements m \
         JOIN unnest($4::text[], $5::timestamptz[]) AS k(objective, day_start) \
           ON m.objective = k.objective AND m.day_start = k.day_start \
         WHERE m.tenant_id = $1 AND m.sla_id = $2 AND m.sla_version = $3 \
         ORDER BY m.objective, m.day_start, m.revision DESC",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .bind(&objectives)
    .bind(&starts)
    .fetch_all(&mut **tx)
    .await?;
    let latest: HashMap<(String, DateTime<Utc>), Latest> = latest
        .into_iter()
        .map(|l| ((l.0.clone(), l.1), l))
        .collect();
    let same = |l: &Latest, m: &NewMeasurement<'_>| {
        l.3 == m.day_end
            && l.4 == m.field
            && l.5 == m.unit
            && l.6 == i64::from(m.threshold)
            && u64::try_from(l.7).ok() == Some(m.good)
            && u64::try_from(l.8).ok() == Some(m.bad)
    };
    let weight = |w: u64| i64::try_from(w).unwrap_or(i64::MAX);
    let mut rows = NewRows::default();
    let mut unchanged: Vec<DateTime<Utc>> = Vec::new();
    for m in ms {
        let before = latest.get(&(m.objective.to_owned(), m.day_start));
        if before.is_some_and(|l| same(l, m)) {
            unchanged.push(m.day_start);
            continue;
        }
        rows.objective.push(m.objective);
        rows.day_start.push(m.day_start);
        rows.revision.push(before.map_or(1, |l| l.2 + 1));
        rows.day_end.push(m.day_end);
        rows.field.push(m.field);
        rows.unit.push(m.unit);
        rows.threshold.push(i64::from(m.threshold));
        rows.good.push(weight(m.good));
        rows.bad.push(weight(m.bad));
    }
    if !unchanged.is_empty() {
        // A day with an objective unchanged keeps that objective's older
        // `measured_at`: noted, or the day would stay stale for good.
        unchanged.sort_unstable();
        unchanged.dedup();
        sqlx::query(
            "INSERT INTO measurement_checks (tenant_id, sla_id, sla_version, day_start, checked_at) \
             SELECT $1, $2, $3, d, $4 FROM unnest($5::timestamptz[]) AS d \
             ON CONFLICT (tenant_id, sla_id, sla_version, day_start) \
             DO UPDATE SET checked_at = EXCLUDED.checked_at",
        )
        .bind(tx.tenant().uuid())
        .bind(sla.uuid())
        .bind(version)
        .bind(seen)
        .bind(&unchanged)
        .execute(&mut **tx)
        .await?;
    }
    if rows.objective.is_empty() {
        return Ok(0);
    }
    sqlx::query(
        "INSERT INTO transparency_measurements (tenant_id, sla_id, sla_version, objective, day_start, \
             revision, day_end, field, unit, threshold, good, bad, measured_at, counted_to) \
         SELECT $1, $2, $3, u.objective, u.day_start, u.revision, u.day_end, u.field, u.unit, \
             u.threshold, u.good, u.bad, $14, $4 \
         FROM unnest($5::text[], $6::timestamptz[], $7::int4[], $8::timestamptz[], $9::text[], \
             $10::text[], $11::int8[], $12::int8[], $13::int8[]) \
             AS u(objective, day_start, revision, day_end, field, unit, threshold, good, bad) \
         ON CONFLICT DO NOTHING",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .bind(counted_to)
    .bind(&rows.objective)
    .bind(&rows.day_start)
    .bind(&rows.revision)
    .bind(&rows.day_end)
    .bind(&rows.field)
    .bind(&rows.unit)
    .bind(&rows.threshold)
    .bind(&rows.good)
    .bind(&rows.bad)
    .bind(seen)
    .execute(&mut **tx)
    .await?;
    Ok(rows.objective.len())
}

/// The revisions [`record_all`] writes, as the arrays it binds.
#[derive(Default)]
struct NewRows<'a> {
    objective: Vec<&'a str>,
    day_start: Vec<DateTime<Utc>>,
    revision: Vec<i32>,
    day_end: Vec<DateTime<Utc>>,
    field: Vec<&'a str>,
    unit: Vec<&'a str>,
    threshold: Vec<i64>,
    good: Vec<i64>,
    bad: Vec<i64>,
}

/// A measurement waiting for its commitment, with the names its label
/// carries.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Unanchored {
    #[sqlx(flatten)]
    pub measurement: Measurement,
    pub tenant_name: String,
    pub sla_name: String,
}

/// Measurements not yet committed, oldest first, at most `limit`.
#[tracing::instrument(skip(tx))]
pub async fn unanchored(tx: &mut TenantTx, limit: i64) -> Result<Vec<Unanchored>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT m.sla_id, m.sla_version, m.objective, m.day_start, m.revision, m.day_end, m.field, \
                m.unit, m.threshold, m.good, m.bad, m.measured_at, m.counted_to, t.name AS tenant_name, \
                s.name AS sla_name \
         FROM transparency_measurements m \
         JOIN tenants t ON t.id = m.tenant_id \
         JOIN slas s ON s.tenant_id = m.tenant_id AND s.id = m.sla_id \
         WHERE m.tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM transparency_commitments c \
             WHERE c.tenant_id = m.tenant_id AND c.sla_id = m.sla_id AND c.sla_version = m.sla_version \
               AND c.objective = m.objective AND c.day_start = m.day_start AND c.revision = m.revision) \
         ORDER BY m.measured_at, m.day_start, m.objective, m.revision LIMIT $2",
    )
    .bind(tx.tenant().uuid())
    .bind(limit)
    .fetch_all(&mut **tx)
    .await?)
}

/// A measurement's anchored commitment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCommitment<'a> {
    pub measurement: &'a Measurement,
    /// Decimal field element.
    pub commitment: String,
    /// `0x` and 64 hex digits.
    pub member_id: String,
    pub proof: Vec<String>,
}

/// Records commitments anchored with `log_day`'s head (its anchor row
/// must be written first, in the same transaction). A measurement another
/// day's anchor recorded first keeps that one (both are on chain).
#[tracing::instrument(skip(tx, commitments), fields(count = commitments.len()))]
pub async fn record_commitments(
    tx: &mut TenantTx,
    log_day: NaiveDate,
    commitments: &[NewCommitment<'_>],
) -> Result<(), StoreError> {
    for c in commitments {
        let m = c.measurement;
        sqlx::query(
            "INSERT INTO transparency_commitments (tenant_id, sla_id, sla_version, objective, day_start, \
                 revision, commitment, member_id, log_day, proof) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
        )
        .bind(tx.tenant().uuid())
        .bind(m.sla_id)
        .bind(m.sla_version)
        .bind(&m.objective)
        .bind(m.day_start)
        .bind(m.revision)
        .bind(&c.commitment)
        .bind(&c.member_id)
        .bind(log_day)
        .bind(serde_json::json!(c.proof))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// The latest measurement of each day of `[from, to)` for one objective,
/// with its commitment when anchored: what a period's proof opens.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DayRecord {
    #[sqlx(flatten)]
    pub measurement: Measurement,
    pub commitment: Option<String>,
    pub member_id: Option<String>,
    pub log_day: Option<NaiveDate>,
    pub proof: Option<serde_json::Value>,
    /// The anchor of `log_day` (its attestation), when anchored.
    pub anchor: Option<serde_json::Value>,
}

/// Every revision of `objective`'s days between `from` and `to`, by day
/// and revision: what a dispute opens (a period's proof may open a day's
/// earlier revision when a later one came after it).
#[tracing::instrument(skip(tx))]
pub async fn revisions(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    objective: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<Measurement>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT sla_id, sla_version, objective, day_start, revision, day_end, field, unit, threshold, \
                good, bad, measured_at, counted_to \
         FROM transparency_measurements \
         WHERE tenant_id = $1 AND sla_id = $2 AND sla_version = $3 AND objective = $4 \
           AND day_start >= $5 AND day_start < $6 \
         ORDER BY day_start, revision",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .bind(objective)
    .bind(from)
    .bind(to)
    .fetch_all(&mut **tx)
    .await?)
}

/// Each day's latest measurement of `objective` between `from` and `to`.
#[tracing::instrument(skip(tx))]
pub async fn days_of(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    objective: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<DayRecord>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT DISTINCT ON (m.day_start) m.sla_id, m.sla_version, m.objective, m.day_start, \
                m.revision, m.day_end, m.field, m.unit, m.threshold, m.good, m.bad, m.measured_at, m.counted_to, \
                c.commitment, c.member_id, c.log_day, c.proof, a.anchor \
         FROM transparency_measurements m \
         LEFT JOIN transparency_commitments c ON c.tenant_id = m.tenant_id AND c.sla_id = m.sla_id \
             AND c.sla_version = m.sla_version AND c.objective = m.objective \
             AND c.day_start = m.day_start AND c.revision = m.revision \
         LEFT JOIN transparency_anchors a ON a.tenant_id = c.tenant_id AND a.log_day = c.log_day \
         WHERE m.tenant_id = $1 AND m.sla_id = $2 AND m.sla_version = $3 AND m.objective = $4 \
           AND m.day_start >= $5 AND m.day_start < $6 \
         ORDER BY m.day_start, m.revision DESC",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .bind(objective)
    .bind(from)
    .bind(to)
    .fetch_all(&mut **tx)
    .await?)
}
