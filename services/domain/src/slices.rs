//! Time slices judged: the mean of their good ratios (`RatioTimeslices` budgeting), exact, as a tally in millionths of a slice; and a time-slice objective's tally from its slices' counts ([`slice_objective_tally`]).
//!
//! An objective budgeted by `RatioTimeslices` promises that the mean of
//! its slices' ratios `goodᵢ / totalᵢ` (empty slices left out) reaches the
//! target. With `k` slices and `S = Σ goodᵢ / totalᵢ`, the evaluator keeps
//!
//! ```text
//! tally.good  = ⌊10⁶ · S⌋        millionths of a slice that were good
//! tally.total = 10⁶ · k          millionths of a slice
//! ```
//!
//! and every verdict stays exact: the target `t` ppm is met when
//! `S / k ≥ t / 10⁶`, i.e. `10⁶ · S ≥ t · k`, and since `t · k` is a whole
//! number that holds exactly when `⌊10⁶ · S⌋ ≥ t · k` — which is what
//! [`Tally::meets`] checks of this tally. Likewise its
//! [`Tally::compliance_ppm`] is `⌊10⁶ · S / k⌋`, the mean rounded down, and
//! the error budget is counted in millionths of a slice.
//!
//! `⌊10⁶ · S⌋` is computed without floats: slices of equal total are
//! summed first, the whole parts `⌊10⁶ · Gₙ / n⌋` add up in integers, and
//! the floor of the remaining fractions `Σ rₙ / n` (less than one per
//! distinct total) is read from a 64-bit fixed-point sum whose error is
//! below one unit per term. Only when that error could straddle a whole
//! number is the sum of fractions compared exactly over the least common
//! multiple of the totals, in big integers.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use num_bigint::BigUint;
use num_integer::Integer;

use crate::budget::Tally;
use crate::objective::{SliceBudgeting, TimeSlicesSli};
use crate::policy::NoDataSlices;
use crate::slice_grid::SliceGrid;
use crate::window::Period;

const MICRO: u128 = 1_000_000;

/// The non-empty slices of an objective over some stretch, for the mean
/// of their ratios.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SliceRatios {
    /// Per slice total, the sum of the good counts of the slices with
    /// that total: Σ gᵢ/nᵢ = Σₙ Gₙ/n.
    good_by_total: BTreeMap<u64, u128>,
    slices: u64,
}

impl SliceRatios {
    /// Adds a slice; an empty slice (no counted event) weighs nothing.
    /// Good counts above the total are taken as the total.
    pub fn add(&mut self, good: u64, total: u64) {
        if total == 0 {
            return;
        }
        *self.good_by_total.entry(total).or_default() += u128::from(good.min(total));
        self.slices += 1;
    }

    /// Non-empty slices.
    pub const fn slices(&self) -> u64 {
        self.slices
    }

    /// `⌊10⁶ · Σ goodᵢ / totalᵢ⌋`, exactly.
    pub fn micro_good(&self) -> u128 {
        let mut whole: u128 = 0;
        // (r, n) with 10⁶·Gₙ = q·n + r, 0 ≤ r < n.
        let mut fractions: Vec<(u128, u128)> = Vec::new();
        for (&n, &g) in &self.good_by_total {
            let n = u128::from(n);
            // g ≤ slices · n < 2⁶⁴ · 2⁶⁴ is not reached: slices are at most
            // a year of minutes, so 10⁶ · g stays far below 2¹²⁸.
            let scaled = g.saturating_mul(MICRO);
            whole += scaled / n;
            let r = scaled % n;
            if r != 0 {
                fractions.push((r, n));
            }
        }
        whole + floor_of_fractions(&fractions)
    }

    /// The mean as a tally in millionths of a slice (see the module).
    pub fn tally(&self) -> Tally {
        let total = self.slices.saturating_mul(1_000_000);
        let good = u64::try_from(self.micro_good())
            .unwrap_or(u64::MAX)
            .min(total);
        Tally { good, total }
    }
}

