//! Reading the evaluator's verdicts back: the latest evaluation of each objective, what a dashboard and a compliance read show.

use chrono::{DateTime, Utc};
use serde::Serialize;
use slaproof_domain::ids::SlaId;

use crate::{StoreError, TenantTx};

/// An evaluation as stored: the verdict and the numbers behind it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StoredEvaluation {
    pub id: uuid::Uuid,
    pub sla_id: uuid::Uuid,
    pub version: i32,
    pub objective: String,
    pub evaluated_at: DateTime<Utc>,
    pub as_of: DateTime<Utc>,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub target_ppm: i32,
    pub good: i64,
    pub total: i64,
    pub excluded: i64,
    pub late_folded: i64,
    pub late_total: i64,
    pub met: bool,
    pub compliance_ppm: Option<i32>,
    pub budget_allowed: i64,
    pub budget_consumed: i64,
    pub budget_remaining: i64,
    pub burn_rate_milli: i64,
    pub exhaustion_secs: Option<i64>,
    /// The events the whole period is expected to hold; `None` with none yet.
    pub expected_total: Option<i64>,
    pub projected_bad: Option<i64>,
    /// The period will be missed if the rest fails at the recent rate.
    pub at_risk: bool,
    /// The period can no longer be met at its expected volume.
    pub exhausted: bool,
    /// 0 none, 1 light, 2 full (the SLA's degrade policy).
    pub degrade_level: i16,
}

/// The latest evaluation of each objective of an SLA: what the verdict
/// is now, and why.
///
/// Only the evaluations of the period running as of each round count: an
/// evaluation a period close froze (named by a `period_results` row) is
/// that closed period's result, read through the period results, and is
/// left out here and in [`series`] — even though the round that closed the
/// period wrote it after evaluating the new period.
#[tracing::instrument(skip(tx))]
pub async fn latest(tx: &mut TenantTx, sla: SlaId) -> Result<Vec<StoredEvaluation>, StoreError> {
    // One index probe per objective the SLA has ever had (LATERAL …
    // LIMIT 1 on `evaluations_latest`), not a DISTINCT ON over every
    // evaluation kept: dashboards read this on each load, and an SLA keeps
    // a week of rounds (two a minute per objective) before thinning.
    sqlx::query_as(
        "SELECT e.id, e.sla_id, e.version, e.objective, e.evaluated_at, e.as_of, e.period_start, \
             e.period_end, e.target_ppm, e.good, e.total, e.excluded, e.late_folded, e.late_total, e.met, \
             e.compliance_ppm, e.budget_allowed, e.budget_consumed, e.budget_remaining, e.burn_rate_milli, \
             e.exhaustion_secs, e.expected_total, e.projected_bad, e.at_risk, e.exhausted, e.degrade_level \
         FROM (SELECT DISTINCT name FROM objectives WHERE tenant_id = $1 AND sla_id = $2) AS o \
         CROSS JOIN LATERAL ( \
             SELECT * FROM evaluations \
             WHERE tenant_id = $1 AND sla_id = $2 AND objective = o.name \
               AND NOT EXISTS (SELECT 1 FROM period_results p WHERE p.tenant_id = $1 \
                   AND p.sla_id = $2 AND p.objective = o.name AND p.evaluation_id = evaluations.id) \
             ORDER BY evaluated_at DESC, id DESC LIMIT 1) AS e \
         ORDER BY e.objective",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .fetch_all(&mut **tx)
    .await
    .map_err(StoreError::from)
}

/// Whether an SLA is missing data, as of its latest evaluation.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DataState {
    pub no_data: bool,
    /// The end of the last minute with an event the SLA counts.
    pub last_event_at: Option<DateTime<Utc>>,
    /// Since when data is missing, while it is.
    pub no_data_since: Option<DateTime<Utc>>,
    pub evaluated_at: DateTime<Utc>,
}

