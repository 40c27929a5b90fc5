//! When a failed delivery is tried again: the Standard Webhooks schedule
//! with jitter, or later when the receiver asks (`Retry-After`).

use std::time::Duration;

use chrono::{DateTime, Utc};

/// The delay before each attempt: the first at once, then 5 s, 5 min,
/// 30 min, 2 h, 5 h, 10 h and 10 h (Standard Webhooks' schedule).
pub const SCHEDULE: [Duration; 8] = [
    Duration::ZERO,
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(10 * 3600),
];

/// The longest a `Retry-After` may push an attempt back.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The delay before the attempt after `attempt` (counted from 1) failed,
/// ±10% jitter, at least `retry_after` when the receiver sent one; `None`
/// when the schedule is exhausted.
pub fn next_delay(attempt: i32, retry_after: Option<Duration>) -> Option<Duration> {
    let scheduled = *SCHEDULE.get(usize::try_from(attempt).ok()?)?;
    let jitter = 0.9 + 0.2 * rand::random::<f64>();
    let delay = scheduled.mul_f64(jitter);
    Some(match retry_after {
        Some(asked) => delay.max(asked.min(MAX_RETRY_AFTER)),
        None => delay,
    })
}

/// A `Retry-After` value: seconds, or an HTTP date.
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = DateTime::parse_from_rfc2822(value)
        .ok()?
        .with_timezone(&Utc);
    (at - now).to_std().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_grows_with_jitter_and_ends() {
        let after_first = next_delay(1, None).unwrap();
        assert!(
            after_first >= Duration::from_millis(4500)
                && after_first <= Duration::from_millis(5500)
        );
        let after_seventh = next_delay(7, None).unwrap();
        assert!(after_seventh >= Duration::from_secs(9 * 3600));
        assert_eq!(next_delay(8, None), None);
        assert_eq!(next_delay(0, None), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_pushes_back_within_a_bound() {
        let asked = next_delay(1, Some(Duration::from_secs(60))).unwrap();
        assert_eq!(asked, Duration::from_secs(60));
        let capped = next_delay(1, Some(Duration::from_secs(10 * 86_400))).unwrap();
        assert_eq!(capped, MAX_RETRY_AFTER);
        let now = DateTime::parse_from_rfc3339("2015-10-21T07:28:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:30:00 GMT", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }
}
