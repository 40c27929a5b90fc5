//! `objective_signals` and `sla_signals`: each objective's in-period signals (at risk, budget exhausted, degrade level and its light streak) and each SLA's data state (no data since), as last judged.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::SlaId;

use crate::{StoreError, TenantTx};

/// An objective's signals as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signals {
    /// The period they belong to (the Unix epoch for a rolling window).
    pub period_start: DateTime<Utc>,
    pub at_risk: bool,
    pub exhausted: bool,
    pub degrade_level: i16,
    pub light_streak: i32,
    /// The evaluation (`as_of`) that judged them.
    pub evaluated_at: DateTime<Utc>,
}

/// The signals last stored for `objective` of `sla`.
pub async fn find(
    tx: &mut TenantTx,
    sla: SlaId,
    objective: &str,
) -> Result<Option<Signals>, StoreError> {
    type Row = (DateTime<Utc>, bool, bool, i16, i32, DateTime<Utc>);
    let row: Option<Row> = sqlx::query_as(
        "SELECT period_start, at_risk, exhausted, degrade_level, light_streak, evaluated_at \
         FROM objective_signals WHERE tenant_id = $1 AND sla_id = $2 AND objective = $3",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(objective)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(
        |(period_start, at_risk, exhausted, degrade_level, light_streak, evaluated_at)| Signals {
            period_start,
            at_risk,
            exhausted,
            degrade_level,
            light_streak,
            evaluated_at,
        },
    ))
}

/// Stores `now` as the signals of `objective` of `sla`; `changed_at` moves
/// to `now.evaluated_at` only when `changed`.
pub async fn record(
    tx: &mut TenantTx,
    sla: SlaId,
    objective: &str,
    now: &Signals,
    changed: bool,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO objective_signals (tenant_id, sla_id, objective, period_start, at_risk, exhausted, \
             degrade_level, light_streak, changed_at, evaluated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) \
         ON CONFLICT (tenant_id, sla_id, objective) DO UPDATE SET period_start = EXCLUDED.period_start, \
             at_risk = EXCLUDED.at_risk, exhausted = EXCLUDED.exhausted, \
             degrade_level = EXCLUDED.degrade_level, light_streak = EXCLUDED.light_streak, \
             changed_at = CASE WHEN $10 THEN EXCLUDED.changed_at ELSE objective_signals.changed_at END, \
             evaluated_at = EXCLUDED.evaluated_at",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(objective)
    .bind(now.period_start)
    .bind(now.at_risk)
    .bind(now.exhausted)
    .bind(now.degrade_level)
    .bind(now.light_streak)
    .bind(now.evaluated_at)
    .bind(changed)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A burn-rate alert resolved because its objective was removed, with
/// its burn rates as last evaluated.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RemovedAlert {
    pub objective: String,
    pub rule: String,
    pub long_burn_milli: i64,
    pub short_burn_milli: i64,
}

/// The in-period signals an objective had when it was removed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RemovedSignals {
    pub objective: String,
    pub at_risk: bool,
    pub exhausted: bool,
    pub degrade_level: i16,
}

