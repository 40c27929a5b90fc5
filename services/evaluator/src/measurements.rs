//! Daily measurements fixed as a period goes: each local day of each
//! provable objective, once past the SLA's grace, is counted exactly as a
//! period's vector counts it ([`crate::proof_days::days_tallies`]) and
//! recorded, a new revision when its counts change later (late events, a
//! maintenance window). The attestation worker commits each and anchors it
//! with the next transparency-log head; a closed period is then proven
//! over those anchored days (`docs/TRANSPARENCY.md`).

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::period_vector::{DayTally, day_measurement};
use slaproof_domain::quantity::{Span, SpanUnit};
use slaproof_domain::slice_grid::SliceGrid;
use slaproof_domain::window::{Period, TimeWindow};
use slaproof_store::measurements::{self, NewMeasurement};
use slaproof_store::{TenantTx, maintenance};

use crate::error::{Doing, EvaluatorError};
use crate::proof_days::{days, days_tallies};
use crate::tracked::TrackedSla;

/// How far back days are measured: past a month, so that every day of a
/// monthly period is measured even after an outage of the evaluator of
/// some weeks (a day measured late says so by its `measured_at` and its
/// anchor's block).
pub const LOOKBACK_DAYS: i64 = 35;

/// Measures the days of `sla` that are past their grace and not measured,
/// or whose counts may have changed since; answers how many measurements
/// were recorded. `seen`: when the round's maintenance changes were
/// settled (`measurements::record_all`).
#[tracing::instrument(skip(tx, sla), fields(sla = %sla.name, version = sla.version))]
pub(crate) async fn measure_days(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    as_of: DateTime<Utc>,
    seen: DateTime<Utc>,
    grace: Duration,
) -> Result<usize, EvaluatorError> {
    let provable: Vec<&str> = sla
        .definition
        .objectives
        .iter()
        .filter(|o| {
            day_measurement(
                o,
                DayTally {
                    day: as_of,
                    good: 0,
                    total: 0,
                },
            )
            .is_ok()
        })
        .map(|o| o.name.as_str())
        .collect();
    if provable.is_empty() {
        return Ok(0);
    }
    // Only the days of periods this version can close: a rolling window
    // closes none, and a calendar one from its first whole period (as
    // `crate::facts::due_periods` does).
    let window = &sla.definition.window;
    if matches!(window, TimeWindow::Rolling { .. }) {
        return Ok(0);
    }
    let judged = sla
        .judges_from
        .map_or(sla.covers_from, |t| sla.covers_from.max(t));
    let mut first = window.period_containing(judged);
    if first.start < judged {
        first = window.next_period(&first);
    }
    let grid = SliceGrid::new(
        Span::new(1, SpanUnit::Day).expect("one day is a span"),
        &sla.definition.window,
    );
    // Whole local days ended at least the SLA's grace ago.
    let mut until = grid.slice_containing(as_of - sla.grace(grace)).start;
    let mut from = grid
        .slice_containing(as_of - Duration::days(LOOKBACK_DAYS))
        .start
        .max(first.start);
    if let Some(closing) = sla.closing {
        from = from.max(closing.start);
        until = until.min(closing.end);
    }
    if from >= until {
        return Ok(0);
    }
    let all: Vec<Period> = days(sla, from, until);
    let bounds: Vec<(DateTime<Utc>, DateTime<Utc>)> =
        all.iter().map(|d| (d.start, d.end)).collect();
    let stale = measurements::stale_days(tx, sla.id, sla.version, &bounds).await?;
    if stale.is_empty() {
        return Ok(0);
    }
    let windows = maintenance::periods(tx, sla.id, &sla.definition, from, as_of).await?;
    let stale_days: Vec<Period> = all
        .into_iter()
        .filter(|d| stale.contains(&d.start))
        .collect();
    let tallies = days_tallies(tx, sla, &windows, &stale_days, as_of, grace, &provable).await?;
    let mut measured = Vec::new();
    for (day, tallies) in stale_days.into_iter().zip(tallies) {
        for name in &provable {
            let Some(objective) = sla.definition.objective(name) else {
                continue;
            };
            let t = tallies.get(*name).copied().unwrap_or_default();
            let m = match day_measurement(
                objective,
                DayTally {
                    day: day.start,
                    good: t.good,
                    total: t.total,
                },
            ) {
                Ok(m) => m,
                Err(why) => {
                    // Past a slot's 2^40, or inconsistent: the period will
                    // say it is not provable; nothing to commit.
                    tracing::warn!(objective = name, day = %day.start, %why, "a day is not measured");
                    continue;
                }
            };
            measured.push((*name, day, m));
        }
    }
    // One write for all the days: a catch-up measures a month of them.
    let new: Vec<NewMeasurement> = measured
        .iter()
        .map(|(name, day, m)| NewMeasurement {
            objective: name,
            day_start: day.start,
            day_end: day.end,
            field: &m.field,
            unit: &m.unit,
            threshold: m.threshold,
            good: m.good,
            bad: m.bad,
        })
        .collect();
    measurements::record_all(tx, sla.id, sla.version, as_of, seen, &new)
        .await
        .doing("recording daily measurements")
}
