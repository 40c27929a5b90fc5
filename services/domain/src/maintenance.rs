//! Maintenance windows and the rules of their agreement: which parts of them an SLA's measurement leaves out.
//!
//! Maintenance is excluded only with the customer's agreement. The
//! provider announces windows; the customer agrees either once, in the
//! SLA, to a recurring schedule ([`MaintenancePolicy::schedule`]), or to
//! one window, by accepting it. For an SLA a window is:
//!
//! - *planned* when it lies wholly inside the schedule and was announced
//!   at least the SLA's notice ([`MaintenancePolicy::notice`]) before it
//!   starts: excluded up to the SLA's cap per period
//!   ([`MaintenancePolicy::max_per_period`]), windows taken in order of
//!   announcement, and *beyond the cap* for what the cap leaves out;
//! - *proposed* when announced with the notice but not inside the
//!   schedule, and an *emergency* when announced later (or after it
//!   started): either counts against the provider unless the customer
//!   accepts it;
//! - *accepted* by the customer: excluded whole, outside the cap.
//!
//! A provider alone can therefore exclude no more than the schedule and
//! cap the customer signed. [`judge`] applies these rules; it is the one
//! place they are written.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeDelta, Utc};
use chrono_tz::Tz;

use crate::policy::{MaintenancePolicy, ScheduleSlot};
use crate::quantity::Span;
use crate::window::{Period, TimeWindow, local_instant, merge_periods};

/// Why a maintenance window is refused, naming the field as the API does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaintenanceWindowError {
    #[error("ends_at: must be after starts_at")]
    EndNotAfterStart,
    #[error("ends_at: a window may last at most {max_days} days")]
    TooLong { max_days: i64 },
    #[error("description: must be 1-{max} characters")]
    Description { max: usize },
}

impl MaintenanceWindowError {
    /// The field that is wrong.
    pub fn field(&self) -> &'static str {
        match self {
            Self::EndNotAfterStart | Self::TooLong { .. } => "ends_at",
            Self::Description { .. } => "description",
        }
    }

    /// What is wrong with it.
    pub fn rule(&self) -> String {
        let text = self.to_string();
        let prefix = format!("{}: ", self.field());
        text.strip_prefix(&prefix).unwrap_or(&text).to_owned()
    }
}

/// A stretch of time during which the SLA is not measured: events in it
/// count neither as good nor as total, and time slices in it weigh nothing.
///
/// At most [`MaintenanceWindow::MAX_DAYS`] long: a longer "maintenance" is
/// an outage being hidden, or a suspension of the SLA, which the contract
/// should state, not a window in the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaintenanceWindow {
    starts_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    description: String,
}

impl MaintenanceWindow {
    /// The longest window accepted.
    pub const MAX_DAYS: i64 = 7;
    /// The longest description accepted, in characters.
    pub const MAX_DESCRIPTION: usize = 1000;

    /// A window `[starts_at, ends_at)` with what is being done (trimmed),
    /// refusing an end not after the start, windows longer than
    /// [`Self::MAX_DAYS`] and an empty or overlong description.
    pub fn new(
        starts_at: DateTime<Utc>,
        ends_at: DateTime<Utc>,
        description: &str,
    ) -> Result<Self, MaintenanceWindowError> {
        if ends_at <= starts_at {
            return Err(MaintenanceWindowError::EndNotAfterStart);
        }
        if ends_at - starts_at > Duration::days(Self::MAX_DAYS) {
            return Err(MaintenanceWindowError::TooLong {
                max_days: Self::MAX_DAYS,
            });
        }
        let description = description.trim();
        if description.is_empty() || description.chars().count() > Self::MAX_DESCRIPTION {
            return Err(MaintenanceWindowError::Description {
                max: Self::MAX_DESCRIPTION,
            });
        }
        Ok(Self {
            starts_at,
            ends_at,
            description: description.to_owned(),
        })
    }

    /// First instant of maintenance.
    pub fn starts_at(&self) -> DateTime<Utc> {
        self.starts_at
    }

    /// First instant after maintenance.
    pub fn ends_at(&self) -> DateTime<Utc> {
        self.ends_at
    }

    /// What is being done, for the customer's dashboard.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The window as a period.
    pub fn period(&self) -> Period {
        Period {
            start: self.starts_at,
            end: self.ends_at,
        }
    }
}

/// How a maintenance window stands for one SLA: whether, and how much of
/// it, the SLA's measurement leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Standing {
    /// Inside the SLA's schedule, announced with its notice and wholly
    /// within its cap: excluded.
    Planned,
    /// Inside the schedule with the notice, but beyond the cap per period
    /// in part or whole: what is beyond counts against the provider unless
    /// the customer accepts it.
    BeyondCap,
    /// Announced with the notice but not inside the SLA's schedule (or the
    /// SLA has none): counts against the provider unless the customer
    /// accepts it.
    Proposed,
    /// Announced with less than the notice, or once it had started: counts
    /// against the provider unless the customer accepts it.
    Emergency,
    /// Accepted by the SLA's customer: excluded whole, outside the cap.
    Accepted,
    /// Cancelled: excludes nothing.
    Cancelled,
}

