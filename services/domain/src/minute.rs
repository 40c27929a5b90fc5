//! UTC minutes (the rollup unit) and when an event counts as arriving late.

use chrono::{DateTime, Duration, Utc};

use crate::window::{Period, TimeWindow};

/// The instants slaproof takes from a caller, in words: no SLA, fee, window
/// or range of slaproof's lies outside them, and inside them no minute,
/// day or period arithmetic can overflow (chrono holds years up to
/// ±262,143; Postgres refuses years past 294,276).
pub const INSTANT_BOUNDS: &str = "between 1970-01-01 and 2200-01-01 (UTC)";

/// `at` when it lies in [`INSTANT_BOUNDS`] (1970-01-01 inclusive, 2200-01-01
/// exclusive), else why not.
pub fn check_instant(at: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    // 2200-01-01T00:00:00Z in Unix seconds.
    const END: i64 = 7_258_118_400;
    if (0..END).contains(&at.timestamp()) {
        Ok(at)
    } else {
        Err(format!(
            "must be an instant {INSTANT_BOUNDS}, got {}",
            at.to_rfc3339()
        ))
    }
}

/// The start of the UTC minute containing `at`.
pub fn floor_minute(at: DateTime<Utc>) -> DateTime<Utc> {
    let secs = at.timestamp().div_euclid(60) * 60;
    DateTime::from_timestamp(secs, 0).unwrap_or(at)
}

/// The start of the UTC hour containing `at`.
pub fn floor_hour(at: DateTime<Utc>) -> DateTime<Utc> {
    let secs = at.timestamp().div_euclid(3600) * 3600;
    DateTime::from_timestamp(secs, 0).unwrap_or(at)
}

/// The first hour boundary at or after `at`.
pub fn ceil_hour(at: DateTime<Utc>) -> DateTime<Utc> {
    let floor = floor_hour(at);
    if floor == at {
        at
    } else {
        floor + Duration::hours(1)
    }
}

/// The first minute boundary at or after `at`.
pub fn ceil_minute(at: DateTime<Utc>) -> DateTime<Utc> {
    let floor = floor_minute(at);
    if floor == at {
        at
    } else {
        floor + Duration::minutes(1)
    }
}

/// When an event (or a gauge value) arrived relative to its minute and to
/// the close of its period.
///
/// What counts is whether the verdict is still open: an event counts when
/// it arrives before its *period* closes, `grace` after the period's end
/// (the SLA's late grace). So requests longer than a minute (OTLP spans
/// record their start), a provider clock running slow, and telemetry held
/// up during an incident all count, and a provider cannot keep bad events
/// out by sending them late — only by sending them after the period is
/// frozen, when they are counted apart and shown as late.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arrival {
    /// Before its minute ended.
    OnTime,
    /// After its minute ended, before its period closed: folded into the
    /// verdict like an on-time event, and counted as folded.
    LateFolded,
    /// After its period closed: counted apart and reported, not part of
    /// the verdict (the period is frozen).
    Late,
}

impl Arrival {
    /// Classifies by the end of the event's minute and of its period in
    /// `window` plus `grace`. A rolling window never closes, so nothing is
    /// late for it (an event counts while its time is inside the window).
    /// A pure function of the event, so incremental rollups and a recount
    /// from raw events agree whatever order events arrive in.
    pub fn of(
        window: &TimeWindow,
        occurred_at: DateTime<Utc>,
        received_at: DateTime<Utc>,
        grace: Duration,
    ) -> Self {
        Self::counted_until(window, occurred_at, received_at, |_| grace)
    }

