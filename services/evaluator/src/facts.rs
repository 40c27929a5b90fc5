//! Facts told to the outside through the outbox, each once: budget exhausted, SLA breached, and period closed with its frozen (and, after corrections, superseding) result.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::burn::AlertTransition;
use slaproof_domain::window::{Period, TimeWindow};
use slaproof_store::{TenantTx, outbox};

use crate::composite::{self, ClosedComposite};
use crate::error::{Doing, EvaluatorError};
use crate::evaluate::{
    BREACHED, BUDGET_EXHAUSTED, ObjectiveEvaluation, evaluate_period, set_state,
};
use crate::records::freeze_period;
use crate::tracked::TrackedSla;

pub(crate) fn summary(e: &ObjectiveEvaluation) -> serde_json::Value {
    let tally = e.budget.tally;
    serde_json::json!({
        "sla": e.sla.to_string(),
        "slaName": e.sla_name,
        "version": e.version,
        "objective": e.objective,
        "periodStart": e.period.start,
        "periodEnd": e.period.end,
        "asOf": e.as_of,
        "targetPpm": e.budget.target.ppm(),
        "good": tally.good,
        "total": tally.total,
        "excluded": e.excluded.total,
        "lateFolded": e.late_folded,
        "late": e.late.total,
        "compliancePpm": tally.compliance_ppm(),
        "met": e.budget.met(),
        "budgetAllowed": e.budget.allowed_bad(),
        "budgetConsumed": e.budget.consumed(),
        "budgetRemaining": i64::try_from(e.budget.remaining()).unwrap_or(i64::MIN),
        "burnRateMilli": e.burn_rate.milli(),
        "evaluation": e.id,
    })
}

/// Tells `slo.budget_exhausted` and `sla.breached` when an objective's
/// current period reaches them (once each; a new period starts clean).
#[tracing::instrument(skip_all, fields(objective = %e.objective))]
pub(crate) async fn record_budget_facts(
    tx: &mut TenantTx,
    e: &ObjectiveEvaluation,
) -> Result<usize, EvaluatorError> {
    let burn = e.burn_rate.milli();
    let mut told = 0;
    for (rule, fires, event_type) in [
        (
            BUDGET_EXHAUSTED,
            e.budget.exhausted(),
            "slo.budget_exhausted",
        ),
        (BREACHED, !e.budget.met(), "sla.breached"),
    ] {
        if set_state(tx, e, rule, fires, burn, burn).await? == AlertTransition::Fired {
            outbox::enqueue(tx, event_type, &summary(e)).await?;
            told += 1;
        }
    }
    Ok(told)
}

/// A period result frozen by [`close_periods`].
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedPeriod {
    pub evaluation: ObjectiveEvaluation,
    /// 1 at the close; higher for a correction that supersedes it.
    pub revision: i32,
}

/// The calendar period before the one containing `as_of`, once events of
/// its last minute can no longer be folded in (`as_of ≥ end + grace`).
pub(crate) fn closable_period(
    window: &TimeWindow,
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Option<Period> {
    if matches!(window, TimeWindow::Rolling { .. }) {
        // A rolling window has no periods to close.
        return None;
    }
    let current = window.period_containing(as_of);
    let previous = window.period_containing(current.start - Duration::seconds(1));
    (previous.end < current.end && as_of >= previous.end + grace).then_some(previous)
}

/// What one [`close_periods`] froze.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Closed {
    pub objectives: Vec<ClosedPeriod>,
    /// The SLA's composite, when it has one and its numbers changed.
    pub composite: Option<ClosedComposite>,
}

