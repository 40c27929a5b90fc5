//! The provider's customers ranked by the bad events of their SLAs this period, from the evaluator's latest in-period verdicts (one read, whatever the traffic): who is hurt most now, and which objective is closest to missing.

use chrono::{DateTime, Utc};
use serde::Serialize;
use slaproof_store::evaluations::{self, ObjectiveState};

use crate::authz::Scope;
use crate::{App, AppError, Caller};

/// Customers answered when no limit is asked.
pub const DEFAULT_LIMIT: usize = 50;
/// The most customers one ask answers.
pub const MAX_LIMIT: usize = 500;

/// The objective of a customer's SLAs with the least error budget left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct WorstObjective {
    pub sla: String,
    pub objective: String,
    pub target_ppm: i32,
    /// Good over counted this period so far; `null` before any.
    pub compliance_ppm: Option<i32>,
    /// The share of the period's error budget left, in millionths: one
    /// million untouched, zero spent, below zero overspent.
    pub budget_remaining_ppm: i64,
    /// Whether the period so far meets the target.
    pub met: bool,
}

/// One customer's standing this period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CustomerStanding {
    /// The customer's reference in the provider's system.
    pub customer: String,
    pub name: Option<String>,
    /// Its SLAs with a verdict this period.
    pub slas: usize,
    /// Bad requests this period: for each SLA, the most bad events any one
    /// of its event-counting objectives (ratio, threshold) counted, summed
    /// over the customer's SLAs. Time-slice and gauge objectives count
    /// slices and values, not requests, and are left out of it.
    pub bad_events: i64,
    /// Requests counted this period, by the same rule (each SLA's objective
    /// counting the most).
    pub requests: i64,
    /// Objectives whose period so far misses its target.
    pub objectives_missed: usize,
    pub worst: Option<WorstObjective>,
}

/// Customers ranked by bad events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CustomerRanking {
    /// When this was read; each verdict's own data instant is its SLA's.
    pub read_at: DateTime<Utc>,
    /// Customers with an SLA verdict this period, listed or not.
    pub customers: usize,
    /// Most bad events first; ties: least budget left first, then by
    /// reference.
    pub ranking: Vec<CustomerStanding>,
}

/// `1 - (bad share / allowed bad share)` in millionths, exactly.
fn budget_remaining_ppm(state: &ObjectiveState) -> i64 {
    let allowed_ppm = i128::from(1_000_000 - state.target_ppm);
    if state.total <= 0 || allowed_ppm <= 0 {
        return 1_000_000;
    }
    let bad = i128::from(state.total - state.good);
    let spent = bad * 1_000_000_000_000 / (i128::from(state.total) * allowed_ppm);
    i64::try_from(1_000_000 - spent).unwrap_or(i64::MIN)
}

/// Ranks the customers of `states` (objectives of SLAs without a customer
/// are left out): the rule, apart from the reading.
pub fn rank(states: Vec<ObjectiveState>, limit: usize) -> (usize, Vec<CustomerStanding>) {
    use std::collections::BTreeMap;
    /// A customer's name and its SLAs' objectives, by SLA.
    type Customer = (Option<String>, BTreeMap<String, Vec<ObjectiveState>>);
    let mut by_customer: BTreeMap<String, Customer> = BTreeMap::new();
    for state in states {
        let Some(customer) = state.customer.clone() else {
            continue;
        };
        let entry = by_customer
            .entry(customer)
            .or_insert_with(|| (state.customer_name.clone(), BTreeMap::new()));
        entry.1.entry(state.sla.clone()).or_default().push(state);
    }
    let mut out: Vec<CustomerStanding> = by_customer
        .into_iter()
        .map(|(customer, (name, slas))| {
            let mut standing = CustomerStanding {
                customer,
                name,
                slas: slas.len(),
                bad_events: 0,
                requests: 0,
                objectives_missed: 0,
                worst: None,
            };
            for objectives in slas.values() {
                let counting = objectives
                    .iter()
                    .filter(|o| matches!(o.kind.as_str(), "ratio" | "threshold"));
                standing.bad_events += counting
                    .clone()
                    .map(|o| o.total - o.good)
                    .max()
                    .unwrap_or(0);
                standing.requests += counting.map(|o| o.total).max().unwrap_or(0);
                for o in objectives {
                    standing.objectives_missed += usize::from(!o.met);
                    let left = budget_remaining_ppm(o);
                    if standing
                        .worst
                        .as_ref()
                        .is_none_or(|w| left < w.budget_remaining_ppm)
                    {
                        standing.worst = Some(WorstObjective {
                            sla: o.sla.clone(),
                            objective: o.objective.clone(),
                            target_ppm: o.target_ppm,
                            compliance_ppm: o.compliance_ppm,
                            budget_remaining_ppm: left,
                            met: o.met,
                        });
                    }
                }
            }
            standing
        })
        .collect();
    let customers = out.len();
    out.sort_by(|a, b| {
        let left = |s: &CustomerStanding| {
            s.worst
                .as_ref()
                .map_or(i64::MAX, |w| w.budget_remaining_ppm)
        };
        b.bad_events
            .cmp(&a.bad_events)
            .then(left(a).cmp(&left(b)))
            .then(a.customer.cmp(&b.customer))
    });
    out.truncate(limit);
    (customers, out)
}

