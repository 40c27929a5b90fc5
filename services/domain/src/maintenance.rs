//! Maintenance windows and the rules of their agreement: which parts of them an SLA's measurement leaves out.
//!
//! Planned maintenance is agreed ahead. A window counts as *planned* for an
//! SLA when it was announced at least the SLA's notice
//! ([`MaintenancePolicy::notice`]) before it starts; planned windows are
//! excluded from the SLA's measurement up to the SLA's cap per period
//! ([`MaintenancePolicy::max_per_period`]), taken in order of announcement.
//! A window announced later (or after it started) is an *emergency*
//! window: it counts against the provider unless the SLA's customer
//! accepts it, and an accepted window is excluded whole, outside the cap.
//! [`judge`] applies these rules; it is the one place they are written.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, TimeDelta, Utc};

use crate::policy::MaintenancePolicy;
use crate::quantity::Span;
use crate::window::{Period, TimeWindow, merge_periods};

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
    /// Announced with the SLA's notice and wholly within its cap: excluded.
    Planned,
    /// Announced with the notice, but beyond the cap per period in part or
    /// whole: what is beyond counts against the provider.
    BeyondCap,
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
            Self::Emergency => "emergency",
            Self::Accepted => "accepted",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the customer may accept the window: some of its time still
    /// counts against the provider.
    pub const fn acceptable(self) -> bool {
        matches!(self, Self::Emergency | Self::BeyondCap)
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
    let mut judged: Vec<Judged<K>> = windows
        .iter()
        .map(|w| {
            let standing = if w.cancelled {
                Standing::Cancelled
            } else if w.accepted {
                Standing::Accepted
            } else if has_notice(policy, w.period.start, w.announced_at) {
                Standing::Planned
            } else {
                Standing::Emergency
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
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn refuses_bad_windows_naming_the_field() {
        let t = utc("2024-01-01T00:00:00Z");
        let refused = |a, b, d: &str| MaintenanceWindow::new(a, b, d).unwrap_err();
        assert_eq!(refused(t, t, "x"), MaintenanceWindowError::EndNotAfterStart);
        assert_eq!(refused(t, t - Duration::hours(1), "x").field(), "ends_at");
        let long = refused(t, t + Duration::days(7) + Duration::seconds(1), "x");
        assert_eq!(long.field(), "ends_at");
        assert_eq!(long.rule(), "a window may last at most 7 days");
        assert_eq!(
            refused(t, t + Duration::hours(1), "  ").to_string(),
            "description: must be 1-1000 characters"
        );
        assert!(MaintenanceWindow::new(t, t + Duration::hours(1), &"é".repeat(1001)).is_err());
        let ok = MaintenanceWindow::new(t, t + Duration::days(7), " db upgrade ").unwrap();
        assert_eq!(ok.description(), "db upgrade");
        assert_eq!(ok.period().duration(), Duration::days(7));
    }

    fn capped(hours: u32) -> MaintenancePolicy {
        MaintenancePolicy {
            notice: Span::new(72, crate::quantity::SpanUnit::Hour).unwrap(),
            max_per_period: (hours > 0)
                .then(|| Span::new(hours * 60, crate::quantity::SpanUnit::Minute).unwrap()),
        }
    }

    fn month() -> TimeWindow {
        TimeWindow::Calendar {
            unit: crate::window::CalendarUnit::Month,
            time_zone: chrono_tz::UTC,
        }
    }

    fn window(key: u32, start: &str, end: &str, announced: &str) -> Announced<u32> {
        Announced {
            key,
            period: Period {
                start: utc(start),
                end: utc(end),
            },
            announced_at: utc(announced),
            accepted: false,
            cancelled: false,
        }
    }

    fn period(start: &str, end: &str) -> Period {
        Period {
            start: utc(start),
            end: utc(end),
        }
    }

    #[test]
    fn notice_makes_a_window_planned_and_its_lack_an_emergency() {
        let policy = capped(0);
        let start = "2026-11-10T10:00:00Z";
        let windows = [
            // Exactly 72 hours ahead: planned.
            window(1, start, "2026-11-10T11:00:00Z", "2026-11-07T10:00:00Z"),
            // A second short: an emergency.
            window(2, start, "2026-11-10T11:00:00Z", "2026-11-07T10:00:01Z"),
            // Announced once it had started (retroactive): an emergency.
            window(3, start, "2026-11-10T11:00:00Z", "2026-11-12T00:00:00Z"),
        ];
        let judged = judge(&windows, &policy, &month());
        let standings: Vec<_> = judged.iter().map(|j| j.standing).collect();
        assert_eq!(
            standings,
            [Standing::Planned, Standing::Emergency, Standing::Emergency]
        );
        assert_eq!(judged[0].excluded, [windows[0].period]);
        assert!(judged[1].excluded.is_empty() && judged[2].excluded.is_empty());
        assert_eq!(excluded_periods(&judged), [windows[0].period]);
        assert!(Standing::Emergency.acceptable() && !Standing::Planned.acceptable());
    }

    #[test]
    fn an_accepted_emergency_is_excluded_whole_and_a_cancelled_window_not_at_all() {
        let mut accepted = window(
            1,
            "2026-11-10T10:00:00Z",
            "2026-11-10T12:00:00Z",
            "2026-11-12T00:00:00Z",
        );
        accepted.accepted = true;
        let mut cancelled = window(
            2,
            "2026-11-20T10:00:00Z",
            "2026-11-20T12:00:00Z",
            "2026-11-01T00:00:00Z",
        );
        cancelled.cancelled = true;
        // A one-hour cap does not bound what the customer accepted.
        let judged = judge(&[accepted.clone(), cancelled], &capped(1), &month());
        assert_eq!(judged[0].standing, Standing::Accepted);
        assert_eq!(judged[1].standing, Standing::Cancelled);
        assert_eq!(excluded_periods(&judged), [accepted.period]);
    }

    #[test]
    fn the_cap_goes_to_windows_in_order_of_announcement_each_from_its_start() {
        // Announced second but earlier in time: gets what the first left.
        let windows = [
            window(
                1,
                "2026-11-20T10:00:00Z",
                "2026-11-20T11:00:00Z",
                "2026-11-01T00:00:00Z",
            ),
            window(
                2,
                "2026-11-10T10:00:00Z",
                "2026-11-10T11:00:00Z",
                "2026-11-02T00:00:00Z",
            ),
        ];
        let policy = MaintenancePolicy {
            max_per_period: Some(Span::new(90, crate::quantity::SpanUnit::Minute).unwrap()),
            ..capped(0)
        };
        let judged = judge(&windows, &policy, &month());
        assert_eq!(judged[0].standing, Standing::Planned);
        assert_eq!(judged[1].standing, Standing::BeyondCap);
        assert_eq!(
            judged[1].excluded,
            [period("2026-11-10T10:00:00Z", "2026-11-10T10:30:00Z")]
        );
        // Each period has a cap of its own: December's window is whole.
        let december = window(
            3,
            "2026-12-01T00:00:00Z",
            "2026-12-01T01:00:00Z",
            "2026-11-03T00:00:00Z",
        );
        let mut more = windows.to_vec();
        more.push(december);
        let judged = judge(&more, &policy, &month());
        assert_eq!(judged[2].standing, Standing::Planned);
        // A window across two periods is charged in each.
        let across = window(
            4,
            "2026-11-30T23:30:00Z",
            "2026-12-01T00:30:00Z",
            "2026-11-01T00:00:00Z",
        );
        let judged = judge(&[across], &capped(0).with_cap(20), &month());
        assert_eq!(
            judged[0].excluded,
            [
                period("2026-11-30T23:30:00Z", "2026-11-30T23:50:00Z"),
                period("2026-12-01T00:00:00Z", "2026-12-01T00:20:00Z"),
            ]
        );
        assert_eq!(judged[0].standing, Standing::BeyondCap);
    }

    #[test]
    fn time_already_excluded_is_not_charged_twice_against_the_cap() {
        let first = window(
            1,
            "2026-11-10T10:00:00Z",
            "2026-11-10T11:00:00Z",
            "2026-11-01T00:00:00Z",
        );
        // Inside the first: costs nothing, planned.
        let inner = window(
            2,
            "2026-11-10T10:15:00Z",
            "2026-11-10T10:45:00Z",
            "2026-11-02T00:00:00Z",
        );
        // Under an accepted window: costs nothing either.
        let mut accepted = window(
            3,
            "2026-11-11T10:00:00Z",
            "2026-11-11T12:00:00Z",
            "2026-11-11T11:00:00Z",
        );
        accepted.accepted = true;
        let under = window(
            4,
            "2026-11-11T10:30:00Z",
            "2026-11-11T11:30:00Z",
            "2026-11-03T00:00:00Z",
        );
        let judged = judge(
            &[first, inner, accepted, under],
            &capped(0).with_cap(60),
            &month(),
        );
        let standings: Vec<_> = judged.iter().map(|j| j.standing).collect();
        assert_eq!(
            standings,
            [
                Standing::Planned,
                Standing::Planned,
                Standing::Accepted,
                Standing::Planned
            ]
        );
    }

    #[test]
    fn rolling_windows_cap_consecutive_stretches_of_their_length() {
        let rolling = TimeWindow::Rolling {
            duration: Span::new(1, crate::quantity::SpanUnit::Day).unwrap(),
        };
        assert_eq!(
            cap_period(&rolling, utc("2026-11-10T10:00:00Z")),
            period("2026-11-10T00:00:00Z", "2026-11-11T00:00:00Z")
        );
        let span = judged_span(
            &capped(1),
            &rolling,
            utc("2026-11-10T10:00:00Z"),
            utc("2026-11-10T11:00:00Z"),
        );
        assert_eq!(span, period("2026-11-03T00:00:00Z", "2026-11-18T00:00:00Z"));
        // Without a cap, a window is judged alone.
        let span = judged_span(
            &capped(0),
            &rolling,
            utc("2026-11-10T10:00:00Z"),
            utc("2026-11-10T11:00:00Z"),
        );
        assert_eq!(span, period("2026-11-10T10:00:00Z", "2026-11-10T11:00:00Z"));
    }

    impl MaintenancePolicy {
        fn with_cap(self, minutes: u32) -> Self {
            Self {
                max_per_period: Some(
                    Span::new(minutes, crate::quantity::SpanUnit::Minute).unwrap(),
                ),
                ..self
            }
        }
    }
}
