//! Attribution and the customer ranking over GraphQL: an objective's bad events by one dimension, and the provider's customers by their bad events this period; the same operations and rules as REST.

use async_graphql::{Context, Object, SimpleObject};

use slaproof_app::attribution::AttributionAsk;

use super::limits::read_cost;
use super::{instant, parts, refuse};

#[derive(Debug, Default)]
pub(super) struct AttributionQuery;

#[Object]
impl AttributionQuery {
    /// An objective's bad events broken down by `by` (`model`, `status`,
    /// `error_class`, `source`, `streaming`, `customer`: the provider's
    /// only, or `attr.<name>`) over `[from, to)` (RFC 3339; default the
    /// last hour, at most 24 hours), the `limit` values (1-100, default 10)
    /// with the most bad events first.
    #[graphql(complexity = "read_cost(child_complexity)")]
    #[allow(clippy::too_many_arguments)]
    async fn attribution(
        &self,
        ctx: &Context<'_>,
        sla: String,
        objective: String,
        by: String,
        from: Option<String>,
        to: Option<String>,
        limit: Option<i32>,
    ) -> async_graphql::Result<Attribution> {
        let (app, caller) = parts(ctx)?;
        let ask = AttributionAsk {
            objective,
            by,
            from: instant("from", from)?,
            to: instant("to", to)?,
            // A negative limit is out of range as 0 is.
            limit: limit.map(|l| usize::try_from(l).unwrap_or(0)),
        };
        let view = app.attribution(caller, &sla, &ask).await.map_err(refuse)?;
        Ok(Attribution {
            sla: view.sla,
            version: view.version,
            objective: view.objective,
            by: view.by,
            from: view.from.to_rfc3339(),
            to: view.to.to_rfc3339(),
            as_of: view.as_of.to_rfc3339(),
            scope: view.scope.as_str(),
            bad: view.bad,
            total: view.total,
            values: view.values,
            contributions: view
                .contributions
                .into_iter()
                .map(|c| Contribution {
                    value: c.value,
                    bad: c.bad,
                    total: c.total,
                })
                .collect(),
        })
    }

    /// The provider's customers ranked by their SLAs' bad requests this
    /// period (each SLA's event-counting objective with the most), the
    /// `limit` (1-500, default 50) with the most first.
    #[graphql(complexity = "read_cost(child_complexity)")]
    async fn customer_ranking(
        &self,
        ctx: &Context<'_>,
        limit: Option<i32>,
    ) -> async_graphql::Result<CustomerRanking> {
        let (app, caller) = parts(ctx)?;
        let limit = limit.map(|l| usize::try_from(l).unwrap_or(0));
        let view = app.customer_ranking(caller, limit).await.map_err(refuse)?;
        Ok(CustomerRanking {
            read_at: view.read_at.to_rfc3339(),
            customers: view.customers,
            ranking: view
                .ranking
                .into_iter()
                .map(|s| CustomerStanding {
                    customer: s.customer,
                    name: s.name,
                    slas: s.slas,
                    bad_events: s.bad_events,
                    requests: s.requests,
                    objectives_missed: s.objectives_missed,
                    worst: s.worst.map(|w| WorstObjective {
                        sla: w.sla,
                        objective: w.objective,
                        target_ppm: w.target_ppm,
                        compliance_ppm: w.compliance_ppm,
                        budget_remaining_ppm: w.budget_remaining_ppm,
                        met: w.met,
                    }),
                })
                .collect(),
        })
    }
}

/// An objective's bad events by one dimension.
#[derive(Debug, SimpleObject)]
pub(super) struct Attribution {
    sla: String,
    /// The version in force, whose objective and scope judged the events.
    version: i32,
    objective: String,
    by: String,
    /// RFC 3339; events that occurred in `[from, to)`…
    from: String,
    to: String,
    /// …and were received before this instant.
    as_of: String,
    /// `customer` (the SLA's customer's requests) or `service` (all).
    scope: &'static str,
    /// Bad events over every value, listed or not.
    bad: u64,
    /// Counted events over every value, listed or not.
    total: u64,
    /// Distinct values seen.
    values: usize,
    /// Most bad events first.
    contributions: Vec<Contribution>,
}

/// One value and its counted events.
#[derive(Debug, SimpleObject)]
pub(super) struct Contribution {
    /// Null: events without the dimension.
    value: Option<String>,
    bad: u64,
    total: u64,
}

/// Customers ranked by bad requests this period.
#[derive(Debug, SimpleObject)]
pub(super) struct CustomerRanking {
    read_at: String,
    /// Customers with an SLA verdict this period, listed or not.
    customers: usize,
    ranking: Vec<CustomerStanding>,
}

/// One customer's standing this period.
#[derive(Debug, SimpleObject)]
pub(super) struct CustomerStanding {
    /// The provider's reference for it.
    customer: String,
    name: Option<String>,
    slas: usize,
    bad_events: i64,
    requests: i64,
    objectives_missed: usize,
    worst: Option<WorstObjective>,
}

/// The objective of a customer's SLAs with the least error budget left.
#[derive(Debug, SimpleObject)]
pub(super) struct WorstObjective {
    sla: String,
    objective: String,
    target_ppm: i32,
    compliance_ppm: Option<i32>,
    /// Millionths of the period's budget left; below zero: overspent.
    budget_remaining_ppm: i64,
    met: bool,
}
