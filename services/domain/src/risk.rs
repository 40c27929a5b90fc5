//! In-period signals about a period still open: its expected volume, whether it is at risk, whether its budget is already gone, and the degrade level a gateway should apply.
//!
//! A *breach* is a closed period not met, and only that: it is the
//! contractual fact. While a period is open its numbers so far say little
//! on their own — at 99.9% the first failed request of a month misses the
//! target "so far" until a thousand more arrive — so the in-period signals
//! judge the events so far against the period's **expected volume**:
//!
//! ```text
//! E  = max(total, ⌈total × length / elapsed⌉)   the volume so far, extrapolated linearly over the period
//! A  = ⌊E × (1 − target)⌋                         bad events the whole period may hold
//! exhausted ⇔ bad > A                             the period can no longer be met at its expected volume
//! at risk   ⇔ bad + (E − total) × r > A           it will be missed if the rest fails at the recent rate r
//! ```
//!
//! where `r` is the share of bad events over a recent lookback (the
//! evaluator uses the longest burn-rate alert lookback: 3 days for a
//! 30-day window). With no events there is nothing to judge: no signal.
//! With few events the projection is as noisy as the traffic: one bad
//! request in a quiet first hour can put a period at risk, and it recovers
//! as good traffic follows (both are told).
//!
//! Degrade levels follow the SLA's [`DegradePolicy`]: level 1 when the burn
//! rate over the short lookback has stayed at or above the light threshold
//! for the policy's number of consecutive evaluated minutes (rounds that
//! evaluate the same minute again count once); level 2 when it
//! reaches the full threshold or the period's budget at its expected
//! volume is down to the policy's share or less. Each level is left as
//! soon as its condition no longer holds.

use chrono::Duration;

use crate::budget::Tally;
use crate::burn::BurnRate;
use crate::policy::DegradePolicy;
use crate::quantity::{PPM_PER_WHOLE, TargetPpm};

const PPM: u128 = PPM_PER_WHOLE as u128;

/// Where an open period is heading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outlook {
    /// `E`: events (or slices) the whole period is expected to hold.
    pub expected_total: u64,
    /// `A`: bad events the whole period may hold at that volume.
    pub allowed_bad: u64,
    /// Bad events the period would end with at the recent bad rate
    /// (rounded up).
    pub projected_bad: u64,
    pub at_risk: bool,
    pub exhausted: bool,
    /// The share of the expected period's budget still unspent, in ppm (0
    /// once spent); `None` when the expected period allows no bad event.
    pub remaining_ppm: Option<u32>,
}

impl Outlook {
    /// The outlook of a period `length` long, `elapsed` into it, with
    /// `so_far` counted and `recent` over the recent lookback; `None` with
    /// no events so far.
    pub fn of(
        target: TargetPpm,
        so_far: Tally,
        recent: Tally,
        elapsed: Duration,
        length: Duration,
    ) -> Option<Self> {
        if so_far.total == 0 {
            return None;
        }
        let length = u128::try_from(length.num_seconds().max(60)).unwrap_or(60);
        let elapsed = u128::try_from(elapsed.num_seconds().clamp(60, i64::MAX))
            .unwrap_or(60)
            .min(length);
        let total = u128::from(so_far.total);
        let expected = total.max((total * length).div_ceil(elapsed));
        let budget = u128::from(target.budget_ppm());
        let allowed = expected * budget / PPM;
        let bad = u128::from(so_far.bad());
        let still = expected - total;
        let (rb, rt) = (u128::from(recent.bad()), u128::from(recent.total));
        let (at_risk, projected) = if rt == 0 {
            (bad > allowed, bad)
        } else {
            (
                bad * rt + still * rb > allowed * rt,
                bad + (still * rb).div_ceil(rt),
            )
        };
        let allowed_micro = expected * budget;
        let remaining_ppm = (allowed_micro > 0).then(|| {
            let left = allowed_micro.saturating_sub(bad * PPM);
            u32::try_from(left * PPM / allowed_micro).unwrap_or(u32::MAX)
        });
        let clamp = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
        Some(Self {
            expected_total: clamp(expected),
            allowed_bad: clamp(allowed),
            projected_bad: clamp(projected),
            at_risk,
            exhausted: bad > allowed,
            remaining_ppm,
        })
    }
}

/// A gateway's degrade level: 0 none, 1 light, 2 full.
pub type DegradeLevel = u8;

/// The light-degrade streak after an evaluation whose short-lookback burn
/// rate is `short_burn`: one more when at or above the light threshold,
/// else back to 0. The streak counts evaluated minutes, not rounds: an
/// evaluation of the minute already evaluated (`advanced` false: the
/// watermark did not move) adds nothing, except to start a streak that
/// late data began.
pub fn light_streak(
    policy: &DegradePolicy,
    short_burn: BurnRate,
    before: u32,
    advanced: bool,
) -> u32 {
    if short_burn < BurnRate::from_milli(policy.light_burn_milli) {
        0
    } else if advanced || before == 0 {
        before.saturating_add(1)
    } else {
        before
    }
}

