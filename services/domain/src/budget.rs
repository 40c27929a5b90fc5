//! Error budgets: how many bad events (or slices) an objective may have over a period, how many it has used, and how many remain — exact, in integers.
//!
//! For `total` counted events and a target `t` ppm, the budget is
//! `total × (10⁶ − t) / 10⁶` bad events. The objective is met when
//! `bad ≤ budget`; since `bad` is a whole number, that holds exactly when
//! `bad ≤ ⌊budget⌋`, so the whole-event figures shown to people
//! ([`ErrorBudget::allowed_bad`], [`ErrorBudget::remaining`]) give the same
//! verdict as the exact rational comparison.

use crate::quantity::{PPM_PER_WHOLE, TargetPpm};

const PPM: u128 = PPM_PER_WHOLE as u128;

/// Good and total counts of one objective over some stretch of time, with
/// what was left out, so a verdict can be explained from its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Tally {
    /// Counted events (or slices) that were good.
    pub good: u64,
    /// Counted events (or slices), good or bad.
    pub total: u64,
}

impl Tally {
    /// A tally, refusing more good than total.
    pub fn new(good: u64, total: u64) -> Option<Self> {
        (good <= total).then_some(Self { good, total })
    }

    /// Bad events: total − good.
    pub const fn bad(&self) -> u64 {
        self.total.saturating_sub(self.good)
    }

    /// Adds another tally (saturating: counts beyond 2⁶⁴ are not reached).
    #[must_use]
    pub const fn plus(self, other: Tally) -> Tally {
        Tally {
            good: self.good.saturating_add(other.good),
            total: self.total.saturating_add(other.total),
        }
    }

    /// The share of good events in ppm, rounded down; `None` with no events.
    pub fn compliance_ppm(&self) -> Option<u32> {
        if self.total == 0 {
            return None;
        }
        // good ≤ total, so the quotient is at most 10⁶.
        Some((u128::from(self.good) * PPM / u128::from(self.total)) as u32)
    }

    /// Whether at least `target` of the events are good:
    /// `good × 10⁶ ≥ target × total`. An empty tally meets every target
    /// (nothing was promised about no traffic).
    pub fn meets(&self, target: TargetPpm) -> bool {
        u128::from(self.good) * PPM >= u128::from(target.ppm()) * u128::from(self.total)
    }
}

impl std::ops::Add for Tally {
    type Output = Tally;
    fn add(self, other: Tally) -> Tally {
        self.plus(other)
    }
}

impl std::iter::Sum for Tally {
    fn sum<I: Iterator<Item = Tally>>(iter: I) -> Tally {
        iter.fold(Tally::default(), Tally::plus)
    }
}

/// The error budget of an objective over a period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorBudget {
    pub target: TargetPpm,
    pub tally: Tally,
}

impl ErrorBudget {
    pub const fn new(target: TargetPpm, tally: Tally) -> Self {
        Self { target, tally }
    }

    /// The budget in millionths of an event: `total × (10⁶ − target)`.
    /// Exact; the unit keeps it an integer.
    pub fn allowed_micro(&self) -> u128 {
        u128::from(self.tally.total) * u128::from(self.target.budget_ppm())
    }

    /// The whole number of bad events allowed: `⌊total × (10⁶ − target) / 10⁶⌋`.
    pub fn allowed_bad(&self) -> u64 {
        // ≤ total, so it fits.
        (self.allowed_micro() / PPM) as u64
    }

    /// Bad events so far: the budget consumed.
    pub const fn consumed(&self) -> u64 {
        self.tally.bad()
    }

    /// Whole bad events still allowed; negative once the budget is overspent.
    pub fn remaining(&self) -> i128 {
        i128::from(self.allowed_bad()) - i128::from(self.consumed())
    }

    /// The share of the budget consumed, in ppm, rounded down; above 10⁶
    /// when overspent. `None` with no events (no budget to speak of).
    pub fn consumed_ppm(&self) -> Option<u64> {
        let allowed = self.allowed_micro();
        if allowed == 0 {
            return None;
        }
        // bad × 10⁶ / allowed is the consumed fraction; × 10⁶ for ppm.
        // bad ≤ 2⁶⁴, so bad × 10¹² < 2¹⁰⁴.
        let ppm = u128::from(self.consumed()) * PPM * PPM / allowed;
        Some(u64::try_from(ppm).unwrap_or(u64::MAX))
    }

    /// The share of the budget left, in ppm, rounded down; 0 once spent.
    pub fn remaining_ppm(&self) -> Option<u32> {
        self.consumed_ppm()
            .map(|c| PPM_PER_WHOLE.saturating_sub(u32::try_from(c).unwrap_or(u32::MAX)))
    }

