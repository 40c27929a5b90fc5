//! Compliance and error budgets of an SLA, read from the evaluator's
//! latest evaluations, each objective's numbers shown only with the scope
//! of its metric family.

use chrono::{DateTime, Utc};
use serde::Serialize;
use slaproof_store::TenantTx;
use slaproof_store::evaluations::{self, StoredEvaluation};
use slaproof_store::slas::StoredSla;

use crate::slas::Family;
use crate::{App, AppError, Caller, Redaction};

/// The state of one SLA now.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ComplianceView {
    pub sla: String,
    pub version: i32,
    pub objectives: Vec<ObjectiveCompliance>,
    pub redacted: Vec<Redaction>,
}

/// The latest evaluation of one objective. `numbers` is absent when the
/// caller lacks the objective's family scope, and before the first
/// evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ObjectiveCompliance {
    pub objective: String,
    pub family: Family,
    /// `null` before the first evaluation; absent (and listed in
    /// `redacted`) without the family's scope.
    #[serde(skip_serializing_if = "is_redacted")]
    pub numbers: Option<Option<ComplianceNumbers>>,
}

/// What the evaluator computed, exact integers as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ComplianceNumbers {
    pub evaluated_at: DateTime<Utc>,
    pub as_of: DateTime<Utc>,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub target_ppm: i32,
    pub good: i64,
    pub total: i64,
    pub met: bool,
    /// Absent while the period has no events.
    pub compliance_ppm: Option<i32>,
    pub budget_allowed: i64,
    pub budget_consumed: i64,
    pub budget_remaining: i64,
    /// Burn rate in thousandths (1000 = burning exactly the budget).
    pub burn_rate_milli: i64,
    /// Seconds until the budget is gone at the current rate.
    pub exhaustion_secs: Option<i64>,
}

fn is_redacted(numbers: &Option<Option<ComplianceNumbers>>) -> bool {
    numbers.is_none()
}

impl App {
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn sla_compliance(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<ComplianceView, AppError> {
        let mut tx = self.tx(caller).await?;
        let (stored, customer_ref) = self.visible_sla(&mut tx, caller, name, None).await?;
        let latest = self
            .latest_readable(&mut tx, caller, &stored, customer_ref.as_deref())
            .await?;
        tx.commit().await?;
        Ok(compliance_view(caller, &stored, &latest))
    }

    /// The latest evaluation of each objective, among the versions whose
    /// history the caller may read (a customer's user never sees the last
    /// verdict of a version that was another customer's).
    pub(crate) async fn latest_readable(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        stored: &StoredSla,
        customer_ref: Option<&str>,
    ) -> Result<Vec<StoredEvaluation>, AppError> {
        let mut latest = evaluations::latest(tx, stored.id).await?;
        if let Some(readable) = self
            .readable_versions(tx, caller, stored, customer_ref)
            .await?
        {
            latest.retain(|e| readable.contains(&e.version));
        }
        Ok(latest)
    }
}

/// The caller's view of an SLA's latest evaluations: each objective's
/// numbers only with the scope of its family (shared with the dashboard).
pub(crate) fn compliance_view(
    caller: &Caller,
    stored: &StoredSla,
    latest: &[StoredEvaluation],
) -> ComplianceView {
    let mut redacted = Vec::new();
    let objectives =
        stored
            .definition
            .objectives
            .iter()
            .map(|o| {
                let family = Family::of(o);
                let name = o.name.as_str().to_owned();
                let numbers =
                    if caller.has(family.scope()) {
                        Some(latest.iter().find(|e| e.objective == name).map(|e| {
                            ComplianceNumbers {
                                evaluated_at: e.evaluated_at,
                                as_of: e.as_of,
                                period_start: e.period_start,
                                period_end: e.period_end,
                                target_ppm: e.target_ppm,
                                good: e.good,
                                total: e.total,
                                met: e.met,
                                compliance_ppm: e.compliance_ppm,
                                budget_allowed: e.budget_allowed,
                                budget_consumed: e.budget_consumed,
                                budget_remaining: e.budget_remaining,
                                burn_rate_milli: e.burn_rate_milli,
                                exhaustion_secs: e.exhaustion_secs,
                            }
                        }))
                    } else {
                        redacted.push(Redaction {
                            field: format!("objectives[{name}].numbers"),
                            scope: family.scope().as_str(),
                        });
                        None
                    };
                ObjectiveCompliance {
                    objective: name,
                    family,
                    numbers,
                }
            })
            .collect();
    ComplianceView {
        sla: stored.definition.name.as_str().to_owned(),
        version: stored.version,
        objectives,
        redacted,
    }
}

/// What a gateway needs to admit or shed traffic: per objective, whether
/// budget is left and how fast it burns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BudgetStatusView {
    pub sla: String,
    /// True when any objective the caller may see has no budget left: shed
    /// load.
    pub exhausted: bool,
    pub objectives: Vec<ObjectiveBudget>,
    pub redacted: Vec<Redaction>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ObjectiveBudget {
    pub objective: String,
    /// Events (or slices) still allowed to fail this period; absent before
    /// the first evaluation.
    pub budget_remaining: Option<i64>,
    /// Thousandths of the sustainable burn rate.
    pub burn_rate_milli: Option<i64>,
    pub exhausted: bool,
    pub as_of: Option<DateTime<Utc>>,
}

impl App {
    /// The small, cacheable read a provider's gateway consults before
    /// admitting traffic.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn budget_status(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<BudgetStatusView, AppError> {
        let view = self.sla_compliance(caller, name).await?;
        let objectives: Vec<ObjectiveBudget> = view
            .objectives
            .into_iter()
            .filter_map(|o| {
                // Redacted objectives stay out, and are named in `redacted`.
                let numbers = o.numbers?;
                Some(ObjectiveBudget {
                    objective: o.objective,
                    budget_remaining: numbers.as_ref().map(|n| n.budget_remaining),
                    burn_rate_milli: numbers.as_ref().map(|n| n.burn_rate_milli),
                    exhausted: numbers.as_ref().is_some_and(|n| n.budget_remaining <= 0),
                    as_of: numbers.as_ref().map(|n| n.as_of),
                })
            })
            .collect();
        Ok(BudgetStatusView {
            sla: view.sla,
            exhausted: objectives.iter().any(|o| o.exhausted),
            objectives,
            redacted: view.redacted,
        })
    }
}
