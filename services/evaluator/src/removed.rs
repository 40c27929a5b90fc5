//! Objectives the SLA version in force no longer has: their firing burn-rate alerts and in-period signals are resolved at the next round, each told once with `"reason": "objective removed"`, so that removing an objective never leaves its alert firing for ever.
//!
//! Alert and signal states are kept per SLA and objective name, across
//! versions: an objective kept by a new version goes on from its state,
//! and one a version drops is no longer evaluated, so nothing else would
//! ever resolve it. The rows stay (resolved), so an objective added back
//! later starts from a clean state. The composite's state (kept under
//! [`COMPOSITE`]) goes the same way when the version has no composite.

use chrono::{DateTime, Utc};
use slaproof_domain::burn::BurnRateAlertRule;
use slaproof_store::{TenantTx, outbox};

use crate::composite::COMPOSITE;
use crate::error::{Doing, EvaluatorError};
use crate::tracked::TrackedSla;

/// Why a state was resolved without an evaluation.
pub(crate) const REASON: &str = "objective removed";

/// Resolves the firing alerts and in-period signals of objectives `sla`
/// (the version in force) does not have, telling each change. Returns the
/// number of messages told.
#[tracing::instrument(skip_all, fields(sla = %sla.name))]
pub(crate) async fn resolve(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    as_of: DateTime<Utc>,
) -> Result<usize, EvaluatorError> {
    let mut kept: Vec<String> = sla
        .definition
        .objectives
        .iter()
        .map(|o| o.name.as_str().to_owned())
        .collect();
    if sla.definition.is_composite() {
        kept.push(COMPOSITE.to_owned());
    }
    let told = resolve_alerts(tx, sla, &kept, as_of).await?;
    Ok(told + resolve_signals(tx, sla, &kept, as_of).await?)
}

/// What every message about a removed objective says.
fn base(sla: &TrackedSla, objective: &str, as_of: DateTime<Utc>) -> serde_json::Value {
    serde_json::json!({
        "sla": sla.id.to_string(),
        "slaName": sla.name,
        "version": sla.version,
        "objective": objective,
        "asOf": as_of,
        "reason": REASON,
    })
}

async fn resolve_alerts(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    kept: &[String],
    as_of: DateTime<Utc>,
) -> Result<usize, EvaluatorError> {
    let mut resolved: Vec<(String, String, i64, i64)> = sqlx::query_as(
        "UPDATE alert_states SET firing = false, changed_at = $4, evaluated_at = $4 \
         WHERE tenant_id = $1 AND sla_id = $2 AND firing AND objective <> ALL($3) \
         RETURNING objective, rule, long_burn_milli, short_burn_milli",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.id.uuid())
    .bind(kept)
    .bind(as_of)
    .fetch_all(&mut **tx)
    .await
    .doing("resolving the alerts of removed objectives")?;
    resolved.sort();
    let rules = BurnRateAlertRule::workbook(sla.definition.window.nominal_duration());
    for (objective, rule, long, short) in &resolved {
        let mut payload = base(sla, objective, as_of);
        payload["rule"] = rule.as_str().into();
        if let Some(r) = rules.iter().find(|r| r.name == rule) {
            payload["severity"] = r.severity.as_str().into();
        }
        payload["state"] = "resolved".into();
        payload["at"] = serde_json::json!(as_of);
        // The burn rates when last evaluated, before the objective went.
        payload["longBurnRateMilli"] = (*long).into();
        payload["shortBurnRateMilli"] = (*short).into();
        outbox::enqueue(tx, "slo.burn_rate_alert", &payload).await?;
    }
    Ok(resolved.len())
}

async fn resolve_signals(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    kept: &[String],
    as_of: DateTime<Utc>,
) -> Result<usize, EvaluatorError> {
    let tenant = tx.tenant().uuid();
    let set: Vec<(String, bool, bool, i16)> = sqlx::query_as(
        "SELECT objective, at_risk, exhausted, degrade_level FROM objective_signals \
         WHERE tenant_id = $1 AND sla_id = $2 AND objective <> ALL($3) \
           AND (at_risk OR exhausted OR degrade_level > 0 OR light_streak > 0) \
         ORDER BY objective FOR UPDATE",
    )
    .bind(tenant)
    .bind(sla.id.uuid())
    .bind(kept)
    .fetch_all(&mut **tx)
    .await
    .doing("reading the signals of removed objectives")?;
    let mut told = 0;
    for (objective, at_risk, exhausted, level) in &set {
        let mut tell = async |kind: &str, extra: serde_json::Value| {
            let mut payload = base(sla, objective, as_of);
            if let (Some(p), Some(e)) = (payload.as_object_mut(), extra.as_object()) {
                p.extend(e.clone());
            }
            outbox::enqueue(tx, kind, &payload).await
        };
        if *at_risk {
            tell("slo.at_risk", serde_json::json!({"state": "recovered"})).await?;
            told += 1;
        }
        if *exhausted {
            tell(
                "slo.budget_exhausted",
                serde_json::json!({"state": "recovered"}),
            )
            .await?;
            told += 1;
        }
        if *level > 0 {
            tell(
                "slo.degrade_level_changed",
                serde_json::json!({"from": level, "to": 0}),
            )
            .await?;
            told += 1;
        }
        sqlx::query(
            "UPDATE objective_signals SET at_risk = false, exhausted = false, degrade_level = 0, \
                 light_streak = 0, changed_at = $4, evaluated_at = $4 \
             WHERE tenant_id = $1 AND sla_id = $2 AND objective = $3",
        )
        .bind(tenant)
        .bind(sla.id.uuid())
        .bind(objective)
        .bind(as_of)
        .execute(&mut **tx)
        .await
        .doing("clearing the signals of a removed objective")?;
    }
    Ok(told)
}