/// The degrade level for a short-lookback burn rate, the light streak
/// including this evaluation (see [`light_streak`]) and the outlook.
pub fn degrade_level(
    policy: &DegradePolicy,
    short_burn: BurnRate,
    streak: u32,
    outlook: Option<&Outlook>,
) -> DegradeLevel {
    let budget_low = outlook
        .and_then(|o| o.remaining_ppm)
        .is_some_and(|left| left <= policy.full_remaining_ppm);
    if short_burn >= BurnRate::from_milli(policy.full_burn_milli) || budget_low {
        2
    } else if streak >= policy.light_evaluations {
        1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(t: &str) -> TargetPpm {
        TargetPpm::parse(t).unwrap()
    }

    fn tally(good: u64, total: u64) -> Tally {
        Tally::new(good, total).unwrap()
    }

    const MONTH: Duration = Duration::days(30);

    #[test]
    fn the_first_failure_of_a_month_is_no_risk() {
        // The month's first minute: 500 requests, one failed. The recent
        // lookback (three days, reaching into the last month) failed at
        // 0.02%. The month is expected to hold 21.6 million, of which
        // 21,600 may fail; the rest at 0.02% adds about 4,320.
        let o = Outlook::of(
            target("99.9%"),
            tally(499, 500),
            tally(999_800, 1_000_000),
            Duration::minutes(1),
            MONTH,
        )
        .unwrap();
        assert_eq!((o.expected_total, o.allowed_bad), (21_600_000, 21_600));
        assert_eq!(o.projected_bad, 1 + 4_320);
        assert!(!o.at_risk && !o.exhausted);
        // The period-to-date verdict misses (1 bad, 0.5 allowed): the old
        // rule called this a breach.
        assert!(!tally(499, 500).meets(target("99.9%")));
        assert_eq!(o.remaining_ppm, Some(999_953));
    }

    #[test]
    fn a_bad_rate_that_would_spend_the_budget_is_at_risk_and_recovers() {
        // Ten days in, 100,000 events, 50 bad; the last three days failed
        // at 0.2%: 200,000 more at that rate add 400 bad, over 300.
        let o = Outlook::of(
            target("99.9%"),
            tally(99_950, 100_000),
            tally(29_940, 30_000),
            Duration::days(10),
            MONTH,
        )
        .unwrap();
        assert_eq!(o.expected_total, 300_000);
        assert_eq!(o.projected_bad, 50 + 400);
        assert!(o.at_risk && !o.exhausted);
        // The recent rate back to 0.05%: 50 + 100 ≤ 300.
        let calm = Outlook::of(
            target("99.9%"),
            tally(99_950, 100_000),
            tally(29_985, 30_000),
            Duration::days(10),
            MONTH,
        )
        .unwrap();
        assert!(!calm.at_risk);
    }

    #[test]
    fn exhausted_means_the_expected_period_cannot_be_met() {
        let o = Outlook::of(
            target("99%"),
            tally(9_000, 10_000),
            tally(100, 100),
            Duration::days(15),
            MONTH,
        )
        .unwrap();
        // E = 20,000, A = 200 < 1,000 bad.
        assert!(o.exhausted && o.at_risk);
        assert_eq!(o.remaining_ppm, Some(0));
        // No events: nothing to judge, nothing exhausted.
        assert_eq!(
            Outlook::of(
                target("99%"),
                Tally::default(),
                Tally::default(),
                Duration::days(1),
                MONTH
            ),
            None
        );
    }

    #[test]
    fn at_the_end_the_outlook_is_the_verdict() {
        // Elapsed = length: E is the total, and exhausted is "not met".
        for (good, total) in [(999, 1_000), (998, 1_000), (1_000, 1_000)] {
            let t = tally(good, total);
            let o = Outlook::of(target("99.9%"), t, t, MONTH, MONTH).unwrap();
            assert_eq!(o.exhausted, !t.meets(target("99.9%")), "{good}/{total}");
        }
    }

    #[test]
    fn degrade_levels_follow_the_policy_up_and_down() {
        let policy = DegradePolicy::default();
        let burn = BurnRate::from_milli;
        // Light needs three evaluations in a row at 2.0 or more.
        let mut streak = 0;
        let mut levels = Vec::new();
        for b in [2_000, 2_500, 2_000, 1_999, 2_000] {
            streak = light_streak(&policy, burn(b), streak, true);
            levels.push(degrade_level(&policy, burn(b), streak, None));
        }
        assert_eq!(levels, [0, 0, 1, 0, 0]);
        // Minutes, not rounds: the same minute evaluated again adds nothing
        // (but starts a streak that late data began).
        let again = light_streak(&policy, burn(2_000), 0, false);
        assert_eq!(again, 1);
        assert_eq!(light_streak(&policy, burn(2_000), again, false), 1);
        assert_eq!(light_streak(&policy, burn(1_000), 2, false), 0);
        // Full at 5.0 at once, or with 5% of the budget left.
        assert_eq!(degrade_level(&policy, burn(5_000), 1, None), 2);
        let low = Outlook {
            expected_total: 1_000,
            allowed_bad: 100,
            projected_bad: 95,
            at_risk: false,
            exhausted: false,
            remaining_ppm: Some(50_000),
        };
        assert_eq!(degrade_level(&policy, burn(0), 0, Some(&low)), 2);
        let ok = Outlook {
            remaining_ppm: Some(50_001),
            ..low
        };
        assert_eq!(degrade_level(&policy, burn(0), 0, Some(&ok)), 0);
    }
}
