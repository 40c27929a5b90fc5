//! UTC minutes (the rollup unit) and when an event counts as arriving late.

use chrono::{DateTime, Duration, Utc};

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
