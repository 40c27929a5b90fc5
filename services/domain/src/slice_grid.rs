//! Where time slices start and end: aligned to the window's local days.
//!
//! A time-slice objective cuts time into slices of its slice length, and
//! those slices follow the SLA's calendar, not the Unix epoch:
//!
//! * A slice whose length is a whole number of days steps by local
//!   calendar days in the window's time zone, from local midnight to local
//!   midnight. A day is a day: the day clocks spring forward is one slice
//!   of 23 hours, the day they fall back one of 25. A calendar period
//!   therefore has exactly as many one-day slices as local days (30 for a
//!   Berlin November, 31 for a Berlin March or October). Slices of `n`
//!   days group local days counted from 1970-01-01.
//! * A shorter slice steps in absolute time from the local midnight of its
//!   local day, and a day boundary ends it: one-hour slices are the local
//!   hours (23 or 25 of them on a DST day), in Asia/Kolkata they start at
//!   half past the UTC hour, and a slice the next midnight would cut short
//!   ends at that midnight.
//! * A rolling window has no time zone: its slices follow UTC days, which
//!   for lengths dividing a day is the same as aligning them to the Unix
//!   epoch.
//!
//! A local midnight that a DST gap skips is taken to be the end of the gap,
//! one repeated by a DST fold its first occurrence (as for periods, see
//! [`TimeWindow::period_containing`]).

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use chrono_tz::Tz;
use num_integer::Integer as _;

use crate::quantity::Span;
use crate::window::{Period, TimeWindow, local_midnight};

const DAY_SECONDS: u64 = 86_400;
/// The grain of the evaluator's rollups.
const MINUTE_SECONDS: u64 = 60;

/// The slices of one time-slice objective under one SLA window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceGrid {
    /// Slice length in seconds, at least a minute.
    length: u64,
    time_zone: Tz,
}

impl SliceGrid {
    /// The grid of slices `slice_length` long in `window`'s time zone (UTC
    /// for a rolling window). Lengths under a minute are taken as a minute.
    pub fn new(slice_length: Span, window: &TimeWindow) -> Self {
        let time_zone = match *window {
            TimeWindow::Calendar { time_zone, .. } => time_zone,
            TimeWindow::Rolling { .. } => Tz::UTC,
        };
        Self {
            length: slice_length.seconds().max(MINUTE_SECONDS),
            time_zone,
        }
    }

    /// The slice `[start, end)` that contains `at` (see the module).
    pub fn slice_containing(&self, at: DateTime<Utc>) -> Period {
        let day = at.with_timezone(&self.time_zone).date_naive();
        if self.length.is_multiple_of(DAY_SECONDS) {
            let days = i64::try_from(self.length / DAY_SECONDS).unwrap_or(i64::MAX);
            // Local days since 1970-01-01, day 719 163 of the common era.
            let index = i64::from(day.num_days_from_ce()) - 719_163;
            let first = day - Duration::days(index.rem_euclid(days));
            return Period {
                start: self.midnight(first),
                end: self.midnight(first + Duration::days(days)),
            };
        }
        let midnight = self.midnight(day);
        let next = self.midnight(day + Duration::days(1));
        let length = i64::try_from(self.length).unwrap_or(i64::MAX);
        let into_day = (at - midnight).num_seconds().max(0);
        let start = midnight + Duration::seconds(into_day - into_day % length);
        Period {
            start,
            end: (start + Duration::seconds(length)).min(next),
        }
    }

