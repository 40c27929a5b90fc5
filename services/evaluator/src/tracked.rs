//! What the evaluator tracks of each SLA version, and the counts it keeps of it: minute counts and recounts.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::budget::Tally;
use slaproof_domain::ids::SlaId;
use slaproof_domain::minute::{Arrival, floor_minute};
use slaproof_domain::objective::{EventVerdict, Objective};
use slaproof_domain::sla::SlaDefinition;
use slaproof_domain::window::Period;

use crate::events::ReadEvent;

/// The longest alert lookback (the workbook's 3 days): rollups of a new
/// version reach back at least this far so that alerts work at once.
pub(crate) const LONGEST_LOOKBACK_DAYS: i64 = 3;

/// An SLA version the evaluator keeps rollups for.
#[derive(Debug, Clone)]
pub struct TrackedSla {
    pub id: SlaId,
    pub name: String,
    pub version: i32,
    pub definition: SlaDefinition,
    /// Its rollups count every event that occurred at or after this instant.
    pub covers_from: DateTime<Utc>,
    /// `Some(period)` for an earlier version kept only to judge the last
    /// period that ended while it was in force (a period is judged by the
    /// terms in force at its end): it is rolled up — so events folded in
    /// during the grace count — and closes that period, but is not
    /// evaluated otherwise. Kept while that period can still be corrected.
    pub closing: Option<Period>,
    /// For the version in force: the period it leaves to the earlier
    /// version that was in force at that period's end, never closing it.
    pub hands_over: Option<Period>,
}

impl TrackedSla {
    /// Whether this SLA measures the event at all: its service, and inside
    /// the stretch its rollups cover.
    pub fn scopes(&self, event: &ReadEvent) -> bool {
        event.occurred_at >= self.covers_from
            && event.fields.service.as_deref() == Some(self.definition.service.as_str())
    }

    /// The objectives that have rollups: all of them (events classify as
    /// not counted for gauges, whose rollups hold the values attributed by
    /// [`crate::gauge`]).
    pub fn counted_objectives(&self) -> impl Iterator<Item = &Objective> {
        self.definition.objectives.iter()
    }
}

/// Where the rollups of a newly seen version begin: the start of the
/// current period, or the longest alert lookback if that is earlier.
pub(crate) fn coverage_start(definition: &SlaDefinition, as_of: DateTime<Utc>) -> DateTime<Utc> {
    let period = definition.window.period_containing(as_of);
    floor_minute(
        period
            .start
            .min(as_of - Duration::days(LONGEST_LOOKBACK_DAYS)),
    )
}

/// One minute of one objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MinuteCounts {
    pub good: u64,
    pub total: u64,
    pub late_folded: u64,
    pub late_good: u64,
    pub late_total: u64,
}

impl MinuteCounts {
    /// Adds one classified event.
    pub fn add(&mut self, verdict: EventVerdict, arrival: Arrival) {
        let good = u64::from(verdict == EventVerdict::Good);
        match arrival {
            Arrival::OnTime => {}
            Arrival::LateFolded => self.late_folded += 1,
            Arrival::Late => {
                self.late_good += good;
                self.late_total += 1;
                return;
            }
        }
        self.good += good;
        self.total += 1;
    }

    /// Adds another row's counts.
    pub fn merge(&mut self, other: MinuteCounts) {
        self.good += other.good;
        self.total += other.total;
        self.late_folded += other.late_folded;
        self.late_good += other.late_good;
        self.late_total += other.late_total;
    }
}

/// An objective's counts over a stretch, recounted from raw events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recount {
    /// Counted events, maintenance left out.
    pub tally: Tally,
    /// Events left out by maintenance.
    pub excluded: Tally,
    /// Events folded in after their minute, within the grace period
    /// (during maintenance or not).
    pub late_folded: u64,
    /// Events after the grace period (during maintenance or not).
    pub late: Tally,
}
