//! Customers' own alert lines checked against each evaluation: a line
//! crossed tells `sla.threshold_crossed`, a line recovered tells
//! `sla.threshold_recovered`, each once (the state is kept on the threshold
//! row, in the evaluation's transaction), never at every round.
//!
//! The lines never touch the verdict: credits follow the contract's target.

use slaproof_store::thresholds::{self, Crossed};
use slaproof_store::{TenantTx, outbox};

use crate::error::EvaluatorError;
use crate::evaluate::ObjectiveEvaluation;
use crate::facts::summary;

/// Whether evaluation `e` is past each line of `lines`. A line that cannot
/// be judged (no events: no compliance and no budget to speak of) keeps
/// its previous state, so an idle minute is not a recovery.
pub(crate) fn crossed(
    e: &ObjectiveEvaluation,
    lines: &thresholds::Lines,
    previous: Crossed,
) -> Crossed {
    let compliance = match (lines.compliance_below_ppm, e.budget.tally.compliance_ppm()) {
        (None, _) => false,
        (Some(line), Some(now)) => now < line,
        (Some(_), None) => previous.compliance,
    };
    let budget = match (lines.budget_remaining_below_ppm, e.budget.remaining_ppm()) {
        (None, _) => false,
        (Some(line), Some(now)) => now < line,
        (Some(_), None) => previous.budget,
    };
    let burn = lines
        .burn_rate_above_milli
        .is_some_and(|line| e.burn_rate.milli() > line);
    Crossed {
        compliance,
        budget,
        burn,
    }
}

/// Checks every customer's lines on `e`'s objective and tells each change;
/// returns the number of outbox messages written.
#[tracing::instrument(skip_all, fields(objective = %e.objective))]
pub(crate) async fn record_threshold_crossings(
    tx: &mut TenantTx,
    e: &ObjectiveEvaluation,
) -> Result<usize, EvaluatorError> {
    let mut told = 0;
    for row in thresholds::of_objective(tx, e.sla, &e.objective).await? {
        let now = crossed(e, &row.lines, row.crossed);
        let checks = [
            (
                "compliance",
                row.lines.compliance_below_ppm.map(u64::from),
                e.budget.tally.compliance_ppm().map(u64::from),
                row.crossed.compliance,
                now.compliance,
            ),
            (
                "budget",
                row.lines.budget_remaining_below_ppm.map(u64::from),
                e.budget.remaining_ppm().map(u64::from),
                row.crossed.budget,
                now.budget,
            ),
            (
                "burn_rate",
                row.lines.burn_rate_above_milli,
                Some(e.burn_rate.milli()),
                row.crossed.burn,
                now.burn,
            ),
        ];
        for (line, at, value, was, is) in checks {
            let event_type = match (was, is) {
                (false, true) => "sla.threshold_crossed",
                (true, false) => "sla.threshold_recovered",
                _ => continue,
            };
            let mut payload = summary(e);
            payload["customer"] = row.customer.to_string().into();
            payload["threshold"] = line.into();
            payload["line"] = at.into();
            payload["value"] = value.into();
            outbox::enqueue(tx, event_type, &payload).await?;
            told += 1;
        }
        thresholds::set_crossed(tx, &row, now, e.as_of).await?;
    }
    Ok(told)
}
