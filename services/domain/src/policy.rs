//! The contract's rules around the objectives: how late telemetry may arrive, how maintenance is agreed, when a gateway should degrade, and how missing data counts.
//!
//! Every SLA carries a policy; a document that says nothing gets the
//! defaults below, which are what a customer would expect to sign. The
//! native document keeps it under `spec.policy` (only the parts that differ
//! from the defaults are written); OpenSLO documents carry it as the
//! annotation `slaproof.dev/policy`, a JSON object of the same shape.

use crate::quantity::{Span, SpanUnit};

/// An SLA's policy. `Default` is the policy of a document that gives none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlaPolicy {
    /// How long after a period ends its late telemetry still counts: the
    /// period closes (and its result is frozen) this long after its end.
    /// `None`: the platform's default (`evaluator.grace_secs`).
    pub late_grace: Option<Span>,
    /// Whether telemetry of a closed period arriving until the next period
    /// ends still counts, correcting the frozen result with a new revision
    /// (`lateCorrections: true`). Off: it is counted apart as late.
    pub late_corrections: bool,
    pub maintenance: MaintenancePolicy,
    pub degrade: DegradePolicy,
    pub no_data: NoDataPolicy,
    /// How long quality scores (gauge values) typically take to arrive
    /// after their request: a gauge objective's burn-rate lookbacks end
    /// this long before the evaluation, so that a 5-minute window is not
    /// judged on the few scores that came that fast.
    pub gauge_delay: Span,
    /// How long after a calendar period ends its verdict and credit may
    /// still be corrected by an agreement about its maintenance (a
    /// customer accepting a window): from then on the period is final.
    pub settlement: Span,
}

impl Default for SlaPolicy {
    fn default() -> Self {
        Self {
            late_grace: None,
            late_corrections: false,
            maintenance: MaintenancePolicy::default(),
            degrade: DegradePolicy::default(),
            no_data: NoDataPolicy::default(),
            gauge_delay: span(1, SpanUnit::Hour),
            settlement: span(45, SpanUnit::Day),
        }
    }
}

impl SlaPolicy {
    /// How long after its period's end an event of a calendar period still
    /// counts, given the SLA's late grace (`SlaDefinition::late_grace_or`):
    /// that grace, or with late corrections until the next period ends
    /// (`end_to_next_end`), whichever is longer.
    pub fn counts_until(
        &self,
        grace: chrono::Duration,
        end_to_next_end: chrono::Duration,
    ) -> chrono::Duration {
        if self.late_corrections {
            grace.max(end_to_next_end)
        } else {
            grace
        }
    }

    /// When a period ending at `end` becomes final ([`Self::settlement`]).
    pub fn final_at(&self, end: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
        end.checked_add_signed(self.settlement.chrono())
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
    }

    /// The late grace: the SLA's own, else `default` (the platform's).
    pub fn late_grace_or(&self, default: chrono::Duration) -> chrono::Duration {
        self.late_grace.map_or(default, Span::chrono)
    }
}

/// How planned maintenance is agreed.
///
/// The provider proposes windows; the customer's agreement is what
/// excludes them. It is given either once, in the SLA itself, as a
/// recurring `schedule` both parties signed (a window inside it, announced
/// with the notice, is excluded up to the cap), or per window, by the
/// customer accepting it. A window the provider announced and the customer
/// did not agree to counts against the provider, however early it was
/// announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaintenancePolicy {
    /// How far ahead of its start a scheduled window must be announced.
    pub notice: Span,
    /// The most scheduled maintenance a period may exclude; windows beyond
    /// it (in order of announcement) count against the provider. Required
    /// with a schedule; `None` only without one (it then bounds nothing).
    pub max_per_period: Option<Span>,
    /// When maintenance may be scheduled without asking, in the SLA's time
    /// zone (its calendar window's; UTC for a rolling window). Empty: every
    /// window needs the customer's acceptance.
    pub schedule: Vec<ScheduleSlot>,
}

impl Default for MaintenancePolicy {
    fn default() -> Self {
        Self {
            notice: span(72, SpanUnit::Hour),
            max_per_period: None,
            schedule: Vec::new(),
        }
    }
}

/// A recurring stretch of the week in which maintenance may be
/// scheduled: on each of `days`, from `from` to `to` local time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleSlot {
    /// The days of the week it recurs on, Monday first.
    pub days: [bool; 7],
    /// Minutes after local midnight it starts (0 to 1439).
    pub from_minute: u16,
    /// Minutes after local midnight it ends, after `from_minute`; 1440 is
    /// the next midnight.
    pub to_minute: u16,
}