/// The SLA's data state; `None` before its first evaluation.
#[tracing::instrument(skip(tx))]
pub async fn data_state(tx: &mut TenantTx, sla: SlaId) -> Result<Option<DataState>, StoreError> {
    sqlx::query_as(
        "SELECT no_data, last_event_at, no_data_since, evaluated_at FROM sla_signals \
         WHERE tenant_id = $1 AND sla_id = $2",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .fetch_optional(&mut **tx)
    .await
    .map_err(StoreError::from)
}

/// Most points one series answers.
pub const MAX_SERIES_POINTS: i64 = 2000;

/// One evaluation of one objective.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct SeriesPoint {
    pub evaluated_at: DateTime<Utc>,
    pub as_of: DateTime<Utc>,
    pub met: bool,
    pub compliance_ppm: Option<i32>,
    pub budget_remaining: i64,
    pub burn_rate_milli: i64,
}

/// A multiwindow burn-rate alert's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct AlertView {
    pub objective: String,
    /// `page-1h`, `page-6h` or `ticket-3d`.
    pub rule: String,
    pub firing: bool,
    pub changed_at: DateTime<Utc>,
    pub evaluated_at: DateTime<Utc>,
    pub long_burn_milli: i64,
    pub short_burn_milli: i64,
}

/// A closed period whose objective was not met, in its revision in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct BreachView {
    pub objective: String,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub revision: i32,
    pub target_ppm: i32,
    pub compliance_ppm: Option<i32>,
    pub good: i64,
    pub total: i64,
    pub closed_at: DateTime<Utc>,
}

/// The evaluations of one objective over `[from, to)` (of `versions` of
/// the SLA only, when given), oldest first, leaving out those a period
/// close froze (see [`latest`]): at
/// most [`MAX_SERIES_POINTS`], the newest when the range holds more (then
/// `true` comes with them).
#[tracing::instrument(skip(tx))]
pub async fn series(
    tx: &mut TenantTx,
    sla: SlaId,
    versions: Option<&[i32]>,
    objective: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<(Vec<SeriesPoint>, bool), StoreError> {
    let mut points: Vec<SeriesPoint> = sqlx::query_as(
        "SELECT evaluated_at, as_of, met, compliance_ppm, budget_remaining, burn_rate_milli \
         FROM evaluations WHERE tenant_id = $1 AND sla_id = $2 AND objective = $3 \
           AND evaluated_at >= $4 AND evaluated_at < $5 \
           AND ($7::int4[] IS NULL OR version = ANY($7)) \
           AND NOT EXISTS (SELECT 1 FROM period_results p WHERE p.tenant_id = $1 \
               AND p.sla_id = $2 AND p.objective = $3 AND p.evaluation_id = evaluations.id) \
         ORDER BY evaluated_at DESC, id DESC LIMIT $6",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(objective)
    .bind(from)
    .bind(to)
    .bind(MAX_SERIES_POINTS + 1)
    .bind(versions)
    .fetch_all(&mut **tx)
    .await?;
    let truncated = points.len() as i64 > MAX_SERIES_POINTS;
    points.truncate(MAX_SERIES_POINTS as usize);
    points.reverse();
    Ok((points, truncated))
}

/// The burn-rate alert states of an SLA, by objective and rule; of those
/// last set under `versions` of the SLA only, when given.
#[tracing::instrument(skip(tx))]
pub async fn alert_states(
    tx: &mut TenantTx,
    sla: SlaId,
    versions: Option<&[i32]>,
) -> Result<Vec<AlertView>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT objective, rule, firing, changed_at, evaluated_at, long_burn_milli, short_burn_milli \
         FROM alert_states WHERE tenant_id = $1 AND sla_id = $2 \
           AND ($3::int4[] IS NULL OR version = ANY($3)) \
         ORDER BY objective, rule",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(versions)
    .fetch_all(&mut **tx)
    .await?)
}

/// The closed periods of an SLA not met, each in its revision in force,
/// newest first; of `versions` of the SLA only, when given.
#[tracing::instrument(skip(tx))]
pub async fn breaches(
    tx: &mut TenantTx,
    sla: SlaId,
    versions: Option<&[i32]>,
) -> Result<Vec<BreachView>, StoreError> {
    Ok(period_results(tx, sla, versions)
        .await?
        .into_iter()
        .filter(|p| !p.met)
        .map(|p| BreachView {
            objective: p.objective,
            period_start: p.period_start,
            period_end: p.period_end,
            revision: p.revision,
            target_ppm: p.target_ppm,
            compliance_ppm: p.compliance_ppm,
            good: p.good,
            total: p.total,
            closed_at: p.closed_at,
        })
        .collect())
}

