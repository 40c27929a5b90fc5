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
use slaproof_store::signals as store_signals;
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
    let (alerts, signals) = store_signals::resolve_removed(tx, sla.id, &kept, as_of)
        .await
        .doing("resolving the alerts and signals of removed objectives")?;
    let mut told = 0;
    let rules = BurnRateAlertRule::workbook(sla.definition.window.nominal_duration());
    for alert in &alerts {
        let mut payload = base(sla, &alert.objective, as_of);
        payload["rule"] = alert.rule.as_str().into();
        if let Some(r) = rules.iter().find(|r| r.name == alert.rule) {
            payload["severity"] = r.severity.as_str().into();
        }
        payload["state"] = "resolved".into();
        payload["at"] = serde_json::json!(as_of);
        // The burn rates when last evaluated, before the objective went.
        payload["longBurnRateMilli"] = alert.long_burn_milli.into();
        payload["shortBurnRateMilli"] = alert.short_burn_milli.into();
        outbox::enqueue(tx, "slo.burn_rate_alert", &payload).await?;
        told += 1;
    }
    for set in &signals {
        let mut tell = async |kind: &str, extra: serde_json::Value| {
            let mut payload = base(sla, &set.objective, as_of);
            if let (Some(p), Some(e)) = (payload.as_object_mut(), extra.as_object()) {
                p.extend(e.clone());
            }
            outbox::enqueue(tx, kind, &payload).await
        };
        if set.at_risk {
            tell("slo.at_risk", serde_json::json!({"state": "recovered"})).await?;
            told += 1;
        }
        if set.exhausted {
            tell(
                "slo.budget_exhausted",
                serde_json::json!({"state": "recovered"}),
            )
            .await?;
            told += 1;
        }
        if set.degrade_level > 0 {
            tell(
                "slo.degrade_level_changed",
                serde_json::json!({"from": set.degrade_level, "to": 0}),
            )
            .await?;
            told += 1;
        }
    }
    Ok(told)
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