impl std::fmt::Display for ScheduleSlot {
    /// `sat,sun 02:00-04:00`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}-{}",
            self.day_names().join(","),
            Self::clock(self.from_minute),
            Self::clock(self.to_minute)
        )
    }
}

impl ScheduleSlot {
    /// The days it recurs on, by their three-letter names, Monday first.
    pub fn day_names(&self) -> Vec<&'static str> {
        Self::DAYS
            .iter()
            .zip(self.days)
            .filter_map(|(name, on)| on.then_some(*name))
            .collect()
    }

    /// Three-letter day names, Monday first, as documents write them.
    pub const DAYS: [&'static str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

    /// `02:00` for a minute of the day (`24:00` for 1440).
    pub fn clock(minute: u16) -> String {
        format!("{:02}:{:02}", minute / 60, minute % 60)
    }

    /// The minute of the day `HH:MM` names (`24:00` is 1440).
    pub fn parse_clock(text: &str) -> Option<u16> {
        let (h, m) = text.split_once(':')?;
        if h.len() != 2 || m.len() != 2 {
            return None;
        }
        let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
        let minute = h.checked_mul(60)?.checked_add(m)?;
        (m < 60 && minute <= 1440).then_some(minute)
    }
}

/// When a provider's gateway should degrade, as the reference SLO policy
/// has it: level 1 (light: rate limits, cache protection on non-core APIs)
/// when the burn rate over the short lookback stays at or above
/// `light_burn_milli` for `light_evaluations` consecutive evaluations;
/// level 2 (full: circuit breakers, feature switches) when it reaches
/// `full_burn_milli` or the period's remaining budget falls to
/// `full_remaining_ppm` of it or less.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DegradePolicy {
    /// Burn rate in thousandths (2.0 = 2000).
    pub light_burn_milli: u64,
    /// Consecutive evaluated minutes at or above the light burn rate (rounds
    /// that evaluate one minute again count once).
    pub light_evaluations: u32,
    /// Burn rate in thousandths (5.0 = 5000).
    pub full_burn_milli: u64,
    /// Remaining share of the period's budget, in ppm (5% = 50000).
    pub full_remaining_ppm: u32,
}

impl Default for DegradePolicy {
    fn default() -> Self {
        Self {
            light_burn_milli: 2_000,
            light_evaluations: 3,
            full_burn_milli: 5_000,
            full_remaining_ppm: 50_000,
        }
    }
}

/// How missing data is detected and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoDataPolicy {
    /// No events for the SLA's service for this long, while the SLA is in
    /// force, is a no-data state (shown and told).
    pub after: Span,
    /// How a time slice without a counted event counts.
    pub slices: NoDataSlices,
}

impl Default for NoDataPolicy {
    fn default() -> Self {
        Self {
            after: span(15, SpanUnit::Minute),
            slices: NoDataSlices::Ignored,
        }
    }
}

/// How an empty time slice counts for a time-slice objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NoDataSlices {
    /// It weighs nothing (the mean is over the slices with data).
    #[default]
    Ignored,
    /// It is a bad slice: no data is no service.
    Bad,
    /// It is a good slice: nothing was asked, nothing failed.
    Good,
}

impl NoDataSlices {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ignored => "ignored",
            Self::Bad => "bad",
            Self::Good => "good",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ignored" => Some(Self::Ignored),
            "bad" => Some(Self::Bad),
            "good" => Some(Self::Good),
            _ => None,
        }
    }
}

const fn span(count: u32, unit: SpanUnit) -> Span {
    match Span::new_const(count, unit) {
        Some(s) => s,
        None => panic!("a policy default is a positive span"),
    }
}

/// Limits a document's policy must keep.
pub(crate) mod limits {
    /// Longest late grace: a quarter's period would otherwise stay open
    /// for most of the next one.
    pub(crate) const MAX_LATE_GRACE_SECS: u64 = 31 * 86_400;
    /// Longest notice a maintenance window may need.
    pub(crate) const MAX_NOTICE_SECS: u64 = 90 * 86_400;
    /// Longest no-data wait.
    pub(crate) const MAX_NO_DATA_SECS: u64 = 7 * 86_400;
    /// Shortest no-data wait: a minute is the rollup unit.
    pub(crate) const MIN_NO_DATA_SECS: u64 = 60;
    /// Most recurring slots a maintenance schedule may have.
    pub(crate) const MAX_SCHEDULE_SLOTS: usize = 28;
    /// Shortest and longest settlement horizon.
    pub(crate) const MIN_SETTLEMENT_SECS: u64 = 86_400;
    pub(crate) const MAX_SETTLEMENT_SECS: u64 = 400 * 86_400;
    /// Longest gauge delay.
    pub(crate) const MAX_GAUGE_DELAY_SECS: u64 = 7 * 86_400;
}
