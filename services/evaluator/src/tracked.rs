//! What the evaluator tracks of each SLA version, and the counts it keeps of it: minute counts and recounts.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::budget::Tally;
use slaproof_domain::burn::BurnRateAlertRule;
use slaproof_domain::ids::SlaId;
use slaproof_domain::minute::{Arrival, floor_minute};
use slaproof_domain::objective::{EventVerdict, Objective};
use slaproof_domain::sla::SlaDefinition;
use slaproof_domain::window::Period;

use crate::events::ReadEvent;

/// An SLA version the evaluator keeps rollups for.
#[derive(Debug, Clone)]
pub struct TrackedSla {
    pub id: SlaId,
    pub name: String,
    pub version: i32,
    pub definition: SlaDefinition,
    /// When this version was applied.
    pub applied_at: DateTime<Utc>,
    /// Its rollups count every event that occurred at or after this instant.
    pub covers_from: DateTime<Utc>,
    /// `Some(period)` for an earlier version kept only to judge the last
    /// period it was in force for (a period is judged by the terms in force
    /// at its start): it is rolled up — so events folded in during the
    /// grace count — and closes that period, but is not evaluated
    /// otherwise. Kept while that period can still be corrected.
    pub closing: Option<Period>,
    /// When it took effect (see [`crate::versions`]): it judges the
    /// periods from then on, earlier ones being earlier versions'. `None`
    /// for the first version, which judges from its coverage.
    pub judges_from: Option<DateTime<Utc>>,
    /// `Some` while the version is still learning the events received
    /// before it was first seen (see [`crate::rollup`]): rolled up, but
    /// neither evaluated nor closing periods until the backfill is done.
    pub backfill: Option<Backfill>,
    /// `Some(t)` for the newest version while it waits for the period
    /// in which it was applied to end: rolled up, so that it has its data
    /// at `t`, but neither evaluated nor closing anything yet.
    pub dormant_until: Option<DateTime<Utc>>,
}

/// Which tracked SLAs may measure an event, found by its service and
/// customer instead of asking every SLA: a provider has thousands of
/// customer SLAs on one service, and each event concerns the service's
/// service-wide SLAs and its own customer's only. [`TrackedSla::scopes`]
/// still decides (coverage, and the same rule again); this only narrows
/// whom to ask.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    /// service → indexes of its service-wide SLAs.
    service: HashMap<String, Vec<usize>>,
    /// service → customer → indexes of that customer's SLAs on it (nested,
    /// so an event's borrowed names look it up without allocating).
    customer: HashMap<String, HashMap<String, Vec<usize>>>,
}

impl Routes {
    pub(crate) fn new(tracked: &[TrackedSla]) -> Self {
        let mut routes = Self::default();
        for (i, sla) in tracked.iter().enumerate() {
            let service = sla.definition.service.clone();
            match sla.definition.measured_customer() {
                Some(customer) => routes
                    .customer
                    .entry(service)
                    .or_default()
                    .entry(customer.to_owned())
                    .or_default()
                    .push(i),
                None => routes.service.entry(service).or_default().push(i),
            }
        }
        routes
    }

    /// The indexes of the SLAs that may measure `event`, in no set order.
    pub(crate) fn candidates<'a>(&'a self, event: &ReadEvent) -> impl Iterator<Item = usize> + 'a {
        let service = event.fields.service.as_deref().unwrap_or_default();
        let wide = self.service.get(service).map(Vec::as_slice);
        let own = event.customer.as_deref().and_then(|customer| {
            self.customer
                .get(service)
                .and_then(|by_customer| by_customer.get(customer))
                .map(Vec::as_slice)
        });
        wide.unwrap_or_default()
            .iter()
            .chain(own.unwrap_or_default())
            .copied()
    }
}

/// Where a version's backfill stands: events received before `before`,
/// read in `(occurred_at, id)` order from after `cursor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backfill {
    pub before: DateTime<Utc>,
    pub cursor: Option<(DateTime<Utc>, uuid::Uuid)>,
}

impl TrackedSla {
    /// Whether this SLA measures the event at all: its service (and its
    /// customer, for a customer-scoped SLA), and inside the stretch its
    /// rollups cover.
    pub fn scopes(&self, event: &ReadEvent) -> bool {
        event.occurred_at >= self.covers_from
            && self
                .definition
                .measures(event.fields.service.as_deref(), event.customer.as_deref())
    }

    /// How long after a period's end its late telemetry counts (and the
    /// period closes): the SLA's `policy.lateGrace`, else `default` (the
    /// platform's `evaluator.grace_secs`).
    pub fn grace(&self, default: Duration) -> Duration {
        self.definition.late_grace_or(default)
    }

    /// When an event (or value) arrived, judged against the close of its
    /// period under this SLA's window and grace (`default` when the SLA
    /// sets none).
    pub fn arrival(
        &self,
        occurred_at: DateTime<Utc>,
        received_at: DateTime<Utc>,
        default: Duration,
    ) -> Arrival {
        self.definition.arrival(occurred_at, received_at, default)
    }

    /// The objectives that have rollups: all of them (events classify as
    /// not counted for gauges, whose rollups hold the values attributed by
    /// [`crate::gauge`]).
    pub fn counted_objectives(&self) -> impl Iterator<Item = &Objective> {
        self.definition.objectives.iter()
    }
}

/// The longest lookback the window's alert rules read (at least an hour,
/// for the last-hour burn rate): 3 days for a 30-day window, 36.5 days for
/// a year (see [`BurnRateAlertRule::workbook`]).
pub(crate) fn longest_lookback(definition: &SlaDefinition) -> Duration {
    BurnRateAlertRule::workbook(definition.window.nominal_duration())
        .iter()
        .map(|r| r.long_window)
        .fold(Duration::hours(1), Duration::max)
}

/// Where the rollups of a newly seen version begin: the start of the
/// current period, or the longest alert lookback if that is earlier, so
/// that alerts work at once.
pub(crate) fn coverage_start(definition: &SlaDefinition, as_of: DateTime<Utc>) -> DateTime<Utc> {
    let period = definition.window.period_containing(as_of);
    floor_minute(period.start.min(as_of - longest_lookback(definition)))
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