impl Standing {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Planned => "planned",
            Self::BeyondCap => "beyond_cap",
            Self::Proposed => "proposed",
            Self::Emergency => "emergency",
            Self::Accepted => "accepted",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the customer may accept the window: some of its time still
    /// counts against the provider.
    pub const fn acceptable(self) -> bool {
        matches!(self, Self::Proposed | Self::Emergency | Self::BeyondCap)
    }
}

impl std::fmt::Display for Standing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A window as announced, with what [`judge`] needs to know of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announced<K> {
    /// What the caller knows the window by (its id).
    pub key: K,
    pub period: Period,
    pub announced_at: DateTime<Utc>,
    /// Accepted by the customer of the SLA being judged.
    pub accepted: bool,
    pub cancelled: bool,
}

/// A window judged for one SLA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged<K> {
    pub key: K,
    pub standing: Standing,
    /// What the SLA's measurement leaves out on this window's account
    /// (disjoint, sorted): all of it when accepted or planned without a
    /// cap, nothing when an emergency or cancelled, and under a cap the
    /// parts it was granted (time another window already excluded is not
    /// charged twice). [`excluded_periods`] merges them.
    pub excluded: Vec<Period>,
}

/// Whether a window starting at `starts_at`, announced at `announced_at`,
/// had the notice `policy` asks for (a window announced once it had
/// started never has).
pub fn has_notice(
    policy: &MaintenancePolicy,
    starts_at: DateTime<Utc>,
    announced_at: DateTime<Utc>,
) -> bool {
    starts_at - announced_at >= span_duration(policy.notice)
}

fn span_duration(span: Span) -> Duration {
    i64::try_from(span.seconds())
        .ok()
        .and_then(TimeDelta::try_seconds)
        .unwrap_or(TimeDelta::MAX)
}

/// Whether every instant of `period` lies in an occurrence of `schedule`
/// read in `zone` (occurrences that meet, such as 22:00–24:00 and the next
/// day's 00:00–02:00, are one stretch).
pub fn within_schedule(schedule: &[ScheduleSlot], zone: Tz, period: Period) -> bool {
    let mut at = period.start;
    while at < period.end {
        match occurrence_end(schedule, zone, at) {
            Some(end) if end > at => at = end,
            _ => return false,
        }
    }
    true
}

/// The latest end of the occurrences of `schedule` that contain `at`. An
/// occurrence lies within its local day, so only `at`'s day is looked at.
fn occurrence_end(schedule: &[ScheduleSlot], zone: Tz, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let day = at.with_timezone(&zone).date_naive();
    let weekday = day.weekday().num_days_from_monday() as usize;
    schedule
        .iter()
        .filter(|slot| slot.days[weekday])
        .filter_map(|slot| {
            let start = clock_on(zone, day, slot.from_minute)?;
            let end = clock_on(zone, day, slot.to_minute)?;
            (start <= at && at < end).then_some(end)
        })
        .max()
}

/// The instant `minute` minutes after local midnight of `day` names on
/// the wall clock (1440: the next midnight).
fn clock_on(zone: Tz, day: NaiveDate, minute: u16) -> Option<DateTime<Utc>> {
    let (day, minute) = if minute >= 1440 {
        (day.succ_opt()?, minute - 1440)
    } else {
        (day, minute)
    };
    let local = day.and_hms_opt(u32::from(minute / 60), u32::from(minute % 60), 0)?;
    Some(local_instant(zone, local))
}

/// The zone an SLA's schedule is read in: its calendar window's, UTC for
/// a rolling window.
fn schedule_zone(window: &TimeWindow) -> Tz {
    match *window {
        TimeWindow::Calendar { time_zone, .. } => time_zone,
        TimeWindow::Rolling { .. } => chrono_tz::UTC,
    }
}

/// The period containing `at` that the cap per period counts in: the SLA's
/// calendar period or, for a rolling window (which has no periods of its
/// own), consecutive stretches of its length from the Unix epoch.
pub fn cap_period(window: &TimeWindow, at: DateTime<Utc>) -> Period {
    match *window {
        TimeWindow::Calendar { .. } => window.period_containing(at),
        TimeWindow::Rolling { duration } => {
            let length = i64::try_from(duration.seconds()).unwrap_or(1).max(1);
            let start = DateTime::from_timestamp(at.timestamp().div_euclid(length) * length, 0)
                .unwrap_or(at);
            let end = TimeDelta::try_seconds(length)
                .and_then(|d| start.checked_add_signed(d))
                .unwrap_or(DateTime::<Utc>::MAX_UTC);
            Period { start, end }
        }
    }
}

