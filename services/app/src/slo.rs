//! Every tenant's SLOs as numbers an operator's Prometheus can chart: each
//! objective's compliance, remaining error budget and burn rates, read from
//! the evaluator's latest verdicts; and the work waiting in each tenant's
//! queues. Operators only: it spans tenants.

use chrono::{DateTime, Utc};
pub use slaproof_store::backlog::Queue;
use slaproof_store::evaluations::{self, ObjectiveState};
use slaproof_store::{backlog, tenants};

use crate::authz::Scope;
use crate::{App, AppError, Caller};

/// One objective of one SLA now, in ratios (1 = 100%).
#[derive(Debug, Clone, PartialEq)]
pub struct SloState {
    /// The tenant's name.
    pub tenant: String,
    pub sla: String,
    /// The customer's external reference, when the SLA names one.
    pub customer: Option<String>,
    pub objective: String,
    /// The target: 0.999 for 99.9%.
    pub objective_ratio: f64,
    /// The period's length in days (a calendar month: 28 to 31).
    pub period_days: f64,
    /// Good over counted events so far this period; `None` before any.
    pub compliance: Option<f64>,
    /// How fast the budget burned over the last hour: 1 spends exactly the
    /// period's budget by its end.
    pub current_burn_rate: f64,
    /// The period so far: bad share over the allowed bad share.
    pub period_burn_rate: f64,
    /// `1 - period_burn_rate`: 1 untouched, 0 spent, below 0 overspent.
    pub budget_remaining: f64,
    pub met: bool,
    pub good: i64,
    pub total: i64,
    /// The data the verdict rests on: events received before this instant.
    pub as_of: DateTime<Utc>,
}

impl SloState {
    fn new(tenant: &str, state: ObjectiveState) -> Self {
        let objective_ratio = f64::from(state.target_ppm) / 1e6;
        let allowed_share = 1.0 - objective_ratio;
        let compliance = state.compliance_ppm.map(|_| {
            // From the counts, not the ppm (which is rounded down).
            state.good as f64 / state.total as f64
        });
        let period_burn_rate = match compliance {
            Some(c) => (1.0 - c) / allowed_share,
            None => 0.0,
        };
        let period_secs = (state.period_end - state.period_start).num_seconds();
        Self {
            tenant: tenant.to_owned(),
            sla: state.sla,
            customer: state.customer,
            objective: state.objective,
            objective_ratio,
            period_days: period_secs as f64 / 86_400.0,
            compliance,
            current_burn_rate: state.burn_rate_milli as f64 / 1000.0,
            period_burn_rate,
            budget_remaining: 1.0 - period_burn_rate,
            met: state.met,
            good: state.good,
            total: state.total,
            as_of: state.as_of,
        }
    }

    /// The allowed bad share: `1 - objective_ratio`.
    pub fn error_budget_ratio(&self) -> f64 {
        1.0 - self.objective_ratio
    }

    /// The bad share over the last hour (the current burn rate times the
    /// allowed share).
    pub fn recent_error_ratio(&self) -> f64 {
        self.current_burn_rate * self.error_budget_ratio()
    }
}

/// One queue of one tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantQueue {
    /// The tenant's name.
    pub tenant: String,
    pub queue: Queue,
}

/// What the operators' `/metrics/slo` shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SloReport {
    pub slos: Vec<SloState>,
    pub queues: Vec<TenantQueue>,
    /// The tenants (by name) with more objectives than the report's cap:
    /// their first objectives by SLA and name are shown, the rest not.
    pub truncated: Vec<String>,
}

impl App {
    /// Every objective of every tenant's SLAs (at most `per_tenant` of
    /// each tenant: one tenant's thousands of SLAs do not make every scrape
    /// as large) and every tenant's queues, tenant by tenant (each read in
    /// one transaction of its own, under its own row-level security).
    #[tracing::instrument(skip(self, caller))]
    pub async fn slo_report(
        &self,
        caller: &Caller,
        per_tenant: usize,
    ) -> Result<SloReport, AppError> {
        caller.require_provider(Scope::TenantAdmin)?;
        let mut report = SloReport::default();
        let cap = i64::try_from(per_tenant).unwrap_or(i64::MAX - 1);
        for tenant in tenants::list(&self.db).await? {
            let mut tx = self.db.tenant_tx(tenant.id).await?;
            // One more than shown tells whether any was left out.
            let mut rows = evaluations::objective_states(&mut tx, Some(cap + 1)).await?;
            if rows.len() > per_tenant {
                rows.truncate(per_tenant);
                report.truncated.push(tenant.name.clone());
            }
            let queues = backlog::queues(&mut tx).await?;
            tx.commit().await?;
            report
                .slos
                .extend(rows.into_iter().map(|row| SloState::new(&tenant.name, row)));
            report
                .queues
                .extend(queues.into_iter().map(|queue| TenantQueue {
                    tenant: tenant.name.clone(),
                    queue,
                }));
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn state(good: i64, total: i64, target_ppm: i32, burn_rate_milli: i64) -> ObjectiveState {
        let start = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap();
        ObjectiveState {
            sla: "chat".into(),
            customer: Some("globex".into()),
            customer_name: Some("Globex".into()),
            objective: "availability".into(),
            kind: "ratio".into(),
            as_of: start,
            period_start: start,
            period_end: Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap(),
            target_ppm,
            good,
            total,
            met: true,
            compliance_ppm: (total > 0).then(|| (good * 1_000_000 / total) as i32),
            budget_allowed: 0,
            budget_consumed: 0,
            budget_remaining: 0,
            burn_rate_milli,
        }
    }

    #[test]
    fn ratios_follow_slo_conventions() {
        // 99.9%: 1,000 bad of 2,000,000 spends half the budget.
        let s = SloState::new("acme", state(1_999_000, 2_000_000, 999_000, 14_400));
        assert_eq!(s.objective_ratio, 0.999);
        assert!((s.error_budget_ratio() - 0.001).abs() < 1e-12);
        assert!((s.compliance.unwrap() - 0.9995).abs() < 1e-12);
        assert!((s.period_burn_rate - 0.5).abs() < 1e-9);
        assert!((s.budget_remaining - 0.5).abs() < 1e-9);
        assert_eq!(s.current_burn_rate, 14.4);
        assert!((s.recent_error_ratio() - 0.0144).abs() < 1e-12);
        assert_eq!(s.period_days, 30.0);
    }

    #[test]
    fn an_empty_period_has_its_whole_budget_and_no_compliance() {
        let s = SloState::new("acme", state(0, 0, 990_000, 0));
        assert_eq!(s.compliance, None);
        assert_eq!(s.period_burn_rate, 0.0);
        assert_eq!(s.budget_remaining, 1.0);
    }

    #[test]
    fn an_overspent_budget_goes_below_zero() {
        let s = SloState::new("acme", state(97, 100, 990_000, 3_000));
        assert!((s.period_burn_rate - 3.0).abs() < 1e-9);
        assert!((s.budget_remaining + 2.0).abs() < 1e-9);
    }
}