    /// Whether the objective is met: `bad ≤ budget`, the same as
    /// [`Tally::meets`].
    pub fn met(&self) -> bool {
        u128::from(self.consumed()) * PPM <= self.allowed_micro()
    }

    /// Whether the budget is used up: no bad event may be added without
    /// missing the objective. With no events there is no budget to exhaust.
    pub fn exhausted(&self) -> bool {
        self.tally.total > 0 && self.remaining() <= 0 && self.consumed() > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn target(text: &str) -> TargetPpm {
        TargetPpm::parse(text).unwrap()
    }

    #[test]
    fn a_budget_in_whole_events() {
        // 99.9% of 1,000,000 requests: 1000 may fail.
        let b = ErrorBudget::new(target("99.9%"), Tally::new(999_100, 1_000_000).unwrap());
        assert_eq!(b.allowed_bad(), 1000);
        assert_eq!(b.consumed(), 900);
        assert_eq!(b.remaining(), 100);
        assert_eq!(b.consumed_ppm(), Some(900_000));
        assert_eq!(b.remaining_ppm(), Some(100_000));
        assert!(b.met());
        assert!(!b.exhausted());
    }

    #[test]
    fn exactly_spent_is_met_and_exhausted_one_more_is_a_miss() {
        let spent = ErrorBudget::new(target("99%"), Tally::new(990, 1000).unwrap());
        assert!(spent.met());
        assert!(spent.exhausted());
        assert_eq!(spent.consumed_ppm(), Some(1_000_000));
        let over = ErrorBudget::new(target("99%"), Tally::new(989, 1000).unwrap());
        assert!(!over.met());
        assert_eq!(over.remaining(), -1);
        assert_eq!(over.remaining_ppm(), Some(0));
    }

    #[test]
    fn fractional_budgets_round_down_without_changing_the_verdict() {
        // 99.9% of 1500: 1.5 events allowed; one bad is fine, two are not.
        let one = ErrorBudget::new(target("99.9%"), Tally::new(1499, 1500).unwrap());
        assert_eq!(one.allowed_bad(), 1);
        assert!(one.met());
        let two = ErrorBudget::new(target("99.9%"), Tally::new(1498, 1500).unwrap());
        assert!(!two.met());
        assert_eq!(two.remaining(), -1);
    }

    #[test]
    fn no_events_no_budget() {
        let b = ErrorBudget::new(target("99.9%"), Tally::default());
        assert!(b.met());
        assert!(!b.exhausted());
        assert_eq!(b.consumed_ppm(), None);
        assert_eq!(Tally::default().compliance_ppm(), None);
    }

    proptest! {
        #[test]
        fn met_agrees_with_compliance_and_whole_events(
            total in 0u64..10_000_000, bad_share in 0u64..=1000, t in 1u32..1_000_000
        ) {
            let bad = total * bad_share / 1000;
            let tally = Tally::new(total - bad, total).unwrap();
            let b = ErrorBudget::new(TargetPpm::from_ppm(t).unwrap(), tally);
            prop_assert_eq!(b.met(), tally.meets(b.target));
            prop_assert_eq!(b.met(), b.remaining() >= 0);
            if let Some(c) = b.consumed_ppm() {
                // Rounded down: a met budget never shows more than 100% used,
                // and more than 100% shown is always a miss.
                if b.met() { prop_assert!(c <= 1_000_000); }
                if c > 1_000_000 { prop_assert!(!b.met()); }
            }
        }

        #[test]
        fn huge_counts_do_not_overflow(good in 0u64..=u64::MAX, extra in 0u64..=u64::MAX, t in 1u32..1_000_000) {
            let total = good.saturating_add(extra);
            let b = ErrorBudget::new(TargetPpm::from_ppm(t).unwrap(), Tally::new(good, total).unwrap());
            let _ = (b.consumed_ppm(), b.remaining(), b.met(), b.tally.compliance_ppm());
        }

        #[test]
        fn tallies_add_like_their_counts(a in 0u64..1_000_000, b in 0u64..1_000_000, c in 0u64..1_000_000, d in 0u64..1_000_000) {
            let x = Tally::new(a.min(b), a.max(b)).unwrap();
            let y = Tally::new(c.min(d), c.max(d)).unwrap();
            let s = x + y;
            prop_assert_eq!(s.good, x.good + y.good);
            prop_assert_eq!(s.bad(), x.bad() + y.bad());
        }
    }
}
