//! The rules of maintenance agreement, window by window: notice, schedule, cap, acceptance and cancellation.

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

/// Every day, all day: any window with the notice is inside it.
fn always() -> Vec<ScheduleSlot> {
    vec![ScheduleSlot {
        days: [true; 7],
        from_minute: 0,
        to_minute: 1440,
    }]
}

fn capped(hours: u32) -> MaintenancePolicy {
    MaintenancePolicy {
        notice: Span::new(72, crate::quantity::SpanUnit::Hour).unwrap(),
        max_per_period: (hours > 0)
            .then(|| Span::new(hours * 60, crate::quantity::SpanUnit::Minute).unwrap()),
        schedule: always(),
    }
}

fn sundays_two_to_four() -> Vec<ScheduleSlot> {
    vec![ScheduleSlot {
        days: [false, false, false, false, false, false, true],
        from_minute: 120,
        to_minute: 240,
    }]
}

#[test]
fn without_the_customers_schedule_a_window_with_notice_is_only_proposed() {
    // Found in review: five 7-day windows announced with the notice
    // excluded a whole month with no one asking the customer.
    let policy = MaintenancePolicy {
        schedule: Vec::new(),
        ..capped(0)
    };
    let windows: Vec<_> = (0..5)
        .map(|i| {
            let start = utc("2026-11-01T00:00:00Z") + Duration::days(7 * i);
            Announced {
                key: i,
                period: Period {
                    start,
                    end: start + Duration::days(7),
                },
                announced_at: utc("2026-10-01T00:00:00Z"),
                accepted: false,
                cancelled: false,
            }
        })
        .collect();
    let judged = judge(&windows, &policy, &month());
    assert!(judged.iter().all(|j| j.standing == Standing::Proposed));
    assert!(excluded_periods(&judged).is_empty());
    assert!(Standing::Proposed.acceptable());
    // The customer accepts one: that one is excluded, whole.
    let mut some = windows.clone();
    some[2].accepted = true;
    let judged = judge(&some, &policy, &month());
    assert_eq!(excluded_periods(&judged), [some[2].period]);
}

#[test]
fn a_window_is_planned_only_wholly_inside_the_schedule_read_in_the_slas_zone() {
    let berlin = TimeWindow::Calendar {
        unit: crate::window::CalendarUnit::Month,
        time_zone: chrono_tz::Europe::Berlin,
    };
    let policy = MaintenancePolicy {
        schedule: sundays_two_to_four(),
        ..capped(4)
    };
    let announced = "2026-11-01T00:00:00Z";
    let windows = [
        // Sunday 15 November, 02:00-04:00 Berlin (CET, UTC+1).
        window(1, "2026-11-15T01:00:00Z", "2026-11-15T03:00:00Z", announced),
        // The same hours in UTC: 03:00-05:00 Berlin, past the slot.
        window(2, "2026-11-15T02:00:00Z", "2026-11-15T04:00:00Z", announced),
        // A Saturday at 02:00 Berlin.
        window(3, "2026-11-14T01:00:00Z", "2026-11-14T02:00:00Z", announced),
    ];
    let standings: Vec<_> = judge(&windows, &policy, &berlin)
        .iter()
        .map(|j| j.standing)
        .collect();
    assert_eq!(
        standings,
        [Standing::Planned, Standing::Proposed, Standing::Proposed]
    );
    // Summer time (CEST, UTC+2): the slot moves with the wall clock.
    let july = window(
        4,
        "2026-07-05T00:00:00Z",
        "2026-07-05T02:00:00Z",
        "2026-06-01T00:00:00Z",
    );
    assert_eq!(
        judge(&[july], &policy, &berlin)[0].standing,
        Standing::Planned
    );
    // 29 March 2026, clocks jump 02:00 -> 03:00: the slot is one hour,
    // 01:00-02:00 UTC, and a window of it is inside.
    let jump = window(
        5,
        "2026-03-29T01:00:00Z",
        "2026-03-29T02:00:00Z",
        "2026-03-01T00:00:00Z",
    );
    assert_eq!(
        judge(&[jump], &policy, &berlin)[0].standing,
        Standing::Planned
    );
    // Slots that meet across midnight are one stretch.
    let nights = vec![
        ScheduleSlot {
            days: [false, false, false, false, false, true, false],
            from_minute: 22 * 60,
            to_minute: 1440,
        },
        ScheduleSlot {
            days: [false, false, false, false, false, false, true],
            from_minute: 0,
            to_minute: 120,
        },
    ];
    let zone = chrono_tz::UTC;
    let across = period("2026-11-14T23:00:00Z", "2026-11-15T01:30:00Z");
    assert!(within_schedule(&nights, zone, across));
    let past = period("2026-11-14T23:00:00Z", "2026-11-15T02:30:00Z");
    assert!(!within_schedule(&nights, zone, past));
    assert!(!within_schedule(&[], zone, across));
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
    // The notice is checked first: a short-notice window inside the
    // schedule is an emergency all the same.
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
            max_per_period: Some(Span::new(minutes, crate::quantity::SpanUnit::Minute).unwrap()),
            ..self
        }
    }
}