/// `⌊Σ r/n⌋` for fractions `0 < r < n < 2⁶⁴`.
fn floor_of_fractions(fractions: &[(u128, u128)]) -> u128 {
    if fractions.is_empty() {
        return 0;
    }
    // Each term ⌊r·2⁶⁴/n⌋ is below the true r·2⁶⁴/n by less than 1, so the
    // true sum, scaled by 2⁶⁴, lies in [approx, approx + m).
    let approx: u128 = fractions.iter().map(|&(r, n)| (r << 64) / n).sum();
    let m = fractions.len() as u128;
    let low = approx >> 64;
    let high = (approx + m - 1) >> 64;
    if low == high {
        return low;
    }
    // The error straddles the whole number `high`: decide Σ r/n ≥ high
    // exactly, as Σ r·(L/n) ≥ high·L with L the lcm of the denominators.
    let lcm = fractions
        .iter()
        .fold(BigUint::from(1u32), |l, &(_, n)| l.lcm(&BigUint::from(n)));
    let sum: BigUint = fractions
        .iter()
        .map(|&(r, n)| BigUint::from(r) * (&lcm / BigUint::from(n)))
        .sum();
    if sum >= BigUint::from(high) * &lcm {
        high
    } else {
        low
    }
}

/// The tally of a time-slice objective over `range` from its slices'
/// counts (`slices`, by slice start on `grid`, maintenance already taken
/// out): each slice judged by [`TimeSlicesSli::slice_is_good`] or, for
/// `RatioTimeslices`, its ratio; and each whole slice in the range with no
/// counted event and not wholly in maintenance (`windows`) counted as the
/// SLA's `policy.noData.slices` says (the one still running at `to` is not
/// judged yet). The one rule the evaluator's close and an auditor's recount
/// from the log judge slices by.
pub fn slice_objective_tally(
    sli: &TimeSlicesSli,
    no_data: NoDataSlices,
    grid: &SliceGrid,
    windows: &[Period],
    range: Period,
    slices: &BTreeMap<DateTime<Utc>, Tally>,
) -> Tally {
    let mut missing = 0u64;
    if no_data != NoDataSlices::Ignored {
        let mut slice = grid.slice_containing(range.start);
        while slice.start < range.end && slice.end <= range.end {
            let empty = slices.get(&slice.start).is_none_or(|t| t.total == 0);
            let maintained = windows
                .iter()
                .any(|w| w.start <= slice.start && w.end >= slice.end);
            if empty && !maintained {
                missing += 1;
            }
            slice = grid.slice_containing(slice.end);
        }
    }
    let missing_good = u64::from(no_data == NoDataSlices::Good);
    if sli.budgeting == SliceBudgeting::RatioTimeslices {
        let mut ratios = SliceRatios::default();
        for t in slices.values() {
            ratios.add(t.good, t.total);
        }
        for _ in 0..missing {
            ratios.add(missing_good, 1);
        }
        return ratios.tally();
    }
    let mut tally = Tally::default();
    for t in slices.values() {
        if let Some(good) = sli.slice_is_good(t.good, t.total) {
            tally.total += 1;
            tally.good += u64::from(good);
        }
    }
    tally.total += missing;
    tally.good += missing * missing_good;
    tally
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quantity::TargetPpm;
    use proptest::prelude::*;

    /// The reference: Σ gᵢ·(L/nᵢ) over L, all in u128 (small totals only).
    fn reference(slices: &[(u64, u64)]) -> u128 {
        let lcm = slices
            .iter()
            .filter(|s| s.1 > 0)
            .fold(1u128, |l, &(_, n)| l.lcm(&u128::from(n)));
        let sum: u128 = slices
            .iter()
            .filter(|s| s.1 > 0)
            .map(|&(g, n)| u128::from(g) * (lcm / u128::from(n)))
            .sum();
        sum * MICRO / lcm
    }

    fn ratios(slices: &[(u64, u64)]) -> SliceRatios {
        let mut r = SliceRatios::default();
        for &(g, n) in slices {
            r.add(g, n);
        }
        r
    }

    #[test]
    fn a_sum_of_fractions_that_is_a_whole_number_is_not_rounded_below_it() {
        // 1/3 + 4/6 = 1 exactly: the fixed-point sum lands just under 1.
        let r = ratios(&[(1, 3), (4, 6)]);
        assert_eq!(r.micro_good(), 1_000_000);
        // Mean 50%: meets 50%, misses 50.0001%.
        let t = r.tally();
        assert_eq!(
            t,
            Tally {
                good: 1_000_000,
                total: 2_000_000
            }
        );
        assert!(t.meets(TargetPpm::parse("50%").unwrap()));
        assert!(!t.meets(TargetPpm::parse("50.0001%").unwrap()));
        assert_eq!(t.compliance_ppm(), Some(500_000));
    }

    #[test]
    fn the_mean_of_ratios_is_not_the_ratio_of_sums() {
        // 1 of 1 and 0 of 99: mean 50%, although 1 of 100 events were good.
        let t = ratios(&[(1, 1), (0, 99), (0, 0)]).tally();
        assert_eq!(t.compliance_ppm(), Some(500_000));
        assert_eq!(t.total, 2_000_000, "the empty slice weighs nothing");
    }

    proptest! {
        #[test]
        fn exact_against_a_common_denominator(
            slices in prop::collection::vec((0u64..=24, 0u64..=24), 0..300)
        ) {
            let slices: Vec<(u64, u64)> = slices.into_iter().map(|(g, n)| (g.min(n), n)).collect();
            let r = ratios(&slices);
            prop_assert_eq!(r.micro_good(), reference(&slices));
            let t = r.tally();
            // The verdict of the tally is the exact comparison of the mean.
            let k = u128::from(r.slices());
            for ppm in [1u32, 333_333, 500_000, 666_667, 900_000, 999_999] {
                let target = TargetPpm::from_ppm(ppm).unwrap();
                let lcm = slices.iter().filter(|s| s.1 > 0).fold(1u128, |l, &(_, n)| l.lcm(&u128::from(n)));
                let sum: u128 = slices.iter().filter(|s| s.1 > 0).map(|&(g, n)| u128::from(g) * (lcm / u128::from(n))).sum();
                // mean ≥ t/10⁶  ⟺  10⁶ · sum ≥ t · k · lcm
                let exact = sum * MICRO >= u128::from(ppm) * k * lcm;
                prop_assert_eq!(t.meets(target), exact);
            }
        }

        #[test]
        fn whole_sums_of_fractions_are_exact(
            pairs in prop::collection::vec((1u64..=1_000, 0u64..=1_000), 1..=3)
        ) {
            // a/n + 2(n − a)/(2n) = 1 for each pair: the fractional parts
            // sum to a whole number, where the fixed-point sum falls short.
            let mut slices = Vec::new();
            for (n, a) in pairs {
                let a = a.min(n);
                slices.push((a, n));
                slices.push((2 * (n - a), 2 * n));
            }
            let r = ratios(&slices);
            prop_assert_eq!(r.micro_good(), reference(&slices));
            prop_assert_eq!(r.micro_good() % 1_000_000, 0);
        }

        #[test]
        fn large_totals_do_not_overflow(
            slices in prop::collection::vec((0u64..=u64::MAX >> 8, 1u64..=u64::MAX >> 8), 1..50)
        ) {
            let slices: Vec<(u64, u64)> = slices.into_iter().map(|(g, n)| (g.min(n), n)).collect();
            let t = ratios(&slices).tally();
            prop_assert!(t.good <= t.total);
        }
    }
}
