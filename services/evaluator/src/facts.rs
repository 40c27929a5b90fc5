//! Facts told at a period's close through the outbox: `sla.period_closed` with its frozen (and, after corrections, superseding) result, and `sla.breached` when it was not met — once per period and revision.
//!
//! A *breach* is a closed period not met: the contractual fact credits are
//! paid on. It is told here and nowhere else; while a period is open the
//! signals are burn-rate alerts and [`crate::signals`]' at-risk, budget
//! exhausted and degrade level. A correction that turns a breach into a
//! period met is told as `sla.breach_withdrawn`.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::window::{Period, TimeWindow};
use slaproof_store::{TenantTx, credits, evaluations, maintenance, outbox};

use crate::composite::{self, ClosedComposite};
use crate::error::{Doing, EvaluatorError};
use crate::evaluate::{ObjectiveEvaluation, evaluate_period};
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
        "expectedTotal": e.outlook.map(|o| o.expected_total),
        "projectedBad": e.outlook.map(|o| o.projected_bad),
        "atRisk": e.outlook.is_some_and(|o| o.at_risk),
        "exhaustedAtExpectedVolume": e.outlook.is_some_and(|o| o.exhausted),
        "degradeLevel": e.degrade_level,
        "evaluation": e.id,
    })
}

/// Tells what a frozen revision means: `sla.breached` when the period was
/// not met, `sla.breach_withdrawn` when a correction turned an earlier
/// breach into a period met. `payload` is the closed result's.
pub(crate) async fn tell_verdict(
    tx: &mut TenantTx,
    met: Option<bool>,
    was_met: Option<bool>,
    payload: &serde_json::Value,
) -> Result<(), EvaluatorError> {
    match (met, was_met) {
        (Some(false), _) => outbox::enqueue(tx, "sla.breached", payload)
            .await
            .map(drop)?,
        (Some(true), Some(false)) => {
            outbox::enqueue(tx, "sla.breach_withdrawn", payload)
                .await
                .map(drop)?;
        }
        _ => {}
    }
    Ok(())
}

/// A period result frozen by [`close_periods`].
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedPeriod {
    pub evaluation: ObjectiveEvaluation,
    /// 1 at the close; higher for a correction that supersedes it.
    pub revision: i32,
}

/// Most periods one SLA version closes or corrects in a round, oldest
/// first: after a long outage the rest wait for the next rounds, so that a
/// round (one tenant's transaction) stays bounded.
pub(crate) const MAX_CLOSES_PER_ROUND: usize = 12;

/// The calendar periods that start at or after `from` and whose last
/// minute can no longer be folded in (`as_of ≥ end + grace`), oldest
/// first. Rolling windows have none.
pub(crate) fn due_periods(
    window: &TimeWindow,
    from: DateTime<Utc>,
    as_of: DateTime<Utc>,
    grace: Duration,
) -> Vec<Period> {
    if matches!(window, TimeWindow::Rolling { .. }) {
        // A rolling window has no periods to close.
        return Vec::new();
    }
    let mut period = window.period_containing(from);
    if period.start < from {
        period = window.next_period(&period);
    }
    let mut due = Vec::new();
    while as_of >= period.end + grace {
        let next = window.next_period(&period);
        due.push(period);
        if next.start <= period.start {
            break;
        }
        period = next;
    }
    due
}

/// What [`close_periods`] froze.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Closed {
    pub objectives: Vec<ClosedPeriod>,
    /// The SLA's composites, when it has one and their numbers changed.
    pub composites: Vec<ClosedComposite>,
}