    /// The longest grain, in seconds, at which the minutes of `[from, to)`
    /// can be summed before they are sorted into slices: stretches of that
    /// length aligned to the Unix epoch never straddle a slice boundary
    /// there. It divides the slice length and every local midnight around
    /// the range (so a day in UTC for one-day slices in UTC, an hour for
    /// one-day slices in Berlin, half an hour in Kolkata). Where no whole
    /// number of minutes fits (a zone's offset in seconds, before 1900) it
    /// is a minute, the grain of the rollups.
    pub fn aligned_grain(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> u64 {
        let last = to.with_timezone(&self.time_zone).date_naive() + Duration::days(1);
        let mut day = from.with_timezone(&self.time_zone).date_naive();
        let mut grain = self.length;
        while day <= last && grain > MINUTE_SECONDS {
            grain = grain.gcd(&self.midnight(day).timestamp().unsigned_abs());
            day += Duration::days(1);
        }
        if grain.is_multiple_of(MINUTE_SECONDS) {
            grain
        } else {
            MINUTE_SECONDS
        }
    }

    /// The UTC instant at which local `day` begins.
    fn midnight(&self, day: NaiveDate) -> DateTime<Utc> {
        local_midnight(self.time_zone, day)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::CalendarUnit;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn month(tz: &str) -> TimeWindow {
        TimeWindow::Calendar {
            unit: CalendarUnit::Month,
            time_zone: tz.parse().unwrap(),
        }
    }

    fn grid(length: &str, window: &TimeWindow) -> SliceGrid {
        SliceGrid::new(Span::parse(length).unwrap(), window)
    }

    /// The slices that tile `period`, walking from its start.
    fn slices(grid: &SliceGrid, period: Period) -> Vec<Period> {
        let mut out = Vec::new();
        let mut at = period.start;
        while at < period.end {
            let s = grid.slice_containing(at);
            assert!(s.contains(at), "{at} not in {s}");
            assert_eq!(s.start, at, "slices tile time");
            out.push(s);
            at = s.end;
        }
        out
    }

    #[test]
    fn a_berlin_november_has_thirty_day_slices_from_local_midnight() {
        let w = month("Europe/Berlin");
        let period = w.period_containing(utc("2026-11-15T12:00:00Z"));
        let days = slices(&grid("1d", &w), period);
        assert_eq!(days.len(), 30);
        assert_eq!(days[0].start, utc("2026-10-31T23:00:00Z"));
        assert_eq!(days[29].end, period.end);
        assert!(days.iter().all(|d| d.duration() == Duration::hours(24)));
        // 23:30 UTC on October 31 is November 1 in Berlin.
        assert_eq!(
            grid("1d", &w).slice_containing(utc("2026-10-31T23:30:00Z")),
            days[0]
        );
    }

    #[test]
    fn the_day_clocks_spring_forward_is_one_slice_of_23_hours() {
        let w = month("Europe/Berlin");
        let period = w.period_containing(utc("2027-03-15T12:00:00Z"));
        let days = slices(&grid("1d", &w), period);
        assert_eq!(days.len(), 31);
        assert_eq!(days[27].start, utc("2027-03-27T23:00:00Z"));
        assert_eq!(days[27].duration(), Duration::hours(23));
        assert_eq!(days[28].start, utc("2027-03-28T22:00:00Z"));
        let others = days.iter().enumerate().filter(|&(i, _)| i != 27);
        assert!(
            others
                .map(|(_, d)| d)
                .all(|d| d.duration() == Duration::hours(24))
        );
    }

    #[test]
    fn the_day_clocks_fall_back_is_one_slice_of_25_hours() {
        let w = month("Europe/Berlin");
        let period = w.period_containing(utc("2026-10-15T12:00:00Z"));
        let days = slices(&grid("1d", &w), period);
        assert_eq!(days.len(), 31);
        // 2026-10-25 is the 25th local day.
        assert_eq!(days[24].start, utc("2026-10-24T22:00:00Z"));
        assert_eq!(days[24].duration(), Duration::hours(25));
    }

    #[test]
    fn hour_slices_are_the_local_hours_of_a_dst_day() {
        let w = month("Europe/Berlin");
        let g = grid("1h", &w);
        let hour = g.slice_containing(utc("2027-03-28T10:20:00Z"));
        assert_eq!(hour.start, utc("2027-03-28T10:00:00Z"));
        let hours = slices(
            &g,
            grid("1d", &w).slice_containing(utc("2027-03-28T10:00:00Z")),
        );
        assert_eq!(hours.len(), 23);
        assert!(hours.iter().all(|h| h.duration() == Duration::hours(1)));
        let hours = slices(
            &g,
            grid("1d", &w).slice_containing(utc("2026-10-25T10:00:00Z")),
        );
        assert_eq!(hours.len(), 25);
    }

    #[test]
    fn a_slice_the_day_boundary_would_cut_ends_there() {
        // 16-minute slices: 90 to a 24-hour day; a 23-hour day (1380
        // minutes) has 86 whole ones and a last one of 4 minutes.
        let w = month("Europe/Berlin");
        let day = grid("1d", &w).slice_containing(utc("2027-03-28T10:00:00Z"));
        let s = slices(&grid("16m", &w), day);
        assert_eq!(s.len(), 87);
        assert_eq!(s[86].duration(), Duration::minutes(4));
        assert_eq!(s[86].end, day.end);
    }

    #[test]
    fn utc_and_rolling_windows_keep_the_epoch_alignment() {
        let rolling = TimeWindow::rolling(Span::parse("28d").unwrap()).unwrap();
        for w in [month("UTC"), rolling] {
            for length in ["1m", "5m", "16m", "1h", "6h", "1d"] {
                let g = grid(length, &w);
                let l = i64::try_from(Span::parse(length).unwrap().seconds()).unwrap();
                for at in [
                    "2026-11-10T10:07:30Z",
                    "2027-03-28T01:59:00Z",
                    "1970-01-01T00:00:00Z",
                    "2024-12-31T23:59:59Z",
                ] {
                    let t = utc(at).timestamp();
                    let start = t.div_euclid(l) * l;
                    let s = g.slice_containing(utc(at));
                    assert_eq!(s.start.timestamp(), start, "{w} {length} {at}");
                    assert_eq!(s.end.timestamp(), start + l, "{w} {length} {at}");
                }
            }
        }
    }

    #[test]
    fn slices_of_several_days_group_local_days_from_1970() {
        // 2027-03-27 is local day 20 904 since 1970-01-01: even, so it
        // starts a two-day slice, which the spring-forward makes 47 hours.
        let s = grid("2d", &month("Europe/Berlin")).slice_containing(utc("2027-03-28T10:00:00Z"));
        assert_eq!(s.start, utc("2027-03-26T23:00:00Z"));
        assert_eq!(s.end, utc("2027-03-28T22:00:00Z"));
    }

    #[test]
    fn kolkata_hours_start_at_half_past_the_utc_hour() {
        let w = month("Asia/Kolkata");
        let s = grid("1h", &w).slice_containing(utc("2026-11-10T10:07:00Z"));
        assert_eq!(s.start, utc("2026-11-10T09:30:00Z"));
        assert_eq!(s.end, utc("2026-11-10T10:30:00Z"));
        let day = grid("1d", &w).slice_containing(utc("2026-11-10T10:07:00Z"));
        assert_eq!(day.start, utc("2026-11-09T18:30:00Z"));
    }

    #[test]
    fn the_grain_divides_every_boundary() {
        let span = |from: &str, to: &str| (utc(from), utc(to));
        let (from, to) = span("2026-10-01T00:00:00Z", "2026-12-01T00:00:00Z");
        assert_eq!(grid("1d", &month("UTC")).aligned_grain(from, to), 86_400);
        assert_eq!(
            grid("1d", &month("Europe/Berlin")).aligned_grain(from, to),
            3_600
        );
        assert_eq!(
            grid("1d", &month("Asia/Kolkata")).aligned_grain(from, to),
            1_800
        );
        assert_eq!(
            grid("5m", &month("Asia/Kathmandu")).aligned_grain(from, to),
            300
        );
        assert_eq!(
            grid("16m", &month("Europe/Berlin")).aligned_grain(from, to),
            960 / 4
        );
        // Local mean time in Berlin was +0:53:28 before 1893.
        let (from, to) = span("1890-01-01T00:00:00Z", "1890-01-03T00:00:00Z");
        assert_eq!(
            grid("1d", &month("Europe/Berlin")).aligned_grain(from, to),
            60
        );
    }

    proptest::proptest! {
        #[test]
        fn grains_never_straddle_a_slice_boundary(
            secs in 0i64..4_102_444_800,
            zone in proptest::sample::select(vec!["UTC", "Europe/Berlin", "America/Santiago", "America/Havana", "Australia/Lord_Howe", "Asia/Kathmandu", "Asia/Kolkata"]),
            length in proptest::sample::select(vec!["1m", "5m", "15m", "16m", "1h", "2h", "1d"]),
        ) {
            let at = DateTime::from_timestamp(secs - secs.rem_euclid(60), 0).unwrap();
            let g = grid(length, &month(zone));
            let s = g.slice_containing(at);
            proptest::prop_assert!(s.contains(at), "{at} not in {s}");
            proptest::prop_assert_eq!(g.slice_containing(s.start), s);
            proptest::prop_assert_eq!(g.slice_containing(s.end).start, s.end);
            let grain = i64::try_from(g.aligned_grain(at - Duration::days(2), at)).unwrap();
            let bucket = DateTime::from_timestamp(secs - secs.rem_euclid(grain), 0).unwrap();
            proptest::prop_assert_eq!(g.slice_containing(bucket), s);
        }
    }
}