/// A closed period's result, met or not, in its revision in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct PeriodResultView {
    pub objective: String,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    /// The SLA version whose terms judged the period.
    pub version: i32,
    /// 1 at the close; higher after a correction superseded it.
    pub revision: i32,
    pub target_ppm: i32,
    pub met: bool,
    pub compliance_ppm: Option<i32>,
    pub good: i64,
    pub total: i64,
    /// Events left out by maintenance.
    pub excluded: i64,
    /// Events that arrived after the period's late grace, as counted when
    /// this revision was frozen: counted apart, never in the verdict.
    pub late_total: i64,
    /// The same count now: `late_total_now - late_total` events arrived
    /// after the revision was frozen. Reported, not applied to the verdict.
    pub late_total_now: i64,
    /// Of `late_total_now`, the good ones (what the late events would have
    /// done to the verdict: `late_total_now - late_good_now` were bad).
    pub late_good_now: i64,
    pub closed_at: DateTime<Utc>,
}

/// The closed periods of an SLA, met or not, each in its revision in
/// force, newest first; of `versions` of the SLA only, when given. Each
/// with the late events counted for it up to now, summed from the rollups
/// as the evaluator sums a period: whole UTC hours from the hourly rows,
/// the partial hours at its edges from the minute rows.
#[tracing::instrument(skip(tx))]
pub async fn period_results(
    tx: &mut TenantTx,
    sla: SlaId,
    versions: Option<&[i32]>,
) -> Result<Vec<PeriodResultView>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT r.objective, r.period_start, r.period_end, r.version, r.revision, r.target_ppm, r.met, \
             r.compliance_ppm, r.good, r.total, r.excluded, r.late_total, \
             coalesce(l.total, 0)::int8 AS late_total_now, coalesce(l.good, 0)::int8 AS late_good_now, \
             r.closed_at \
         FROM (SELECT p.*, \
                  CASE WHEN h.h0 < h.h1 THEN h.h0 ELSE p.period_end END AS h0, \
                  CASE WHEN h.h0 < h.h1 THEN h.h1 ELSE p.period_end END AS h1 \
               FROM (SELECT DISTINCT ON (objective, period_start) * FROM period_results \
                     WHERE tenant_id = $1 AND sla_id = $2 \
                     ORDER BY objective, period_start, revision DESC) AS p \
               CROSS JOIN LATERAL (SELECT \
                   date_trunc('hour', p.period_start + interval '59 minutes 59.999999 seconds', 'UTC') AS h0, \
                   date_trunc('hour', p.period_end, 'UTC') AS h1) AS h \
               WHERE ($3::int4[] IS NULL OR p.version = ANY($3))) AS r \
         LEFT JOIN LATERAL (SELECT sum(late_total) AS total, sum(late_good) AS good FROM ( \
             SELECT late_total, late_good FROM evaluator_rollups_hourly \
             WHERE tenant_id = $1 AND sla_id = $2 AND version = r.version AND objective = r.objective \
               AND hour >= r.h0 AND hour < r.h1 \
             UNION ALL \
             SELECT late_total, late_good FROM evaluator_rollups \
             WHERE tenant_id = $1 AND sla_id = $2 AND version = r.version AND objective = r.objective \
               AND minute >= r.period_start AND minute < r.h0 \
             UNION ALL \
             SELECT late_total, late_good FROM evaluator_rollups \
             WHERE tenant_id = $1 AND sla_id = $2 AND version = r.version AND objective = r.objective \
               AND minute >= r.h1 AND minute < r.period_end) AS parts) AS l ON true \
         ORDER BY r.period_start DESC, r.objective",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(versions)
    .fetch_all(&mut **tx)
    .await?)
}

/// When a result of the SLA's period starting at `period_start` was last
/// frozen (any objective, any revision); `None` before its close.
#[tracing::instrument(skip(tx))]
pub async fn last_frozen_at(
    tx: &mut TenantTx,
    sla: SlaId,
    period_start: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT max(closed_at) FROM period_results \
         WHERE tenant_id = $1 AND sla_id = $2 AND period_start = $3",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(period_start)
    .fetch_one(&mut **tx)
    .await?)
}