    /// [`Arrival::of`] with the time an event counts after its period's
    /// end given by `until(next_end − end)`: the policy's
    /// [`crate::policy::SlaPolicy::counts_until`].
    pub fn counted_until(
        window: &TimeWindow,
        occurred_at: DateTime<Utc>,
        received_at: DateTime<Utc>,
        until: impl Fn(Duration) -> Duration,
    ) -> Self {
        if received_at < floor_minute(occurred_at) + Duration::minutes(1) {
            return Self::OnTime;
        }
        match window {
            TimeWindow::Rolling { .. } => Self::LateFolded,
            TimeWindow::Calendar { .. } => {
                let period = window.period_containing(occurred_at);
                let to_next_end = window.next_period(&period).end - period.end;
                if received_at < period.end + until(to_next_end) {
                    Self::LateFolded
                } else {
                    Self::Late
                }
            }
        }
    }

    /// Whether the event is part of the verdict.
    pub const fn counts(self) -> bool {
        !matches!(self, Self::Late)
    }
}

/// Whole minutes `[start, end)`.
pub type MinuteRange = (DateTime<Utc>, DateTime<Utc>);

/// The whole minutes disjoint, sorted maintenance `windows` cover within
/// `[from, to)`, as ranges `[start, end)`, and the minutes they only cut.
pub fn maintenance_minutes(
    windows: &[Period],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> (Vec<MinuteRange>, Vec<DateTime<Utc>>) {
    let mut whole = Vec::new();
    let mut cut = Vec::new();
    for w in windows {
        let Some(w) = w.intersection(&Period {
            start: from,
            end: to,
        }) else {
            continue;
        };
        let (inner_start, inner_end) = (ceil_minute(w.start), floor_minute(w.end));
        if inner_start < inner_end {
            whole.push((inner_start, inner_end));
        }
        if w.start != inner_start {
            cut.push(floor_minute(w.start));
        }
        if w.end != inner_end && inner_end >= w.start {
            cut.push(inner_end);
        }
    }
    // Two windows may cut one minute (one ends, another starts in it).
    cut.sort();
    cut.dedup();
    (whole, cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn minutes_round_both_ways() {
        assert_eq!(
            floor_minute(t("2026-11-30T10:05:59.999Z")),
            t("2026-11-30T10:05:00Z")
        );
        assert_eq!(
            ceil_minute(t("2026-11-30T10:05:00.001Z")),
            t("2026-11-30T10:06:00Z")
        );
        assert_eq!(
            ceil_minute(t("2026-11-30T10:05:00Z")),
            t("2026-11-30T10:05:00Z")
        );
        assert_eq!(
            floor_minute(t("1969-12-31T23:59:30Z")),
            t("1969-12-31T23:59:00Z")
        );
    }

    #[test]
    fn arrival_is_judged_against_the_close_of_the_period() {
        let month = TimeWindow::Calendar {
            unit: crate::window::CalendarUnit::Month,
            time_zone: chrono_tz::Europe::Berlin,
        };
        let at = t("2026-11-10T10:05:30Z");
        let grace = Duration::minutes(5);
        assert_eq!(
            Arrival::of(&month, at, t("2026-11-10T10:05:59Z"), grace),
            Arrival::OnTime
        );
        // Ten minutes late, a week late: the month is open, it counts.
        for received in ["2026-11-10T10:16:00Z", "2026-11-17T10:00:00Z"] {
            assert_eq!(
                Arrival::of(&month, at, t(received), grace),
                Arrival::LateFolded,
                "{received}"
            );
        }
        // The Berlin month ends at 23:00 UTC on November 30; it closes
        // five minutes later.
        assert_eq!(
            Arrival::of(&month, at, t("2026-11-30T23:04:59Z"), grace),
            Arrival::LateFolded
        );
        assert_eq!(
            Arrival::of(&month, at, t("2026-11-30T23:05:00Z"), grace),
            Arrival::Late
        );
        // A rolling window never closes.
        let rolling = TimeWindow::rolling(crate::quantity::Span::parse("7d").unwrap()).unwrap();
        assert_eq!(
            Arrival::of(&rolling, at, t("2027-01-01T00:00:00Z"), grace),
            Arrival::LateFolded
        );
    }
}
