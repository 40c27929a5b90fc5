//! `objective_signals`: each objective's in-period signals (at risk, budget exhausted, degrade level and its light streak) as last judged, with the period they belong to.

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
