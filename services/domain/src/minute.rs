//! UTC minutes (the rollup unit) and when an event counts as arriving late.

use chrono::{DateTime, Duration, Utc};

use crate::window::Period;

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

/// When an event arrived relative to its minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arrival {
    /// Before its minute ended.
    OnTime,
    /// After its minute ended, within the grace period: folded into the
    /// verdict like an on-time event, and counted as folded.
    LateFolded,
    /// After the grace period: counted apart and reported, not part of the
    /// verdict (its period may already be frozen).
    Late,
}

impl Arrival {
    /// Classifies by the end of the event's minute plus `grace`. A pure
    /// function of the event, so incremental rollups and a recount from
    /// raw events agree whatever order events arrive in.
    pub fn of(occurred_at: DateTime<Utc>, received_at: DateTime<Utc>, grace: Duration) -> Self {
        let minute_end = floor_minute(occurred_at) + Duration::minutes(1);
        if received_at < minute_end {
            Self::OnTime
        } else if received_at < minute_end + grace {
            Self::LateFolded
        } else {
            Self::Late
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
    fn arrival_is_judged_against_the_end_of_the_minute() {
        let at = t("2026-11-30T10:05:30Z");
        let grace = Duration::minutes(5);
        assert_eq!(
            Arrival::of(at, t("2026-11-30T10:05:59Z"), grace),
            Arrival::OnTime
        );
        assert_eq!(
            Arrival::of(at, t("2026-11-30T10:06:00Z"), grace),
            Arrival::LateFolded
        );
        assert_eq!(
            Arrival::of(at, t("2026-11-30T10:10:59Z"), grace),
            Arrival::LateFolded
        );
        assert_eq!(
            Arrival::of(at, t("2026-11-30T10:11:00Z"), grace),
            Arrival::Late
        );
    }
}