/// Resolves, at `as_of`, the firing burn-rate alerts and the set in-period
/// signals of `sla`'s objectives not in `kept`, and returns what each was
/// before (sorted), in one statement: the round of an SLA whose objectives
/// all stay finds nothing, for one round trip.
#[tracing::instrument(skip(tx))]
pub async fn resolve_removed(
    tx: &mut TenantTx,
    sla: SlaId,
    kept: &[String],
    as_of: DateTime<Utc>,
) -> Result<(Vec<RemovedAlert>, Vec<RemovedSignals>), StoreError> {
    type Row = (bool, String, String, i64, i64, bool, bool, i16);
    let rows: Vec<Row> = sqlx::query_as(
        "WITH alerts AS ( \
           UPDATE alert_states SET firing = false, changed_at = $4, evaluated_at = $4 \
           WHERE tenant_id = $1 AND sla_id = $2 AND firing AND objective <> ALL($3) \
           RETURNING objective, rule, long_burn_milli, short_burn_milli \
         ), signals AS ( \
           UPDATE objective_signals s SET at_risk = false, exhausted = false, degrade_level = 0, \
               light_streak = 0, changed_at = $4, evaluated_at = $4 \
           FROM objective_signals o \
           WHERE s.tenant_id = $1 AND s.sla_id = $2 AND s.objective <> ALL($3) \
             AND o.tenant_id = s.tenant_id AND o.sla_id = s.sla_id AND o.objective = s.objective \
             AND (o.at_risk OR o.exhausted OR o.degrade_level > 0 OR o.light_streak > 0) \
           RETURNING s.objective, o.at_risk, o.exhausted, o.degrade_level \
         ) \
         SELECT true, objective, rule, long_burn_milli, short_burn_milli, false, false, 0::int2 FROM alerts \
         UNION ALL \
         SELECT false, objective, '', 0, 0, at_risk, exhausted, degrade_level FROM signals",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(kept)
    .bind(as_of)
    .fetch_all(&mut **tx)
    .await?;
    let (mut alerts, mut signals) = (Vec::new(), Vec::new());
    for (alert, objective, rule, long, short, at_risk, exhausted, degrade_level) in rows {
        if alert {
            alerts.push(RemovedAlert {
                objective,
                rule,
                long_burn_milli: long,
                short_burn_milli: short,
            });
        } else {
            signals.push(RemovedSignals {
                objective,
                at_risk,
                exhausted,
                degrade_level,
            });
        }
    }
    alerts.sort();
    signals.sort();
    Ok((alerts, signals))
}

/// What the data of an SLA version looked like when last judged, and the
/// minute of its last event before `before`, read together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSeen {
    /// The last minute before `before` whose rollup counts an event.
    pub last_minute: Option<DateTime<Utc>>,
    /// Whether the SLA was last judged without data (`None`: never judged).
    pub was_missing: Option<bool>,
}

/// [`DataSeen`] of `sla`'s `version` before `before`, in one statement.
/// The last minute is read as the first row of a backward scan of the
/// primary key (`… ORDER BY minute DESC LIMIT 1`), not as `max(minute)`,
/// which the planner answered by reading every minute row of the version
/// when its statistics were stale (5.7 ms against 0.3 ms for 200 rows,
/// `EXPLAIN ANALYZE` after credits-bench's close).
#[tracing::instrument(skip(tx))]
pub async fn data_seen(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    before: DateTime<Utc>,
) -> Result<DataSeen, StoreError> {
    let (last_minute, was_missing): (Option<DateTime<Utc>>, Option<bool>) = sqlx::query_as(
        "SELECT (SELECT minute FROM evaluator_rollups \
                 WHERE tenant_id = $1 AND sla_id = $2 AND version = $3 AND minute < $4 \
                   AND (total > 0 OR late_total > 0) ORDER BY minute DESC LIMIT 1), \
                (SELECT no_data FROM sla_signals WHERE tenant_id = $1 AND sla_id = $2)",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .bind(before)
    .fetch_one(&mut **tx)
    .await?;
    Ok(DataSeen {
        last_minute,
        was_missing,
    })
}

/// An SLA's data state as judged at `as_of`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataState {
    pub last_event_at: Option<DateTime<Utc>>,
    /// Since when data is missing, while it is: missing when set.
    pub no_data_since: Option<DateTime<Utc>>,
}

/// Stores `state` as `sla`'s data state judged at `as_of`; `changed_at`
/// moves only when `changed`.
#[tracing::instrument(skip(tx))]
pub async fn record_data_state(
    tx: &mut TenantTx,
    sla: SlaId,
    state: &DataState,
    as_of: DateTime<Utc>,
    changed: bool,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO sla_signals (tenant_id, sla_id, no_data, last_event_at, no_data_since, changed_at, evaluated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6) \
         ON CONFLICT (tenant_id, sla_id) DO UPDATE SET no_data = EXCLUDED.no_data, \
             last_event_at = EXCLUDED.last_event_at, no_data_since = EXCLUDED.no_data_since, \
             changed_at = CASE WHEN $7 THEN EXCLUDED.changed_at ELSE sla_signals.changed_at END, \
             evaluated_at = EXCLUDED.evaluated_at",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(state.no_data_since.is_some())
    .bind(state.last_event_at)
    .bind(state.no_data_since)
    .bind(as_of)
    .bind(changed)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
