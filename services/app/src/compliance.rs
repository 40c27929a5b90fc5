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
    /// Whether the SLA's service is sending data; absent before the first
    /// evaluation.
    pub data: Option<DataView>,
    pub objectives: Vec<ObjectiveCompliance>,
    pub redacted: Vec<Redaction>,
}

/// Missing data: no events the SLA counts for its `policy.noData.after`.
/// An SLA without data has nothing to fail, so its compliance says little.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct DataView {
    pub no_data: bool,
    /// The end of the last minute with an event the SLA counts.
    pub last_event_at: Option<DateTime<Utc>>,
    /// Since when data is missing, while it is.
    pub no_data_since: Option<DateTime<Utc>>,
}

/// The latest evaluation of one objective. `numbers` is absent when the
/// caller lacks the objective's family scope, and before the first
/// evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ObjectiveCompliance {
    pub objective: String,
    pub family: Family,
    /// For a time-slice objective, its slices' length in seconds: its
    /// `good` and `total` count slices (e.g. good hours), not requests.
    /// Absent for other objectives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slice_secs: Option<u64>,
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
    /// The events (or slices) the whole period is expected to hold: the
    /// volume so far extrapolated over the period. Absent with no events.
    pub expected_total: Option<i64>,
    /// Bad events the period would end with if the rest failed at the
    /// recent rate (the longest alert lookback).
    pub projected_bad: Option<i64>,
    /// `projected_bad` exceeds what the expected period may hold: the
    /// period will be missed unless the bad rate falls. Not a breach: a
    /// breach is a closed period not met.
    pub at_risk: bool,
    /// More bad events already than the expected period may hold.
    pub exhausted: bool,
    /// 0 none, 1 light degrade, 2 full degrade, by the SLA's policy.
    pub degrade_level: i16,
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
        let data = evaluations::data_state(&mut tx, stored.id).await?;
        tx.commit().await?;
        let mut view = compliance_view(caller, &stored, &latest);
        view.data = data.map(|d| DataView {
            no_data: d.no_data,
            last_event_at: d.last_event_at,
            no_data_since: d.no_data_since,
        });
        Ok(view)
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
                                expected_total: e.expected_total,
                                projected_bad: e.projected_bad,
                                at_risk: e.at_risk,
                                exhausted: e.exhausted,
                                degrade_level: e.degrade_level,
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
                    slice_secs: match &o.sli {
                        slaproof_domain::objective::Sli::TimeSlices(t) => {
                            Some(t.slice_length.seconds())
                        }
                        _ => None,
                    },
                    numbers,
                }
            })
            .collect();
    ComplianceView {
        sla: stored.definition.name.as_str().to_owned(),
        version: stored.version,
        data: None,
        objectives,
        redacted,
    }
}

/// What a gateway needs to admit or shed traffic: per objective, the
/// degrade level the SLA's policy asks for, whether the period's budget is
/// gone at its expected volume, whether it is at risk, and how fast it
/// burns. Nothing is exhausted at a period's start or with no events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BudgetStatusView {
    pub sla: String,
    /// True when any objective the caller may see has spent the budget of
    /// its period's expected volume: shed load.
    pub exhausted: bool,
    /// The highest degrade level of the objectives the caller may see:
    /// 0 none, 1 light (rate limits, cache protection on non-core APIs),
    /// 2 full (circuit breakers, feature switches).
    pub degrade_level: i16,
    /// True when any objective the caller may see is at risk.
    pub at_risk: bool,
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
    pub at_risk: bool,
    pub degrade_level: i16,
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
                    exhausted: numbers.as_ref().is_some_and(|n| n.exhausted),
                    at_risk: numbers.as_ref().is_some_and(|n| n.at_risk),
                    degrade_level: numbers.as_ref().map_or(0, |n| n.degrade_level),
                    as_of: numbers.as_ref().map(|n| n.as_of),
                })
            })
            .collect();
        Ok(BudgetStatusView {
            sla: view.sla,
            exhausted: objectives.iter().any(|o| o.exhausted),
            degrade_level: objectives
                .iter()
                .map(|o| o.degrade_level)
                .max()
                .unwrap_or(0),
            at_risk: objectives.iter().any(|o| o.at_risk),
            objectives,
            redacted: view.redacted,
        })
    }
}
