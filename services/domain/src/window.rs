//! The time window an SLA is measured over, and the period that contains a given instant.

use std::fmt;

use chrono::Offset as _;
use chrono::{
    DateTime, Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Utc, Weekday,
};
use chrono_tz::Tz;

use crate::quantity::{QuantityError, Span};

/// A half-open stretch of time `[start, end)` in UTC.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Period {
    /// First instant in the period.
    pub start: DateTime<Utc>,
    /// First instant after the period.
    pub end: DateTime<Utc>,
}

impl Period {
    /// Whether `at` lies in `[start, end)`.
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.start <= at && at < self.end
    }

    /// How long the period lasts (a DST month may be an hour short or long).
    pub fn duration(&self) -> Duration {
        self.end - self.start
    }

    /// The part of `other` inside this period, if any.
    pub fn intersection(&self, other: &Period) -> Option<Period> {
        let start = self.start.max(other.start);
        let end = self.end.min(other.end);
        (start < end).then_some(Period { start, end })
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}, {})",
            self.start.to_rfc3339(),
            self.end.to_rfc3339()
        )
    }
}

/// The unit of a calendar window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CalendarUnit {
    /// Monday 00:00 to the next Monday 00:00 (ISO weeks).
    Week,
    Month,
    /// January, April, July and October start quarters.
    Quarter,
    Year,
}

impl CalendarUnit {
    /// The name in the native format (`month`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Week => "week",
            Self::Month => "month",
            Self::Quarter => "quarter",
            Self::Year => "year",
        }
    }

    /// Reads `week`, `month`, `quarter` or `year`.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        match text {
            "week" => Ok(Self::Week),
            "month" => Ok(Self::Month),
            "quarter" => Ok(Self::Quarter),
            "year" => Ok(Self::Year),
            _ => Err(QuantityError(format!(
                "must be one of week, month, quarter, year; got {text:?}"
            ))),
        }
    }

    /// OpenSLO's duration shorthand for one unit (`1M`).
    pub const fn openslo_duration(self) -> &'static str {
        match self {
            Self::Week => "1w",
            Self::Month => "1M",
            Self::Quarter => "1Q",
            Self::Year => "1Y",
        }
    }

    /// The first local day of the unit that contains `day`.
    fn first_day(self, day: NaiveDate) -> NaiveDate {
        let first = match self {
            Self::Week => {
                Some(day - Duration::days(i64::from(day.weekday().num_days_from_monday())))
            }
            Self::Month => day.with_day(1),
            Self::Quarter => NaiveDate::from_ymd_opt(day.year(), (day.month0() / 3) * 3 + 1, 1),
            Self::Year => NaiveDate::from_ymd_opt(day.year(), 1, 1),
        };
        // Every one of these dates exists; fall back to the day itself rather than panic.
        first.unwrap_or(day)
    }

    /// The first local day of the next unit after the one starting on `first`.
    fn next_first_day(self, first: NaiveDate) -> NaiveDate {
        let months = match self {
            Self::Week => return first + Duration::days(7),
            Self::Month => 1,
            Self::Quarter => 3,
            Self::Year => 12,
        };
        first
            .checked_add_months(chrono::Months::new(months))
            .unwrap_or(first)
    }

    /// Whether `day` starts a unit.
    pub fn is_first_day(self, day: NaiveDate) -> bool {
        self.first_day(day) == day && (self != Self::Week || day.weekday() == Weekday::Mon)
    }
}

impl fmt::Display for CalendarUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The window over which an SLA's objectives are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeWindow {
    /// Calendar periods (a month, a quarter…) in the SLA's time zone: what
    /// contracts are paid on.
    Calendar { unit: CalendarUnit, time_zone: Tz },
    /// The trailing `duration` before any instant: what operators watch.
    Rolling { duration: Span },
}

impl TimeWindow {
    /// The shortest rolling window accepted.
    pub const MIN_ROLLING_SECONDS: u64 = 60;
    /// The longest rolling window accepted: 400 days, beyond which event
    /// retention would not hold the data anyway.
    pub const MAX_ROLLING_SECONDS: u64 = 400 * 86_400;

    /// A rolling window, refusing lengths under a minute or over 400 days.
    pub fn rolling(duration: Span) -> Result<Self, QuantityError> {
        let s = duration.seconds();
        if s < Self::MIN_ROLLING_SECONDS {
            return Err(QuantityError(format!(
                "must be at least 1m, got {duration}"
            )));
        }
        if s > Self::MAX_ROLLING_SECONDS {
            return Err(QuantityError(format!(
                "must be at most 400d, got {duration}"
            )));
        }
        Ok(Self::Rolling { duration })
    }