/// Freezes every calendar period of an SLA that is due (see
/// [`due_periods`]) and not closed yet, oldest first and at most
/// [`MAX_CLOSES_PER_ROUND`] a round, and supersedes a closed one with a new
/// revision when a maintenance window covering it was added or cancelled
/// since. A period is judged by the version that was in force at its start
/// (see [`crate::versions`]) and closed once: the version in force judges
/// the periods from when it took effect (`judges_from`; those before are
/// earlier versions'), an earlier version only its `closing` period, each
/// only where its rollups cover the whole period. Tells `sla.period_closed` each time. The composite (when the SLA
/// has one) is frozen from the same evaluations, its parts naming the
/// objectives' frozen evaluations, and told as `sla.period_closed` with
/// `"composite": true`. `seen` is when the round's maintenance changes
/// were settled (`maintenance::settled`): a period is noted as judged
/// then, and judged again when a window over it changes later.
#[tracing::instrument(skip(tx, sla), fields(sla = %sla.name))]
pub(crate) async fn close_periods(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    as_of: DateTime<Utc>,
    seen: DateTime<Utc>,
    grace: Duration,
) -> Result<Closed, EvaluatorError> {
    let window = &sla.definition.window;
    // The SLA's own late grace, when it sets one.
    let closes_after = sla.grace(grace);
    let candidates: Vec<Period> = match sla.closing {
        Some(closing) => due_periods(
            window,
            sla.covers_from.max(closing.start),
            as_of,
            closes_after,
        )
        .into_iter()
        .filter(|p| p.start == closing.start)
        .collect(),
        None => {
            let from = sla
                .judges_from
                .map_or(sla.covers_from, |t| sla.covers_from.max(t));
            due_periods(window, from, as_of, closes_after)
        }
    };
    let mut out = Closed::default();
    if candidates.is_empty() {
        return Ok(out);
    }
    let starts: Vec<DateTime<Utc>> = candidates.iter().map(|p| p.start).collect();
    let ends: Vec<DateTime<Utc>> = candidates.iter().map(|p| p.end).collect();
    // Under late corrections, a closed period's late telemetry counts until
    // the next period ends.
    let corrects_until: Vec<DateTime<Utc>> = candidates
        .iter()
        .map(|p| {
            if sla.definition.policy.late_corrections {
                window.next_period(p).end
            } else {
                p.end
            }
        })
        .collect();
    // Each due period still to close (no result yet), or closed and since
    // covered by a maintenance window added, cancelled or accepted after it
    // was last judged (closed, or judged again: `period_checks`), or, under
    // late corrections and until they end, with counts rolled up since.
    let open: Vec<DateTime<Utc>> = sqlx::query_scalar(
        "SELECT p.s FROM unnest($3::timestamptz[], $4::timestamptz[], $6::timestamptz[]) AS p(s, e, u) \
         LEFT JOIN LATERAL (SELECT max(closed_at) AS closed_at FROM period_results \
             WHERE tenant_id = $1 AND sla_id = $2 AND period_start = p.s) r ON true \
         LEFT JOIN period_checks c ON c.tenant_id = $1 AND c.sla_id = $2 AND c.period_start = p.s \
         WHERE r.closed_at IS NULL OR EXISTS (SELECT 1 FROM maintenance_windows m \
             WHERE m.tenant_id = $1 AND (m.sla_id = $2 OR m.sla_id IS NULL) \
               AND m.starts_at < p.e AND m.ends_at > p.s \
               AND m.changed_at > greatest(r.closed_at, c.checked_at)) \
            OR (p.u > $8 AND EXISTS (SELECT 1 FROM evaluator_rollups_hourly h \
             WHERE h.tenant_id = $1 AND h.sla_id = $2 AND h.version = $7 \
               AND h.hour > p.s - interval '1 hour' AND h.hour < p.e \
               AND h.updated_at > greatest(r.closed_at, c.checked_at))) \
         ORDER BY p.s LIMIT $5",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.id.uuid())
    .bind(&starts)
    .bind(&ends)
    .bind(i64::try_from(MAX_CLOSES_PER_ROUND).unwrap_or(i64::MAX))
    .bind(&corrects_until)
    .bind(sla.version)
    .bind(as_of)
    .fetch_all(&mut **tx)
    .await
    .doing("reading closed periods")?;
    for period in candidates.into_iter().filter(|p| open.contains(&p.start)) {
        close_period(tx, sla, period, as_of, grace, &mut out).await?;
        sqlx::query(
            "INSERT INTO period_checks (tenant_id, sla_id, period_start, checked_at) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (tenant_id, sla_id, period_start) DO UPDATE SET checked_at = EXCLUDED.checked_at",
        )
        .bind(tx.tenant().uuid())
        .bind(sla.id.uuid())
        .bind(period.start)
        .bind(seen)
        .execute(&mut **tx)
        .await
        .doing("noting a period judged")?;
    }
    Ok(out)
}

