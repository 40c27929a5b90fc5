//! When each version of an SLA takes effect: a contract change takes effect at the next period, never in the one it was made in.
//!
//! Each version takes effect at the end of the period, in the window of
//! the version in force then, in which it was applied (at once after a
//! rolling window, which has no periods), and every period is judged by the
//! version in force at its start. The first version is in force from the
//! start. A version overtaken by a newer one before it took effect judges
//! nothing.

use chrono::{DateTime, Utc};

use crate::window::TimeWindow;

/// When each version takes effect, for versions oldest first given as
/// (window, applied at): `None` for the first (in force from the start).
pub fn effective_from(versions: &[(TimeWindow, DateTime<Utc>)]) -> Vec<Option<DateTime<Utc>>> {
    let mut out: Vec<Option<DateTime<Utc>>> = Vec::with_capacity(versions.len());
    for (i, (_, applied)) in versions.iter().enumerate() {
        if i == 0 {
            out.push(None);
            continue;
        }
        let prior = in_force(&out, *applied);
        let effective = match versions[prior].0 {
            TimeWindow::Rolling { .. } => *applied,
            window => window.period_containing(*applied).end,
        };
        out.push(Some(effective));
    }
    out
}

/// The index of the version in force at `at`: the newest that took effect
/// by then.
pub fn in_force(effective: &[Option<DateTime<Utc>>], at: DateTime<Utc>) -> usize {
    effective
        .iter()
        .rposition(|e| e.is_none_or(|from| from <= at))
        .unwrap_or(0)
}
