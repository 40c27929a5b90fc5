//! Where an objective's bad events came from: its events over a stretch of at most a day, broken down by one dimension (model, status, error class, source, streaming, customer, an attribute), counted as the evaluator counts them (the SLA's scope, maintenance and late events left out), from the raw events on demand.
//!
//! Field rule as on the dashboard: the objective's numbers need its family
//! scope, a breakdown over time needs `sla:read:history`; a breakdown by
//! customer names other customers' references, so it is the provider's.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use slaproof_domain::attribution::{Attribution, Dimension};
use slaproof_domain::objective::Sli;
use slaproof_domain::window::in_any;
use slaproof_store::event_reads::{self, AttributionScan};
use slaproof_store::maintenance;

use crate::authz::Scope;
use crate::dashboard::SlaScopeView;
use crate::slas::Family;
use crate::{App, AppError, Caller};

/// The stretch answered when none is asked: the last hour.
pub const DEFAULT_STRETCH: Duration = Duration::hours(1);
/// The longest stretch one ask reads: every event of it is read and
/// classified, so the cost grows with the traffic in it.
pub const MAX_STRETCH: Duration = Duration::hours(24);
/// Values answered when no limit is asked.
pub const DEFAULT_LIMIT: usize = 10;
/// The most values one ask answers.
pub const MAX_LIMIT: usize = 100;

/// What to break down, over which stretch.
#[derive(Debug, Clone, Default)]
pub struct AttributionAsk {
    pub objective: String,
    /// A dimension's name (`model`, `customer`, `attr.region`, …).
    pub by: String,
    /// Default: an hour before `to`.
    pub from: Option<DateTime<Utc>>,
    /// Default: now.
    pub to: Option<DateTime<Utc>>,
    /// Default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`].
    pub limit: Option<usize>,
}

/// One value of the dimension and the counted events that carried it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ContributionView {
    /// The value; `null` for events without one (no model named, no such
    /// attribute, no customer).
    pub value: Option<String>,
    /// Bad events with this value.
    pub bad: u64,
    /// Counted events (good and bad) with this value.
    pub total: u64,
}

/// An objective's bad events broken down by one dimension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct AttributionView {
    pub sla: String,
    /// The version whose objective and scope judged the events: the one
    /// in force now.
    pub version: i32,
    pub objective: String,
    /// The dimension, as asked (`model`, `customer`, `attr.region`, …).
    pub by: String,
    /// Events that occurred in `[from, to)`…
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// …and were received before this instant.
    pub as_of: DateTime<Utc>,
    /// Whose requests were read: the SLA's customer's, or the service's.
    pub scope: SlaScopeView,
    /// Bad events over every value, listed or not.
    pub bad: u64,
    /// Counted events over every value, listed or not.
    pub total: u64,
    /// Distinct values seen; more than listed when the limit cut them.
    pub values: usize,
    /// The values with the most bad events, most first (ties: more counted
    /// events first, then by value).
    pub contributions: Vec<ContributionView>,
}

/// The stretch `[from, to)` an ask reads, checked.
fn stretch(
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(DateTime<Utc>, DateTime<Utc>), AppError> {
    crate::check_instants(&[("from", from), ("to", to)])?;
    let to = to.unwrap_or(now);
    let from = from.unwrap_or(to - DEFAULT_STRETCH);
    if to <= from {
        return Err(AppError::invalid("to", "must be after from"));
    }
    if to - from > MAX_STRETCH {
        return Err(AppError::invalid(
            "from",
            format!(
                "from {} to {} is longer than {} hours, the most read at once (every event in it is read): ask for a shorter stretch",
                from.to_rfc3339(),
                to.to_rfc3339(),
                MAX_STRETCH.num_hours()
            ),
        ));
    }
    Ok((from, to))
}

impl App {
    /// The values of `ask.by` that carried the most bad events of one
    /// objective of one SLA the caller may see.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn attribution(
        &self,
        caller: &Caller,
        name: &str,
        ask: &AttributionAsk,
    ) -> Result<AttributionView, AppError> {
        let dimension = Dimension::parse(&ask.by).map_err(|e| AppError::invalid("by", e))?;
        let limit = ask.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(AppError::invalid(
                "limit",
                format!("must be 1 to {MAX_LIMIT}, got {limit}"),
            ));
        }
        let now = Utc::now();
        let (from, to) = stretch(ask.from, ask.to, now)?;
        let mut tx = self.tx(caller).await?;
        let (stored, _) = self.visible_sla(&mut tx, caller, name, None).await?;
        let definition = &stored.definition;
        let objective = definition
            .objective(&ask.objective)
            .ok_or_else(|| AppError::NotFound {
                what: "objective",
                key: format!("{name}/{}", ask.objective),
            })?;
        caller.require(Family::of(objective).scope())?;
        caller.require(Scope::SlaReadHistory)?;
        if dimension == Dimension::Customer && caller.customer().is_some() {
            return Err(AppError::Forbidden(
                "by=customer names other customers' references: only the provider breaks bad events down by customer".into(),
            ));
        }
        if matches!(objective.sli, Sli::Gauge(_)) {
            return Err(AppError::invalid(
                "objective",
                format!(
                    "{:?} is a gauge: it judges sampled values, not events, so there is nothing to break down",
                    ask.objective
                ),
            ));
        }
        let windows = maintenance::periods(&mut tx, stored.id, definition, from, to).await?;
        let mut tally = Attribution::default();
        event_reads::attribution_scan(
            &mut tx,
            AttributionScan {
                service: &definition.service,
                customer: definition.measured_customer(),
                from,
                to,
                received_before: now,
                dimension: &dimension,
            },
            |event, value| {
                // The same three rules the evaluator's rollups apply.
                if !definition.measures(event.fields.service.as_deref(), event.customer.as_deref())
                    || in_any(&windows, event.occurred_at)
                    || !definition
                        .arrival(event.occurred_at, event.received_at, self.late_grace)
                        .counts()
                {
                    return;
                }
                tally.add(value, objective.classify(&event.fields));
            },
        )
        .await?;
        tx.commit().await?;
        let (bad, total) = tally.totals();
        Ok(AttributionView {
            sla: definition.name.as_str().to_owned(),
            version: stored.version,
            objective: ask.objective.clone(),
            by: dimension.name(),
            from,
            to,
            as_of: now,
            scope: SlaScopeView::from(definition.scope),
            bad,
            total,
            values: tally.values(),
            contributions: tally
                .top(limit)
                .into_iter()
                .map(|c| ContributionView {
                    value: c.value,
                    bad: c.bad,
                    total: c.total,
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn the_stretch_is_the_last_hour_by_default_and_at_most_a_day() {
        let now = at("2026-12-05T10:00:00Z");
        assert_eq!(
            stretch(None, None, now).unwrap(),
            (at("2026-12-05T09:00:00Z"), now)
        );
        let day = stretch(Some(at("2026-12-04T10:00:00Z")), None, now).unwrap();
        assert_eq!(day.1 - day.0, MAX_STRETCH);
        let err = stretch(Some(at("2026-12-04T09:59:00Z")), None, now).unwrap_err();
        assert!(err.to_string().contains("longer than 24 hours"), "{err}");
        let err = stretch(Some(now), Some(now), now).unwrap_err();
        assert!(err.to_string().contains("must be after from"), "{err}");
        let err = stretch(Some(at("2300-01-01T00:00:00Z")), None, now).unwrap_err();
        assert!(err.to_string().contains("from"), "{err}");
    }
}
