//! Recording evaluator facts: evaluations (append-only) and frozen period results (revisions, never rewritten). Reading them back is `slaproof_store::evaluations`.

use slaproof_store::TenantTx;

use crate::error::{Doing, EvaluatorError};
use crate::evaluate::ObjectiveEvaluation;

fn count(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Appends an evaluation.
#[tracing::instrument(skip_all, fields(objective = %e.objective))]
pub async fn insert_evaluation(
    tx: &mut TenantTx,
    e: &ObjectiveEvaluation,
) -> Result<(), EvaluatorError> {
    let tally = e.budget.tally;
    sqlx::query(
        "INSERT INTO evaluations (tenant_id, id, sla_id, version, objective, as_of, period_start, period_end, \
             target_ppm, good, total, excluded, late_folded, late_total, met, compliance_ppm, budget_allowed, \
             budget_consumed, budget_remaining, burn_rate_milli, exhaustion_secs, expected_total, projected_bad, \
             at_risk, exhausted, degrade_level) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, \
             $22, $23, $24, $25, $26)",
    )
    .bind(tx.tenant().uuid())
    .bind(e.id)
    .bind(e.sla.uuid())
    .bind(e.version)
    .bind(&e.objective)
    .bind(e.as_of)
    .bind(e.period.start)
    .bind(e.period.end)
    .bind(i32::try_from(e.budget.target.ppm()).unwrap_or(i32::MAX))
    .bind(count(tally.good))
    .bind(count(tally.total))
    .bind(count(e.excluded.total))
    .bind(count(e.late_folded))
    .bind(count(e.late.total))
    .bind(e.budget.met())
    .bind(tally.compliance_ppm().map(|c| i32::try_from(c).unwrap_or(i32::MAX)))
    .bind(count(e.budget.allowed_bad()))
    .bind(count(e.budget.consumed()))
    .bind(i64::try_from(e.budget.remaining()).unwrap_or(i64::MIN))
    .bind(count(e.burn_rate.milli()))
    .bind(e.time_to_exhaustion.map(|d| d.num_seconds()))
    .bind(e.outlook.map(|o| count(o.expected_total)))
    .bind(e.outlook.map(|o| count(o.projected_bad)))
    .bind(e.outlook.is_some_and(|o| o.at_risk))
    .bind(e.outlook.is_some_and(|o| o.exhausted))
    .bind(i16::from(e.degrade_level))
    .execute(&mut **tx)
    .await
    .doing("recording an evaluation")?;
    Ok(())
}

/// Freezes the result of a closed period from its final evaluation (which
/// it records too), as a new revision: the first close is revision 1, a later correction
/// supersedes it with the next. Returns the revision written and whether
/// the one it supersedes was met, or `None` when the latest revision
/// already says the same.
#[tracing::instrument(skip_all, fields(objective = %e.objective))]
pub async fn freeze_period(
    tx: &mut TenantTx,
    e: &ObjectiveEvaluation,
    cause: &serde_json::Value,
) -> Result<Option<(i32, Option<bool>)>, EvaluatorError> {
    let tenant = tx.tenant().uuid();
    let tally = e.budget.tally;
    let previous: Option<(i32, i64, i64, i64, i64, bool)> = sqlx::query_as(
        "SELECT revision, good, total, excluded, late_total, met FROM period_results \
         WHERE tenant_id = $1 AND sla_id = $2 AND objective = $3 AND period_start = $4 \
         ORDER BY revision DESC LIMIT 1",
    )
    .bind(tenant)
    .bind(e.sla.uuid())
    .bind(&e.objective)
    .bind(e.period.start)
    .fetch_optional(&mut **tx)
    .await
    .doing("reading the period's result")?;
    let counts = (
        count(tally.good),
        count(tally.total),
        count(e.excluded.total),
        count(e.late.total),
    );
    if let Some((_, g, t, x, l, _)) = previous
        && (g, t, x, l) == counts
    {
        return Ok(None);
    }
    let revision = previous.map_or(1, |p| p.0 + 1);
    // The result points at the evaluation it froze: record that first.
    insert_evaluation(tx, e).await?;
    sqlx::query(
        "INSERT INTO period_results (tenant_id, id, sla_id, version, objective, period_start, period_end, \
             revision, as_of, target_ppm, good, total, excluded, late_total, met, compliance_ppm, evaluation_id, \
             cause) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
    )
    .bind(tenant)
    .bind(uuid::Uuid::now_v7())
    .bind(e.sla.uuid())
    .bind(e.version)
    .bind(&e.objective)
    .bind(e.period.start)
    .bind(e.period.end)
    .bind(revision)
    .bind(e.as_of)
    .bind(i32::try_from(e.budget.target.ppm()).unwrap_or(i32::MAX))
    .bind(counts.0)
    .bind(counts.1)
    .bind(counts.2)
    .bind(counts.3)
    .bind(e.budget.met())
    .bind(tally.compliance_ppm().map(|c| i32::try_from(c).unwrap_or(i32::MAX)))
    .bind(e.id)
    .bind(cause)
    .execute(&mut **tx)
    .await
    .doing("freezing a period result")?;
    Ok(Some((revision, previous.map(|p| p.5))))
}