/// One minute of one objective's rollup.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct MinuteRollup {
    pub objective: String,
    pub minute: DateTime<Utc>,
    pub good: i64,
    pub total: i64,
}

/// The rollups (good, total) of some objectives of one SLA version over
/// `[from, to)`, summed into points of `step` from `from`, by objective and
/// point.
#[tracing::instrument(skip(tx, objectives))]
pub async fn minutes(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    objectives: &[String],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    step: chrono::Duration,
) -> Result<Vec<MinuteRollup>, StoreError> {
    if objectives.is_empty() {
        return Ok(Vec::new());
    }
    // Points of `step` starting at `from` (date_bin), summed in SQL so that
    // a month of hours reads as 720 rows per objective, not 43,200.
    Ok(sqlx::query_as(
        "SELECT objective, date_bin(make_interval(secs => $7), minute, $5) AS minute, \
                sum(good)::bigint AS good, sum(total)::bigint AS total \
         FROM evaluator_rollups \
         WHERE tenant_id = $1 AND sla_id = $2 AND version = $3 AND objective = ANY($4) \
           AND minute >= $5 AND minute < $6 \
         GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .bind(objectives)
    .bind(from)
    .bind(to)
    .bind(step.num_seconds().max(60) as f64)
    .fetch_all(&mut **tx)
    .await?)
}

/// The state of one objective now, for the operators' SLO series: its
/// latest in-period evaluation, named by SLA and customer.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ObjectiveState {
    pub sla: String,
    /// The customer's external reference; `None` for an SLA with none.
    pub customer: Option<String>,
    /// The customer's name, beside its reference.
    pub customer_name: Option<String>,
    pub objective: String,
    /// `ratio`, `threshold`, `time_slices` or `gauge`: what `good` and
    /// `total` count (events, slices, values).
    pub kind: String,
    pub as_of: DateTime<Utc>,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub target_ppm: i32,
    pub good: i64,
    pub total: i64,
    pub met: bool,
    pub compliance_ppm: Option<i32>,
    pub budget_allowed: i64,
    pub budget_consumed: i64,
    pub budget_remaining: i64,
    pub burn_rate_milli: i64,
}

/// The latest in-period evaluation of every objective of every SLA of the
/// transaction's tenant, as [`latest`] reads one SLA's: the objectives of
/// each SLA's version in force, one index probe each; at most `limit`
/// (by SLA and objective name) when one is given.
#[tracing::instrument(skip(tx))]
pub async fn objective_states(
    tx: &mut TenantTx,
    limit: Option<i64>,
) -> Result<Vec<ObjectiveState>, StoreError> {
    sqlx::query_as(
        "SELECT s.name AS sla, c.external_ref AS customer, c.name AS customer_name, e.objective, o.kind, e.as_of, e.period_start, \
             e.period_end, e.target_ppm, e.good, e.total, e.met, e.compliance_ppm, e.budget_allowed, \
             e.budget_consumed, e.budget_remaining, e.burn_rate_milli \
         FROM slas s \
         JOIN objectives o ON o.tenant_id = s.tenant_id AND o.sla_id = s.id \
             AND o.version = s.current_version \
         LEFT JOIN customers c ON c.tenant_id = s.tenant_id AND c.id = s.customer_id \
         CROSS JOIN LATERAL ( \
             SELECT * FROM evaluations \
             WHERE tenant_id = $1 AND sla_id = s.id AND objective = o.name \
               AND NOT EXISTS (SELECT 1 FROM period_results p WHERE p.tenant_id = $1 \
                   AND p.sla_id = s.id AND p.objective = o.name AND p.evaluation_id = evaluations.id) \
             ORDER BY evaluated_at DESC, id DESC LIMIT 1) AS e \
         WHERE s.tenant_id = $1 \
         ORDER BY s.name, e.objective \
         LIMIT $2",
    )
    .bind(tx.tenant().uuid())
    .bind(limit)
    .fetch_all(&mut **tx)
    .await
    .map_err(StoreError::from)
}
