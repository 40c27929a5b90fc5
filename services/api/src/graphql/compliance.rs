//! Compliance over GraphQL: the numbers, budgets, alerts, breaches and
//! series an `Sla` answers, per objective.

use async_graphql::{Object, SimpleObject};

use slaproof_app::AppError;
use slaproof_app::compliance::ComplianceNumbers;
use slaproof_app::slas::Family;

use super::{family_name, holds_a_metric, refuse};

#[derive(Debug, SimpleObject)]
pub(super) struct BudgetStatus {
    /// True when an objective the caller may read has spent the budget of
    /// its period's expected volume (never at a period's start or with no
    /// events).
    pub(super) exhausted: bool,
    /// The highest degrade level the SLA's policy asks for: 0 none, 1
    /// light, 2 full.
    pub(super) degrade_level: i16,
    /// True when an objective the caller may read is at risk.
    pub(super) at_risk: bool,
    pub(super) objectives: Vec<ObjectiveBudget>,
}

#[derive(Debug, SimpleObject)]
pub(super) struct ObjectiveBudget {
    pub(super) objective: String,
    pub(super) budget_remaining: Option<i64>,
    pub(super) burn_rate_milli: Option<i64>,
    pub(super) exhausted: bool,
    pub(super) at_risk: bool,
    pub(super) degrade_level: i16,
}

/// A closed period's result, met or not, in its revision in force.
#[derive(Debug, SimpleObject)]
pub(super) struct PeriodResult {
    pub(super) objective: String,
    /// RFC 3339.
    pub(super) period_start: String,
    /// RFC 3339.
    pub(super) period_end: String,
    /// The SLA version whose terms judged the period.
    pub(super) version: i32,
    pub(super) revision: i32,
    pub(super) target_ppm: i32,
    pub(super) met: bool,
    pub(super) compliance_ppm: Option<i32>,
    pub(super) good: i64,
    pub(super) total: i64,
    /// Events left out by maintenance.
    pub(super) excluded: i64,
    /// Events that arrived after the period's late grace, as counted when
    /// this revision was frozen: counted apart, never in the verdict.
    pub(super) late_total: i64,
    /// The same count now: `lateTotalNow - lateTotal` arrived after the
    /// revision was frozen. Reported, not applied to the verdict.
    pub(super) late_total_now: i64,
    /// Of `lateTotalNow`, the good ones.
    pub(super) late_good_now: i64,
    /// RFC 3339.
    pub(super) closed_at: String,
}

/// Whether an SLA's service is sending data.
#[derive(Debug, SimpleObject)]
pub(super) struct DataState {
    pub(super) no_data: bool,
    /// RFC 3339: the end of the last minute with an event the SLA counts.
    pub(super) last_event_at: Option<String>,
    /// RFC 3339: since when data is missing, while it is.
    pub(super) no_data_since: Option<String>,
}

#[derive(Debug, SimpleObject)]
pub(super) struct Alert {
    pub(super) objective: String,
    pub(super) rule: String,
    pub(super) firing: bool,
    /// RFC 3339.
    pub(super) changed_at: String,
    pub(super) long_burn_milli: i64,
    pub(super) short_burn_milli: i64,
}

#[derive(Debug, SimpleObject)]
pub(super) struct Breach {
    pub(super) objective: String,
    pub(super) period_start: String,
    pub(super) period_end: String,
    pub(super) revision: i32,
    pub(super) target_ppm: i32,
    pub(super) compliance_ppm: Option<i32>,
}

#[derive(Debug, SimpleObject)]
pub(super) struct SeriesPoint {
    /// RFC 3339.
    pub(super) evaluated_at: String,
    pub(super) met: bool,
    pub(super) compliance_ppm: Option<i32>,
    pub(super) budget_remaining: i64,
    pub(super) burn_rate_milli: i64,
}

#[derive(Debug)]
pub(super) struct ObjectiveCompliance {
    pub(super) objective: String,
    pub(super) family: Family,
    pub(super) slice_secs: Option<u64>,
    pub(super) numbers: Option<Option<ComplianceNumbers>>,
}

#[Object]
impl ObjectiveCompliance {
    async fn objective(&self) -> &str {
        &self.objective
    }
    async fn family(&self) -> &'static str {
        family_name(self.family)
    }
    /// For a time-slice objective, its slices' length in seconds (at most a
    /// day): its counts are slices, not requests. `null` for others.
    async fn slice_secs(&self) -> Option<i32> {
        self.slice_secs.and_then(|s| i32::try_from(s).ok())
    }
    /// `null` before the first evaluation; needs the family's scope.
    #[graphql(visible = "holds_a_metric")]
    async fn met(&self) -> async_graphql::Result<Option<bool>> {
        Ok(self.numbers()?.map(|n| n.met))
    }
    #[graphql(visible = "holds_a_metric")]
    async fn compliance_ppm(&self) -> async_graphql::Result<Option<i32>> {
        Ok(self.numbers()?.and_then(|n| n.compliance_ppm))
    }
    #[graphql(visible = "holds_a_metric")]
    async fn budget_remaining(&self) -> async_graphql::Result<Option<i64>> {
        Ok(self.numbers()?.map(|n| n.budget_remaining))
    }
    #[graphql(visible = "holds_a_metric")]
    async fn burn_rate_milli(&self) -> async_graphql::Result<Option<i64>> {
        Ok(self.numbers()?.map(|n| n.burn_rate_milli))
    }
    /// The events the whole period is expected to hold; `null` with none yet.
    #[graphql(visible = "holds_a_metric")]
    async fn expected_total(&self) -> async_graphql::Result<Option<i64>> {
        Ok(self.numbers()?.and_then(|n| n.expected_total))
    }
    /// The period will be missed if the rest fails at the recent rate (not
    /// a breach: a breach is a closed period not met).
    #[graphql(visible = "holds_a_metric")]
    async fn at_risk(&self) -> async_graphql::Result<Option<bool>> {
        Ok(self.numbers()?.map(|n| n.at_risk))
    }
    /// The period's budget at its expected volume is spent.
    #[graphql(visible = "holds_a_metric")]
    async fn exhausted(&self) -> async_graphql::Result<Option<bool>> {
        Ok(self.numbers()?.map(|n| n.exhausted))
    }
    /// 0 none, 1 light degrade, 2 full degrade.
    #[graphql(visible = "holds_a_metric")]
    async fn degrade_level(&self) -> async_graphql::Result<Option<i16>> {
        Ok(self.numbers()?.map(|n| n.degrade_level))
    }
}

impl ObjectiveCompliance {
    fn numbers(&self) -> async_graphql::Result<Option<&ComplianceNumbers>> {
        match &self.numbers {
            Some(n) => Ok(n.as_ref()),
            None => Err(refuse(AppError::MissingScope(self.family.scope()))),
        }
    }
}
