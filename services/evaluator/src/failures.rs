//! SLAs whose evaluation fails, kept apart from the others: each failure is recorded in `evaluation_failures` (read back by `slaproof_store::evaluation_failures::failing_slas`) and cleared when the SLA is evaluated again, and the counts behind the operators' gauges.

use std::collections::HashSet;

use slaproof_domain::ids::SlaId;
use slaproof_store::TenantTx;
use slaproof_store::evaluation_failures::SLA_STUCK_AFTER;
use slaproof_store::jobs;

use crate::error::{Doing, EvaluatorError};

/// One SLA left out of a tenant's evaluation round because evaluating it
/// failed (its work rolled back, the other SLAs' kept) or its stored
/// definition could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlaFailure {
    pub sla: SlaId,
    pub name: String,
    /// The version that failed; for an SLA that could not be read, the
    /// one in force.
    pub version: i32,
    /// The error as its display says it: what the provider is shown.
    pub error: String,
}

impl SlaFailure {
    pub(crate) fn new(sla: SlaId, name: &str, version: i32, error: &EvaluatorError) -> Self {
        Self {
            sla,
            name: name.to_owned(),
            version,
            error: error.to_string(),
        }
    }
}

/// The SLAs recorded as failing before this round.
pub(crate) async fn failing(tx: &mut TenantTx) -> Result<HashSet<SlaId>, EvaluatorError> {
    let ids: Vec<uuid::Uuid> =
        sqlx::query_scalar("SELECT sla_id FROM evaluation_failures WHERE tenant_id = $1")
            .bind(tx.tenant().uuid())
            .fetch_all(&mut **tx)
            .await
            .doing("reading failing SLAs")?;
    Ok(ids.into_iter().map(SlaId::from_uuid).collect())
}

/// Records a failed round of `failure`'s SLA: one more in a row.
pub(crate) async fn record(tx: &mut TenantTx, failure: &SlaFailure) -> Result<(), EvaluatorError> {
    sqlx::query(
        "INSERT INTO evaluation_failures (tenant_id, sla_id, version, last_error, last_failed_at) \
         VALUES ($1, $2, $3, $4, now()) \
         ON CONFLICT (tenant_id, sla_id) DO UPDATE SET version = EXCLUDED.version, \
             failures = evaluation_failures.failures + 1, last_error = EXCLUDED.last_error, \
             last_failed_at = EXCLUDED.last_failed_at",
    )
    .bind(tx.tenant().uuid())
    .bind(failure.sla.uuid())
    .bind(failure.version)
    .bind(jobs::error_text(&failure.error))
    .execute(&mut **tx)
    .await
    .doing("recording an SLA's failure")?;
    Ok(())
}

/// Forgets the failures of SLAs evaluated again.
pub(crate) async fn clear(tx: &mut TenantTx, recovered: &[SlaId]) -> Result<(), EvaluatorError> {
    if recovered.is_empty() {
        return Ok(());
    }
    let ids: Vec<uuid::Uuid> = recovered.iter().map(|s| s.uuid()).collect();
    sqlx::query("DELETE FROM evaluation_failures WHERE tenant_id = $1 AND sla_id = ANY($2)")
        .bind(tx.tenant().uuid())
        .bind(&ids)
        .execute(&mut **tx)
        .await
        .doing("clearing SLAs' failures")?;
    Ok(())
}

/// What is failing or stuck, summed over the tenants counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stuck {
    /// SLAs whose latest evaluation failed.
    pub failing_slas: u64,
    /// Of those, the ones that failed [`SLA_STUCK_AFTER`] rounds in a row
    /// or more.
    pub stuck_slas: u64,
    /// Tenants whose evaluate job is failing (waiting to be retried).
    pub failing_tenants: u64,
    /// Of those, the ones whose job is stuck: failed its `max_attempts` in
    /// a row or more, retried at the longest delay.
    pub stuck_tenants: u64,
}

impl Stuck {
    pub(crate) fn add(&mut self, other: Stuck) {
        self.failing_slas += other.failing_slas;
        self.stuck_slas += other.stuck_slas;
        self.failing_tenants += other.failing_tenants;
        self.stuck_tenants += other.stuck_tenants;
    }
}

/// The transaction's tenant's part of [`Stuck`].
pub(crate) async fn census(tx: &mut TenantTx) -> Result<Stuck, EvaluatorError> {
    let (failing_slas, stuck_slas, failing_job, stuck_job): (i64, i64, bool, bool) =
        sqlx::query_as(
            "SELECT (SELECT count(*) FROM evaluation_failures WHERE tenant_id = $1), \
                    (SELECT count(*) FROM evaluation_failures WHERE tenant_id = $1 AND failures >= $2), \
                    EXISTS (SELECT 1 FROM jobs WHERE tenant_id = $1 AND kind = $3 \
                            AND failing_since IS NOT NULL), \
                    EXISTS (SELECT 1 FROM jobs WHERE tenant_id = $1 AND kind = $3 \
                            AND stuck_since IS NOT NULL)",
        )
        .bind(tx.tenant().uuid())
        .bind(SLA_STUCK_AFTER)
        .bind(jobs::EVALUATE)
        .fetch_one(&mut **tx)
        .await
        .doing("counting what is stuck")?;
    Ok(Stuck {
        failing_slas: u64::try_from(failing_slas).unwrap_or(0),
        stuck_slas: u64::try_from(stuck_slas).unwrap_or(0),
        failing_tenants: u64::from(failing_job),
        stuck_tenants: u64::from(stuck_job),
    })
}