    /// The period `[start, end)` in UTC that contains `at`.
    ///
    /// Calendar windows: the calendar unit containing `at`'s local time in
    /// the SLA's zone, from its first local midnight to the next one (weeks
    /// start on Monday), converted to UTC; so a month that spans a DST change
    /// is an hour shorter or longer than its days. A midnight that falls in a
    /// DST gap starts the period at the end of the gap; a midnight repeated
    /// by a DST fold starts it at its first occurrence.
    ///
    /// Rolling windows have no fixed periods: the period is the trailing
    /// window that ends at `at`, i.e. `[at - duration, at)`.
    pub fn period_containing(&self, at: DateTime<Utc>) -> Period {
        match *self {
            Self::Rolling { duration } => {
                let length = duration.chrono();
                Period {
                    start: at - length,
                    end: at,
                }
            }
            Self::Calendar { unit, time_zone } => {
                let local_day = at.with_timezone(&time_zone).date_naive();
                let first = unit.first_day(local_day);
                let next = unit.next_first_day(first);
                Period {
                    start: local_midnight(time_zone, first),
                    end: local_midnight(time_zone, next),
                }
            }
        }
    }

    /// The period that follows `period` (for a rolling window: the window
    /// ending one window length later).
    pub fn next_period(&self, period: &Period) -> Period {
        match self {
            Self::Rolling { .. } => Period {
                start: period.end,
                end: period.end + period.duration(),
            },
            Self::Calendar { .. } => self.period_containing(period.end),
        }
    }

    /// The nominal length, for scaling burn-rate alerts: calendar windows use
    /// 7, 30, 91 and 365 days.
    pub fn nominal_duration(&self) -> Duration {
        match self {
            Self::Rolling { duration } => Duration::seconds(duration.seconds() as i64),
            Self::Calendar { unit, .. } => Duration::days(match unit {
                CalendarUnit::Week => 7,
                CalendarUnit::Month => 30,
                CalendarUnit::Quarter => 91,
                CalendarUnit::Year => 365,
            }),
        }
    }
}

impl fmt::Display for TimeWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Calendar { unit, time_zone } => {
                write!(f, "calendar {unit} in {}", time_zone.name())
            }
            Self::Rolling { duration } => write!(f, "rolling {duration}"),
        }
    }
}

/// The UTC instant at which local `day` begins in `tz`.
pub(crate) fn local_midnight(tz: Tz, day: NaiveDate) -> DateTime<Utc> {
    local_instant(tz, day.and_hms_opt(0, 0, 0).unwrap_or(NaiveDateTime::MIN))
}

/// The instant a local wall-clock time names in `tz`. A fold repeats it:
/// its first occurrence. A gap skips it: it is read with the offset in
/// force just before the gap, which is when the clocks jump.
pub(crate) fn local_instant(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(earliest, _) => earliest.with_timezone(&Utc),
        LocalResult::None => {
            let before = local - Duration::hours(6);
            let offset = match tz.from_local_datetime(&before) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.offset().fix(),
                LocalResult::None => return Utc.from_utc_datetime(&local),
            };
            Utc.from_utc_datetime(&(local - Duration::seconds(i64::from(offset.local_minus_utc()))))
        }
    }
}

/// Merges periods (maintenance windows, say) into disjoint, sorted periods.
pub fn merge_periods(mut periods: Vec<Period>) -> Vec<Period> {
    periods.sort();
    let mut merged: Vec<Period> = Vec::with_capacity(periods.len());
    for p in periods {
        match merged.last_mut() {
            Some(last) if p.start <= last.end => last.end = last.end.max(p.end),
            _ => merged.push(p),
        }
    }
    merged
}

