//! The day-by-day tallies a frozen period result is proven over, and the
//! attestation each frozen result asks for — in the transaction that froze
//! it, so no result goes without one.
//!
//! Each day (of the window's time zone, cut to the period's bounds) is
//! counted exactly as the period was: [`crate::evaluate::counts_over`] for event and gauge
//! objectives, [`slice_tally`] for time slices, maintenance taken out the
//! same way. Slices divide a local day, so the days add up to the period;
//! the domain checks that they do ([`period_vector`]) and refuses the
//! vector otherwise.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::budget::Tally;
use slaproof_domain::minute::floor_minute;
use slaproof_domain::period_vector::{DayTally, period_vector};
use slaproof_domain::quantity::{Span, SpanUnit};
use slaproof_domain::slice_grid::SliceGrid;
use slaproof_domain::window::Period;
use slaproof_store::attestations::{self, NewAttestation};
use slaproof_store::{TenantTx, maintenance, outbox};

use crate::error::EvaluatorError;
use crate::evaluate::{ObjectiveEvaluation, counted_slices, counts_over, slice_tally};
use crate::tracked::TrackedSla;

/// The days of `[from, to)` in `sla`'s time zone: whole local days, the
/// first and last cut to the bounds.
pub(crate) fn days(sla: &TrackedSla, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<Period> {
    let day = Span::new(1, SpanUnit::Day).expect("one day is a span");
    let grid = SliceGrid::new(day, &sla.definition.window);
    let mut out = Vec::new();
    let mut at = from;
    while at < to {
        let end = grid.slice_containing(at).end.min(to);
        out.push(Period { start: at, end });
        at = end;
    }
    out
}

/// Each day's tally of each objective: [`counts_over`] for event and
/// gauge objectives (all the days summed in one statement: a close reads
/// a month of them), and for the time-slice objectives among `objectives`
/// [`slice_tally`], maintenance taken out the same way. Shared by a
/// period's vector and the daily measurements (`crate::measurements`), so
/// that a day is counted the same by both. `out[i]` is `days[i]`'s.
pub(crate) async fn days_tallies(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    windows: &[Period],
    days: &[Period],
    as_of: DateTime<Utc>,
    grace: Duration,
    objectives: &[&str],
) -> Result<Vec<HashMap<String, Tally>>, EvaluatorError> {
    let ranges: Vec<(DateTime<Utc>, DateTime<Utc>)> =
        days.iter().map(|d| (d.start, d.end)).collect();
    let counts = counts_over(tx, sla, windows, &ranges, as_of, grace).await?;
    let mut out = Vec::with_capacity(days.len());
    for (day, counts) in days.iter().zip(counts) {
        let mut tallies: HashMap<String, Tally> =
            counts.into_iter().map(|(o, c)| (o, c.tally)).collect();
        for name in objectives {
            let Some(objective) = sla.definition.objective(name) else {
                continue;
            };
            if let Some(sli) = counted_slices(objective) {
                let t = slice_tally(
                    tx, sla, name, sli, windows, day.start, day.end, as_of, grace,
                )
                .await?;
                tallies.insert((*name).to_owned(), t);
            }
        }
        out.push(tallies);
    }
    Ok(out)
}

/// Records the attestation of each result frozen by one close (`frozen`:
/// the evaluation frozen and its revision, all of `period`), with its
/// vector or why it has none, and tells the ones that cannot be proven.
pub(crate) async fn request_attestations(
    tx: &mut TenantTx,
    sla: &TrackedSla,
    period: Period,
    as_of: DateTime<Utc>,
    grace: Duration,
    frozen: &[(&ObjectiveEvaluation, i32)],
) -> Result<(), EvaluatorError> {
    if frozen.is_empty() {
        return Ok(());
    }
    // The bounds the period was evaluated over (`evaluate_period`).
    let from = floor_minute(period.start).max(sla.covers_from);
    let until = floor_minute(period.end.min(as_of));
    let windows = maintenance::periods(tx, sla.id, &sla.definition, from, as_of).await?;
    let names: Vec<&str> = frozen.iter().map(|(e, _)| e.objective.as_str()).collect();
    let all = days(sla, from, until);
    let tallies = days_tallies(tx, sla, &windows, &all, as_of, grace, &names).await?;
    let daily: Vec<(Period, HashMap<String, Tally>)> = all.into_iter().zip(tallies).collect();
    for &(e, revision) in frozen {
        let Some(objective) = sla.definition.objective(&e.objective) else {
            continue;
        };
        let days = daily
            .iter()
            .map(|(day, tallies)| {
                let t = tallies.get(&e.objective).copied().unwrap_or_default();
                DayTally {
                    day: day.start,
                    good: t.good,
                    total: t.total,
                }
            })
            .collect();
        let vector = period_vector(objective, e.budget.tally, days).map_err(|why| why.to_string());
        let id = attestations::request(
            tx,
            &NewAttestation {
                sla: e.sla,
                version: e.version,
                objective: e.objective.clone(),
                period_start: e.period.start,
                period_end: e.period.end,
                revision,
                vector: vector.clone(),
                anchor_path: sla.definition.attestation.anchor,
            },
        )
        .await?;
        if let (Some(id), Err(reason)) = (id, vector) {
            outbox::enqueue(
                tx,
                "attestation.failed",
                &serde_json::json!({
                    "attestation": id,
                    "sla": e.sla.to_string(),
                    "slaName": e.sla_name,
                    "version": e.version,
                    "objective": e.objective,
                    "periodStart": e.period.start,
                    "periodEnd": e.period.end,
                    "revision": revision,
                    "reason": reason,
                    "retrying": false,
                }),
            )
            .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn days_follow_the_windows_time_zone_and_are_cut_to_the_bounds() {
        // Covered by the close tests through a real database; the cutting
        // alone is checked here on Berlin's DST change.
        use super::*;
        use slaproof_domain::sla::SlaDefinition;
        let doc = "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {name: acme}\nspec:\n  service: chat\n  \
                   window: {calendar: month, timeZone: Europe/Berlin}\n  objectives:\n    \
                   - {name: a, target: 99%, ratio: {good: \"status < 500\"}}\n";
        let definition = SlaDefinition::from_document(doc).unwrap();
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let sla = TrackedSla {
            id: slaproof_domain::ids::SlaId::new(),
            name: "acme".into(),
            version: 1,
            definition,
            applied_at: at("2026-10-01T00:00:00Z"),
            covers_from: at("2026-10-01T00:00:00Z"),
            closing: None,
            judges_from: None,
            backfill: None,
            dormant_until: None,
        };
        // October in Berlin: 31 local days, the last 25 hours long.
        let d = days(&sla, at("2026-09-30T22:00:00Z"), at("2026-10-31T23:00:00Z"));
        assert_eq!(d.len(), 31);
        assert_eq!(d[0].start, at("2026-09-30T22:00:00Z"));
        assert_eq!(d[24].end, at("2026-10-25T23:00:00Z"));
        assert_eq!(d[24].end - d[24].start, Duration::hours(25));
        // Cut: from the middle of a day.
        let d = days(&sla, at("2026-10-05T10:30:00Z"), at("2026-10-07T00:00:00Z"));
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].end, at("2026-10-05T22:00:00Z"));
        assert_eq!(d[2].end, at("2026-10-07T00:00:00Z"));
    }
}