/// The stretch whose windows [`judge`] must see to judge every window
/// overlapping `[from, to)` for an SLA with `policy` over `window`: those
/// windows themselves, and under a cap every cap period they can reach
/// (a window lasts at most [`MaintenanceWindow::MAX_DAYS`]).
pub fn judged_span(
    policy: &MaintenancePolicy,
    window: &TimeWindow,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Period {
    if policy.max_per_period.is_none() {
        return Period {
            start: from,
            end: to,
        };
    }
    let reach = Duration::days(MaintenanceWindow::MAX_DAYS);
    Period {
        start: cap_period(window, from - reach).start.min(from),
        end: cap_period(window, to + reach).end.max(to),
    }
}

/// Judges windows for one SLA with `policy` over `window` (see the module
/// documentation): each window's standing and what it excludes. Under a
/// cap, `windows` must hold every window overlapping the cap periods of
/// those to judge ([`judged_span`]); ties in announcement go to the
/// earlier in `windows`.
pub fn judge<K: Clone>(
    windows: &[Announced<K>],
    policy: &MaintenancePolicy,
    window: &TimeWindow,
) -> Vec<Judged<K>> {
    let zone = schedule_zone(window);
    let mut judged: Vec<Judged<K>> = windows
        .iter()
        .map(|w| {
            let standing = if w.cancelled {
                Standing::Cancelled
            } else if w.accepted {
                Standing::Accepted
            } else if !has_notice(policy, w.period.start, w.announced_at) {
                Standing::Emergency
            } else if within_schedule(&policy.schedule, zone, w.period) {
                Standing::Planned
            } else {
                Standing::Proposed
            };
            let excluded = match standing {
                Standing::Accepted | Standing::Planned => vec![w.period],
                _ => Vec::new(),
            };
            Judged {
                key: w.key.clone(),
                standing,
                excluded,
            }
        })
        .collect();
    let Some(cap) = policy.max_per_period.map(span_duration) else {
        return judged;
    };
    // Per cap period (by its start): the time excluded so far, and how
    // much of the cap planned windows used. Accepted time is excluded
    // whatever the cap, so planned time under it costs nothing.
    let mut spent: BTreeMap<DateTime<Utc>, (Vec<Period>, Duration)> = BTreeMap::new();
    for (w, j) in windows.iter().zip(&judged) {
        if j.standing == Standing::Accepted {
            for piece in pieces(w.period, window) {
                let key = cap_period(window, piece.start).start;
                let (covered, _) = spent.entry(key).or_insert((Vec::new(), Duration::zero()));
                covered.push(piece);
                *covered = merge_periods(std::mem::take(covered));
            }
        }
    }
    let mut order: Vec<usize> = (0..windows.len())
        .filter(|&i| judged[i].standing == Standing::Planned)
        .collect();
    order.sort_by_key(|&i| (windows[i].announced_at, i));
    for i in order {
        let mut granted = Vec::new();
        for piece in pieces(windows[i].period, window) {
            let key = cap_period(window, piece.start).start;
            let (covered, used) = spent.entry(key).or_insert((Vec::new(), Duration::zero()));
            for gap in uncovered(piece, covered) {
                let left = cap - *used;
                if left <= Duration::zero() {
                    break;
                }
                let take = gap.duration().min(left);
                granted.push(Period {
                    start: gap.start,
                    end: gap.start + take,
                });
                *used += take;
            }
            covered.extend(
                granted
                    .iter()
                    .filter(|g| piece.intersection(g).is_some())
                    .copied(),
            );
            *covered = merge_periods(std::mem::take(covered));
        }
        judged[i].excluded = merge_periods(granted);
    }
    // Beyond the cap: a planned window some of whose time nothing excludes.
    let all = excluded_periods(&judged);
    for (w, j) in windows.iter().zip(judged.iter_mut()) {
        if j.standing == Standing::Planned && !uncovered(w.period, &all).is_empty() {
            j.standing = Standing::BeyondCap;
        }
    }
    judged
}

/// The time an SLA's measurement leaves out: the excluded parts of every
/// judged window, merged into disjoint, sorted periods.
pub fn excluded_periods<K>(judged: &[Judged<K>]) -> Vec<Period> {
    merge_periods(
        judged
            .iter()
            .flat_map(|j| j.excluded.iter().copied())
            .collect(),
    )
}

/// `period` cut where cap periods begin.
fn pieces(period: Period, window: &TimeWindow) -> Vec<Period> {
    let mut out = Vec::new();
    let mut start = period.start;
    while start < period.end {
        let end = cap_period(window, start).end.min(period.end);
        // A cap period always ends after an instant it contains; should it
        // not, the rest is one piece rather than a loop without end.
        let end = if end > start { end } else { period.end };
        out.push(Period { start, end });
        start = end;
    }
    out
}

/// The parts of `period` outside the disjoint, sorted `covered`.
fn uncovered(period: Period, covered: &[Period]) -> Vec<Period> {
    let mut out = Vec::new();
    let mut at = period.start;
    for c in covered {
        if c.end <= at {
            continue;
        }
        if c.start >= period.end {
            break;
        }
        if c.start > at {
            out.push(Period {
                start: at,
                end: c.start,
            });
        }
        at = c.end;
        if at >= period.end {
            break;
        }
    }
    if at < period.end {
        out.push(Period {
            start: at,
            end: period.end,
        });
    }
    out
}

#[cfg(test)]
mod tests;