impl App {
    /// The tenant's customers ranked by their SLAs' bad events this
    /// period: the provider's, with both objective families' numbers.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn customer_ranking(
        &self,
        caller: &Caller,
        limit: Option<usize>,
    ) -> Result<CustomerRanking, AppError> {
        for scope in [
            Scope::CustomerRead,
            Scope::SlaRead,
            Scope::SlaReadUptime,
            Scope::SlaReadLatency,
        ] {
            caller.require_provider(scope)?;
        }
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(AppError::invalid(
                "limit",
                format!("must be 1 to {MAX_LIMIT}, got {limit}"),
            ));
        }
        let read_at = Utc::now();
        let mut tx = self.tx(caller).await?;
        let states = evaluations::objective_states(&mut tx, None).await?;
        tx.commit().await?;
        let (customers, ranking) = rank(states, limit);
        Ok(CustomerRanking {
            read_at,
            customers,
            ranking,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(
        customer: &str,
        sla: &str,
        objective: &str,
        kind: &str,
        good: i64,
        total: i64,
    ) -> ObjectiveState {
        let start: DateTime<Utc> = "2026-12-01T00:00:00Z".parse().unwrap();
        ObjectiveState {
            sla: sla.into(),
            customer: (!customer.is_empty()).then(|| customer.into()),
            customer_name: None,
            objective: objective.into(),
            kind: kind.into(),
            as_of: start,
            period_start: start,
            period_end: "2027-01-01T00:00:00Z".parse().unwrap(),
            target_ppm: 990_000,
            good,
            total,
            met: total == 0 || good * 100 >= total * 99,
            compliance_ppm: (total > 0).then(|| (good * 1_000_000 / total) as i32),
            budget_allowed: 0,
            budget_consumed: 0,
            budget_remaining: 0,
            burn_rate_milli: 0,
        }
    }

    #[test]
    fn customers_rank_by_bad_requests_counted_once_per_sla() {
        let states = vec![
            // acme: one SLA, two objectives over the same requests: its bad
            // requests are the larger count (30), not the sum.
            state("acme", "acme-chat", "availability", "ratio", 970, 1000),
            state("acme", "acme-chat", "latency", "threshold", 990, 1000),
            // acme's time slices count minutes, not requests.
            state("acme", "acme-chat", "good-minutes", "time_slices", 0, 500),
            // globex: two SLAs, 20 + 15 bad.
            state("globex", "globex-chat", "availability", "ratio", 80, 100),
            state("globex", "globex-embed", "availability", "ratio", 985, 1000),
            // initech: nothing bad; an SLA without a customer is left out.
            state("initech", "initech-chat", "availability", "ratio", 10, 10),
            state("", "public", "availability", "ratio", 0, 1_000_000),
        ];
        let (customers, ranking) = rank(states, 10);
        assert_eq!(customers, 3);
        let got: Vec<_> = ranking
            .iter()
            .map(|s| {
                (
                    s.customer.as_str(),
                    s.slas,
                    s.bad_events,
                    s.requests,
                    s.objectives_missed,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("globex", 2, 35, 1100, 2),
                ("acme", 1, 30, 1000, 2),
                ("initech", 1, 0, 10, 0)
            ]
        );
        // acme's worst is the slices objective: every slice bad.
        let worst = ranking[1].worst.as_ref().unwrap();
        assert_eq!(
            (worst.objective.as_str(), worst.met),
            ("good-minutes", false)
        );
        // globex-chat: 20% bad of 1% allowed spends the budget 20 times.
        let worst = ranking[0].worst.as_ref().unwrap();
        assert_eq!(
            (worst.sla.as_str(), worst.budget_remaining_ppm),
            ("globex-chat", -19_000_000)
        );
        assert_eq!(
            ranking[2].worst.as_ref().unwrap().budget_remaining_ppm,
            1_000_000
        );
        let (customers, top) = rank(vec![state("a", "a", "x", "ratio", 1, 2)], 1);
        assert_eq!((customers, top.len()), (1, 1));
    }

    #[test]
    fn ties_go_to_the_customer_with_less_budget_left() {
        let states = vec![
            state("big", "big", "availability", "ratio", 99_990, 100_000),
            state("small", "small", "availability", "ratio", 90, 100),
        ];
        let (_, ranking) = rank(states, 10);
        assert_eq!(ranking[0].customer, "small");
        assert_eq!(ranking[1].customer, "big");
    }
}