/// Freezes the previous calendar period of an SLA when it can close (by
/// the version that was in force at its end: see [`TrackedSla::closing`]),
/// once — a version applied in its grace neither closes it again nor
/// leaves it open — and
/// supersedes that result with a new revision when a maintenance window
/// covering it was added or cancelled since. Tells `sla.period_closed`
/// each time. The composite (when the SLA has one) is frozen from the same
/// evaluations, its parts naming the objectives' frozen evaluations, and
/// told as `sla.period_closed` with `"composite": true`.
#[tracing::instrument(skip(tx, sla), fields(sla = %sla.name))]
pub(crate) async fn close_periods(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Result<Closed, EvaluatorError> {
    let Some(period) = closable_period(&sla.definition.window, as_of, grace) else {
        return Ok(Closed::default());
    };
    // A period is judged by the version in force at its end: an earlier
    // version tracked for it closes it, the version in force leaves it.
    if sla.closing.is_some_and(|p| p.start != period.start)
        || sla.hands_over.is_some_and(|p| p.start == period.start)
    {
        return Ok(Closed::default());
    }
    if sla.covers_from > period.start {
        // The rollups of this version do not cover the whole period.
        return Ok(Closed::default());
    }
    let closed_at: Option<DateTime<Utc>> = sqlx::query_scalar(
        "SELECT max(closed_at) FROM period_results WHERE tenant_id = $1 AND sla_id = $2 AND period_start = $3",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.id.uuid())
    .bind(period.start)
    .fetch_one(&mut **tx)
    .await
    .doing("reading closed periods")?;
    if let Some(closed_at) = closed_at {
        let changed: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM maintenance_windows WHERE tenant_id = $1 \
               AND (sla_id = $2 OR sla_id IS NULL) AND starts_at < $4 AND ends_at > $3 \
               AND greatest(created_at, coalesce(cancelled_at, created_at)) > $5)",
        )
        .bind(tx.tenant().uuid())
        .bind(sla.id.uuid())
        .bind(period.start)
        .bind(period.end)
        .bind(closed_at)
        .fetch_one(&mut **tx)
        .await
        .doing("looking for maintenance changes")?;
        if !changed {
            return Ok(Closed::default());
        }
    }
    let mut out = Closed::default();
    let evaluations = evaluate_period(tx, sla, period, as_of, grace).await?;
    for evaluation in &evaluations {
        if let Some(revision) = freeze_period(tx, evaluation).await? {
            let mut payload = summary(evaluation);
            payload["revision"] = revision.into();
            outbox::enqueue(tx, "sla.period_closed", &payload).await?;
            out.objectives.push(ClosedPeriod {
                evaluation: evaluation.clone(),
                revision,
            });
        }
    }
    if let Some(mut c) = composite::compose(sla, &evaluations) {
        // An objective whose numbers did not change keeps its earlier
        // frozen evaluation: point at what is in force.
        for (objective, evaluation) in
            composite::frozen_evaluations(tx, sla.id, c.period.start).await?
        {
            if let Some(part) = c.parts.iter_mut().find(|p| p.objective == objective) {
                part.evaluation = evaluation;
            }
        }
        if let Some(revision) = composite::freeze(tx, &c).await? {
            let mut payload = composite::summary(&c);
            payload["revision"] = revision.into();
            outbox::enqueue(tx, "sla.period_closed", &payload).await?;
            out.composite = Some(ClosedComposite {
                composite: c,
                revision,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use slaproof_domain::window::CalendarUnit;

    #[test]
    fn a_month_closes_once_its_grace_has_passed() {
        let window = TimeWindow::Calendar {
            unit: CalendarUnit::Month,
            time_zone: chrono_tz::UTC,
        };
        let grace = Duration::minutes(5);
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        assert_eq!(
            closable_period(&window, at("2026-12-01T00:04:00Z"), grace),
            None
        );
        let closed = closable_period(&window, at("2026-12-01T00:05:00Z"), grace).unwrap();
        assert_eq!(closed.start, at("2026-11-01T00:00:00Z"));
        assert_eq!(closed.end, at("2026-12-01T00:00:00Z"));
        let rolling = TimeWindow::rolling(slaproof_domain::Span::parse("7d").unwrap()).unwrap();
        assert_eq!(
            closable_period(&rolling, at("2026-12-01T00:05:00Z"), grace),
            None
        );
    }
}
