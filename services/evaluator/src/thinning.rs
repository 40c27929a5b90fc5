//! Thinning of old evaluations: every evaluation is kept for `evaluator.evaluations_full_days`, older ones down to the last of each hour per objective (per SLA for composites), never one a frozen period result or a kept composite names.
//!
//! Evaluations are facts, but one per objective per round (2,880 a day at
//! the default 30 s) says no more about last month than one an hour does:
//! the compliance series reads the hourly survivors, and every verdict a
//! credit or a proof rests on is a frozen period result, whose evaluation
//! stays. The last row of an hour is kept (not the first) so that the
//! series ends each hour on what was known at its end.

use chrono::{DateTime, Duration, Utc};
use slaproof_store::{Database, TenantTx, tenants};

use crate::error::{Doing, EvaluatorError};
use slaproof_domain::minute::floor_hour;

/// What one thinning deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Thinned {
    pub evaluations: u64,
    pub composites: u64,
}

/// Where thinning stops for `full_days` at `now`: rows evaluated before
/// it are thinned. On an hour boundary, so no hour is thinned in part.
pub fn thinning_cutoff(now: DateTime<Utc>, full_days: u32) -> DateTime<Utc> {
    floor_hour(now - Duration::days(i64::from(full_days)))
}

/// Thins every tenant's evaluations older than `full_days` (run by
/// housekeeping). Each tenant in its own transaction, under row-level
/// security like everything else.
#[tracing::instrument(skip(db))]
pub async fn thin_all(
    db: &Database,
    now: DateTime<Utc>,
    full_days: u32,
) -> Result<Thinned, EvaluatorError> {
    let before = thinning_cutoff(now, full_days);
    let mut total = Thinned::default();
    for tenant in tenants::list(db).await? {
        let mut tx = db.tenant_tx(tenant.id).await?;
        let done = thin_tenant(&mut tx, before).await?;
        tx.commit().await?;
        total.evaluations += done.evaluations;
        total.composites += done.composites;
    }
    Ok(total)
}

/// Thins one tenant's evaluations evaluated before `before`: of each
/// hour, per SLA and objective, the last (by `evaluated_at`, then id) is
/// kept, and so is any a frozen period result names (by foreign key, or
/// among a composite's parts) or a kept composite evaluation names among
/// its parts. Composites go first, so their parts are judged against the
/// composites that stay.
pub async fn thin_tenant(
    tx: &mut TenantTx,
    before: DateTime<Utc>,
) -> Result<Thinned, EvaluatorError> {
    let tenant = tx.tenant().uuid();
    let composites = sqlx::query(
        "DELETE FROM composite_evaluations c USING ( \
             SELECT id, row_number() OVER (PARTITION BY sla_id, date_trunc('hour', evaluated_at, 'UTC') \
                                           ORDER BY evaluated_at DESC, id DESC) AS n \
             FROM composite_evaluations WHERE tenant_id = $1 AND evaluated_at < $2) old \
         WHERE c.tenant_id = $1 AND c.id = old.id AND old.n > 1 \
           AND NOT EXISTS (SELECT 1 FROM composite_period_results r \
                           WHERE r.tenant_id = $1 AND r.composite_evaluation_id = c.id)",
    )
    .bind(tenant)
    .bind(before)
    .execute(&mut **tx)
    .await
    .doing("thinning composite evaluations")?
    .rows_affected();
    let evaluations = sqlx::query(
        "WITH named AS ( \
             SELECT evaluation_id AS id FROM period_results WHERE tenant_id = $1 \
             UNION SELECT (part ->> 'evaluation')::uuid FROM composite_period_results r, \
                 jsonb_array_elements(r.parts) AS part WHERE r.tenant_id = $1 \
             UNION SELECT (part ->> 'evaluation')::uuid FROM composite_evaluations c, \
                 jsonb_array_elements(c.parts) AS part WHERE c.tenant_id = $1 AND c.evaluated_at < $2) \
         DELETE FROM evaluations e USING ( \
             SELECT id, row_number() OVER (PARTITION BY sla_id, objective, date_trunc('hour', evaluated_at, 'UTC') \
                                           ORDER BY evaluated_at DESC, id DESC) AS n \
             FROM evaluations WHERE tenant_id = $1 AND evaluated_at < $2) old \
         WHERE e.tenant_id = $1 AND e.id = old.id AND old.n > 1 \
           AND e.id NOT IN (SELECT id FROM named WHERE id IS NOT NULL)",
    )
    .bind(tenant)
    .bind(before)
    .execute(&mut **tx)
    .await
    .doing("thinning evaluations")?
    .rows_affected();
    Ok(Thinned {
        evaluations,
        composites,
    })
}