/// Freezes one period (a new revision where its numbers changed), adding
/// what it froze to `out`.
async fn close_period(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    period: Period,
    as_of: DateTime<Utc>,
    grace: Duration,
    out: &mut Closed,
) -> Result<(), EvaluatorError> {
    let frozen_before = out.objectives.len() + out.composites.len();
    let objectives_before = out.objectives.len();
    let evaluations = evaluate_period(tx, sla, period, as_of, grace).await?;
    let cause = revision_cause(tx, sla, period).await?;
    for evaluation in &evaluations {
        if let Some((revision, was_met)) = freeze_period(tx, evaluation, &cause).await? {
            let mut payload = summary(evaluation);
            payload["revision"] = revision.into();
            payload["cause"] = cause.clone();
            outbox::enqueue(tx, "sla.period_closed", &payload).await?;
            tell_verdict(tx, Some(evaluation.budget.met()), was_met, &payload).await?;
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
        if let Some((revision, was_met)) = composite::freeze(tx, &c, &cause).await? {
            let mut payload = composite::summary(&c);
            payload["revision"] = revision.into();
            payload["cause"] = cause.clone();
            outbox::enqueue(tx, "sla.period_closed", &payload).await?;
            tell_verdict(tx, c.met(), was_met, &payload).await?;
            out.composites.push(ClosedComposite {
                composite: c,
                revision,
            });
        }
    }
    // Each result frozen now asks for its proof, in this transaction.
    let frozen: Vec<(&ObjectiveEvaluation, i32)> = out.objectives[objectives_before..]
        .iter()
        .map(|c| (&c.evaluation, c.revision))
        .collect();
    crate::proof_days::request_attestations(tx, sla, period, as_of, grace, &frozen).await?;
    if out.objectives.len() + out.composites.len() > frozen_before
        && sla.definition.credits.is_some()
    {
        // The period's credit, computed by compensation from the results
        // now in force; asked in this transaction, so a frozen result never
        // goes without its credit.
        credits::request(tx, sla.id, period.start).await?;
    }
    Ok(())
}

/// Why the results of `period` frozen now are frozen: its close (nothing
/// frozen before), the maintenance changes since its last revision, or
/// else its counts (late telemetry under `lateCorrections`, or a recount).
async fn revision_cause(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    period: Period,
) -> Result<serde_json::Value, EvaluatorError> {
    let Some(since) = evaluations::last_frozen_at(tx, sla.id, period.start).await? else {
        return Ok(serde_json::json!({ "kind": "close" }));
    };
    let changes = maintenance::changes_since(tx, sla.id, period, since).await?;
    Ok(if changes.is_empty() {
        serde_json::json!({
            "kind": "counts",
            "detail": "the period's counts changed since its last revision: late telemetry counted under lateCorrections, or a recount",
        })
    } else {
        serde_json::json!({ "kind": "maintenance", "changes": changes })
    })
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
        let from = at("2026-11-01T00:00:00Z");
        assert_eq!(
            due_periods(&window, from, at("2026-12-01T00:04:00Z"), grace),
            vec![]
        );
        let closed = due_periods(&window, from, at("2026-12-01T00:05:00Z"), grace);
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].start, at("2026-11-01T00:00:00Z"));
        assert_eq!(closed[0].end, at("2026-12-01T00:00:00Z"));
        let rolling = TimeWindow::rolling(slaproof_domain::Span::parse("7d").unwrap()).unwrap();
        assert_eq!(
            due_periods(&rolling, from, at("2026-12-01T00:05:00Z"), grace),
            vec![]
        );
    }

    #[test]
    fn every_due_period_is_closed_oldest_first_and_a_partly_covered_one_never() {
        let week = TimeWindow::Calendar {
            unit: CalendarUnit::Week,
            time_zone: chrono_tz::UTC,
        };
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        // Covered from a Wednesday: that week is not whole.
        let from = at("2026-11-04T00:00:00Z");
        // A grace of seven days: the week before the current one is not
        // due yet, the ones before it are.
        let due = due_periods(&week, from, at("2026-12-02T00:00:00Z"), Duration::days(7));
        let starts: Vec<_> = due.iter().map(|p| p.start).collect();
        assert_eq!(
            starts,
            vec![at("2026-11-09T00:00:00Z"), at("2026-11-16T00:00:00Z"),]
        );
    }
}
