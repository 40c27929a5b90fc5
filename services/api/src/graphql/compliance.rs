//! Compliance over GraphQL: the numbers, budgets, alerts, breaches and
//! series an `Sla` answers, per objective.

use async_graphql::{Object, SimpleObject};

use slaproof_app::AppError;
use slaproof_app::compliance::ComplianceNumbers;
use slaproof_app::slas::Family;

use super::{family_name, holds_a_metric, refuse};

#[derive(Debug, SimpleObject)]
pub(super) struct BudgetStatus {
    /// True when an objective the caller may read has no budget left.
    pub(super) exhausted: bool,
    pub(super) objectives: Vec<ObjectiveBudget>,
}

#[derive(Debug, SimpleObject)]
pub(super) struct ObjectiveBudget {
    pub(super) objective: String,
    pub(super) budget_remaining: Option<i64>,
    pub(super) burn_rate_milli: Option<i64>,
    pub(super) exhausted: bool,
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
}

impl ObjectiveCompliance {
    fn numbers(&self) -> async_graphql::Result<Option<&ComplianceNumbers>> {
        match &self.numbers {
            Some(n) => Ok(n.as_ref()),
            None => Err(refuse(AppError::MissingScope(self.family.scope()))),
        }
    }
}
