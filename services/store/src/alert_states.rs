//! `alert_states`: whether each burn-rate rule of an objective fires, as last judged, written once per objective and round.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::SlaId;

use crate::{StoreError, TenantTx};

/// One rule as judged at an evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleCheck<'a> {
    pub rule: &'a str,
    pub fires: bool,
    pub long_burn_milli: i64,
    pub short_burn_milli: i64,
}

/// Stores each of `checks` (rule names unique) as the state of its rule on
/// `objective` of `sla` at `as_of`, and returns, in the order given,
/// whether each rule was firing before (`false` for a rule with no state
/// yet). `changed_at` moves only for a rule whose firing flips.
///
/// One statement for all rules: the read of the states before and the
/// upsert see the same snapshot, so the answer is what was replaced.
#[tracing::instrument(skip(tx, checks))]
pub async fn record(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    objective: &str,
    as_of: DateTime<Utc>,
    checks: &[RuleCheck<'_>],
) -> Result<Vec<bool>, StoreError> {
    let rules: Vec<&str> = checks.iter().map(|c| c.rule).collect();
    let fires: Vec<bool> = checks.iter().map(|c| c.fires).collect();
    let long: Vec<i64> = checks.iter().map(|c| c.long_burn_milli).collect();
    let short: Vec<i64> = checks.iter().map(|c| c.short_burn_milli).collect();
    let before: Vec<(i64, Option<bool>)> = sqlx::query_as(
        "WITH checks AS ( \
           SELECT * FROM unnest($5::text[], $6::bool[], $7::int8[], $8::int8[]) \
             WITH ORDINALITY AS c(rule, fires, long_burn, short_burn, n) \
         ), before AS ( \
           SELECT rule, firing FROM alert_states \
           WHERE tenant_id = $1 AND sla_id = $2 AND objective = $3 AND rule = ANY($5) \
         ), written AS ( \
           INSERT INTO alert_states (tenant_id, sla_id, objective, rule, firing, changed_at, evaluated_at, \
               long_burn_milli, short_burn_milli, version) \
           SELECT $1, $2, $3, c.rule, c.fires, $4, $4, c.long_burn, c.short_burn, $9 FROM checks c \
           ON CONFLICT (tenant_id, sla_id, objective, rule) DO UPDATE SET firing = EXCLUDED.firing, \
               changed_at = CASE WHEN alert_states.firing <> EXCLUDED.firing THEN EXCLUDED.changed_at \
                                 ELSE alert_states.changed_at END, \
               evaluated_at = EXCLUDED.evaluated_at, long_burn_milli = EXCLUDED.long_burn_milli, \
               short_burn_milli = EXCLUDED.short_burn_milli, version = EXCLUDED.version \
         ) \
         SELECT c.n, b.firing FROM checks c LEFT JOIN before b ON b.rule = c.rule ORDER BY c.n",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(objective)
    .bind(as_of)
    .bind(&rules)
    .bind(&fires)
    .bind(&long)
    .bind(&short)
    .bind(version)
    .fetch_all(&mut **tx)
    .await?;
    Ok(before
        .into_iter()
        .map(|(_, was)| was.unwrap_or(false))
        .collect())
}