/// Whether `at` lies in one of the disjoint, sorted `periods`.
pub fn in_any(periods: &[Period], at: DateTime<Utc>) -> bool {
    let i = periods.partition_point(|p| p.end <= at);
    periods.get(i).is_some_and(|p| p.contains(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn cal(unit: CalendarUnit, tz: &str) -> TimeWindow {
        TimeWindow::Calendar {
            unit,
            time_zone: tz.parse().unwrap(),
        }
    }

    #[test]
    fn month_in_utc() {
        let p = cal(CalendarUnit::Month, "UTC").period_containing(utc("2024-02-29T23:59:59Z"));
        assert_eq!(p.start, utc("2024-02-01T00:00:00Z"));
        assert_eq!(p.end, utc("2024-03-01T00:00:00Z"));
        assert!(p.contains(utc("2024-02-29T23:59:59Z")));
        assert!(!p.contains(p.end));
    }

    #[test]
    fn month_spanning_spring_forward_is_an_hour_short() {
        // Europe/Berlin moved to CEST on 2024-03-31 at 02:00.
        let w = cal(CalendarUnit::Month, "Europe/Berlin");
        let p = w.period_containing(utc("2024-03-15T12:00:00Z"));
        assert_eq!(p.start, utc("2024-02-29T23:00:00Z"));
        assert_eq!(p.end, utc("2024-03-31T22:00:00Z"));
        assert_eq!(p.duration(), Duration::days(31) - Duration::hours(1));
        // 22:30 UTC on March 31 is already April in Berlin.
        let april = w.period_containing(utc("2024-03-31T22:30:00Z"));
        assert_eq!(april.start, p.end);
        assert_eq!(w.next_period(&p), april);
    }

    #[test]
    fn month_spanning_fall_back_is_an_hour_long() {
        let p = cal(CalendarUnit::Month, "America/New_York")
            .period_containing(utc("2024-11-15T00:00:00Z"));
        assert_eq!(p.start, utc("2024-11-01T04:00:00Z"));
        assert_eq!(p.end, utc("2024-12-01T05:00:00Z"));
        assert_eq!(p.duration(), Duration::days(30) + Duration::hours(1));
    }

    #[test]
    fn midnight_in_a_dst_gap_starts_when_clocks_jump() {
        // America/Santiago: on 2024-09-08 clocks went from 00:00 -04 to 01:00 -03.
        let p = cal(CalendarUnit::Week, "America/Santiago")
            .period_containing(utc("2024-09-10T12:00:00Z"));
        // The ISO week begins Monday 2024-09-09 at local midnight (-03).
        assert_eq!(p.start, utc("2024-09-09T03:00:00Z"));
        let p = cal(CalendarUnit::Month, "America/Santiago")
            .period_containing(utc("2024-09-08T05:00:00Z"));
        assert_eq!(p.start, utc("2024-09-01T04:00:00Z"));
        // Day-level: a window starting on the gap day.
        assert_eq!(
            local_midnight(
                "America/Santiago".parse().unwrap(),
                NaiveDate::from_ymd_opt(2024, 9, 8).unwrap()
            ),
            utc("2024-09-08T04:00:00Z")
        );
    }

    #[test]
    fn midnight_in_a_dst_fold_starts_at_its_first_occurrence() {
        // America/Havana: on 2024-11-03 clocks fell back from 01:00 -04 to 00:00 -05,
        // so local midnight happened twice: at 04:00 and 05:00 UTC.
        let havana: Tz = "America/Havana".parse().unwrap();
        let day = NaiveDate::from_ymd_opt(2024, 11, 3).unwrap();
        assert_eq!(local_midnight(havana, day), utc("2024-11-03T04:00:00Z"));
        // The month around it is an hour longer than its days.
        let p = TimeWindow::Calendar {
            unit: CalendarUnit::Month,
            time_zone: havana,
        }
        .period_containing(utc("2024-11-15T00:00:00Z"));
        assert_eq!(p.start, utc("2024-11-01T04:00:00Z"));
        assert_eq!(p.end, utc("2024-12-01T05:00:00Z"));
    }

    #[test]
    fn weeks_start_on_monday() {
        let w = cal(CalendarUnit::Week, "UTC");
        // 2024-01-07 is a Sunday.
        let p = w.period_containing(utc("2024-01-07T23:59:59Z"));
        assert_eq!(p.start, utc("2024-01-01T00:00:00Z"));
        assert_eq!(p.end, utc("2024-01-08T00:00:00Z"));
        let p = w.period_containing(utc("2024-01-08T00:00:00Z"));
        assert_eq!(p.start, utc("2024-01-08T00:00:00Z"));
        // A week across a year boundary.
        let p = w.period_containing(utc("2025-01-01T10:00:00Z"));
        assert_eq!(p.start, utc("2024-12-30T00:00:00Z"));
        assert_eq!(p.end, utc("2025-01-06T00:00:00Z"));
    }

    #[test]
    fn week_in_a_zone_ahead_of_utc() {
        // Sunday 20:00 UTC is already Monday in Tokyo.
        let p =
            cal(CalendarUnit::Week, "Asia/Tokyo").period_containing(utc("2024-01-07T20:00:00Z"));
        assert_eq!(p.start, utc("2024-01-07T15:00:00Z"));
        assert_eq!(p.end, utc("2024-01-14T15:00:00Z"));
    }

    #[test]
    fn quarters() {
        let w = cal(CalendarUnit::Quarter, "UTC");
        for (at, start, end) in [
            (
                "2024-01-01T00:00:00Z",
                "2024-01-01T00:00:00Z",
                "2024-04-01T00:00:00Z",
            ),
            (
                "2024-03-31T23:59:59Z",
                "2024-01-01T00:00:00Z",
                "2024-04-01T00:00:00Z",
            ),
            (
                "2024-04-01T00:00:00Z",
                "2024-04-01T00:00:00Z",
                "2024-07-01T00:00:00Z",
            ),
            (
                "2024-08-15T00:00:00Z",
                "2024-07-01T00:00:00Z",
                "2024-10-01T00:00:00Z",
            ),
            (
                "2024-12-31T23:59:59Z",
                "2024-10-01T00:00:00Z",
                "2025-01-01T00:00:00Z",
            ),
        ] {
            let p = w.period_containing(utc(at));
            assert_eq!((p.start, p.end), (utc(start), utc(end)), "{at}");
        }
        // A quarter in New York spanning spring forward.
        let p = cal(CalendarUnit::Quarter, "America/New_York")
            .period_containing(utc("2024-02-01T00:00:00Z"));
        assert_eq!(p.start, utc("2024-01-01T05:00:00Z"));
        assert_eq!(p.end, utc("2024-04-01T04:00:00Z"));
    }

    #[test]
    fn years_and_local_new_year() {
        let w = cal(CalendarUnit::Year, "Pacific/Auckland");
        // 2024-12-31T12:00Z is already 2025 in Auckland (+13).
        let p = w.period_containing(utc("2024-12-31T12:00:00Z"));
        assert_eq!(p.start, utc("2024-12-31T11:00:00Z"));
        assert_eq!(p.end, utc("2025-12-31T11:00:00Z"));
    }

    #[test]
    fn rolling_is_the_trailing_window() {
        let w = TimeWindow::rolling(Span::parse("28d").unwrap()).unwrap();
        let at = utc("2024-03-31T12:00:00Z");
        let p = w.period_containing(at);
        assert_eq!(p.end, at);
        assert_eq!(p.start, utc("2024-03-03T12:00:00Z"));
        assert!(TimeWindow::rolling(Span::parse("30s").unwrap()).is_err());
        assert!(TimeWindow::rolling(Span::parse("401d").unwrap()).is_err());
    }

    #[test]
    fn consecutive_periods_tile_time() {
        for tz in [
            "UTC",
            "Europe/Berlin",
            "America/Santiago",
            "Australia/Lord_Howe",
            "Asia/Kathmandu",
        ] {
            for unit in [
                CalendarUnit::Week,
                CalendarUnit::Month,
                CalendarUnit::Quarter,
                CalendarUnit::Year,
            ] {
                let w = cal(unit, tz);
                let mut p = w.period_containing(utc("2023-12-20T00:00:00Z"));
                for _ in 0..30 {
                    let next = w.next_period(&p);
                    assert_eq!(next.start, p.end, "{tz} {unit}");
                    assert!(next.end > next.start);
                    assert_eq!(w.period_containing(next.start), next);
                    assert_eq!(w.period_containing(next.start - Duration::seconds(1)), p);
                    p = next;
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn every_instant_lies_in_its_period(
            secs in 0i64..4_102_444_800,
            zone in proptest::sample::select(vec!["UTC", "Europe/Berlin", "America/Santiago", "America/Havana", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Apia"]),
            unit in proptest::sample::select(vec![CalendarUnit::Week, CalendarUnit::Month, CalendarUnit::Quarter, CalendarUnit::Year]),
        ) {
            let at = DateTime::from_timestamp(secs, 0).unwrap();
            let w = TimeWindow::Calendar { unit, time_zone: zone.parse().unwrap() };
            let p = w.period_containing(at);
            proptest::prop_assert!(p.contains(at), "{at} not in {p}");
            proptest::prop_assert_eq!(w.period_containing(p.start), p);
            proptest::prop_assert_eq!(w.next_period(&p).start, p.end);
        }
    }
}
