//! The weighted composite of an SLA's objectives.
//!
//! When any objective of an SLA carries a weight, the SLA has a composite
//! and every objective takes part in it (an objective without a weight
//! weighs 1, as in OpenSLO). The composite combines error budgets, not raw
//! compliance, so that a 95% objective cannot hide a 99.9% one's breach:
//!
//! ```text
//! for objective i with weight wᵢ, good gᵢ of total nᵢ (events, or slices) and target tᵢ:
//!     consumedᵢ = ((nᵢ − gᵢ) / nᵢ) / (1 − tᵢ)           share of its error budget used
//! composite consumed  C = Σ wᵢ · consumedᵢ / Σ wᵢ       objectives with nᵢ = 0 are left out
//! composite compliance  = 1 − C                          1 = untouched budget, ≤ 0 = spent
//! the SLA's composite is met when C ≤ 1
//! ```
//!
//! Each `consumedᵢ` is computed in units of 10⁻¹² with integers (rounded
//! down), so the result is exact to 10⁻¹² and never depends on floats.

use crate::quantity::{CompositeWeight, PPM_PER_WHOLE, TargetPpm};

/// One objective's counts over a period, for the composite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectiveCounts {
    pub weight: CompositeWeight,
    pub target: TargetPpm,
    /// Good events (or good slices).
    pub good: u64,
    /// All counted events (or slices).
    pub total: u64,
}

/// The composite over a period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompositeResult {
    /// C × 10¹²: 10¹² means the weighted error budget is exactly spent.
    pub consumed_pico: u128,
    /// Whether C ≤ 1; `None` when no objective had any data.
    pub met: Option<bool>,
}

const PICO: u128 = 1_000_000_000_000;

impl CompositeResult {
    /// C as a float, for charts.
    pub fn consumed(&self) -> f64 {
        self.consumed_pico as f64 / PICO as f64
    }
}

/// Combines objectives' counts as documented in this module.
pub fn combine(parts: &[ObjectiveCounts]) -> CompositeResult {
    let mut weighted: u128 = 0;
    let mut weights: u128 = 0;
    for part in parts.iter().filter(|p| p.total > 0) {
        let bad = u128::from(part.total.saturating_sub(part.good));
        let budget = u128::from(PPM_PER_WHOLE - part.target.ppm());
        // bad/total / (budget/10⁶) in 10⁻¹²: bad · 10¹⁸ / (total · budget).
        // bad ≤ 1.8e19 so bad · 10¹⁸ < 2e37 fits in u128.
        let consumed = bad * 1_000_000 * PICO / (u128::from(part.total) * budget);
        weighted += u128::from(part.weight.micros()) * consumed;
        weights += u128::from(part.weight.micros());
    }
    if weights == 0 {
        return CompositeResult {
            consumed_pico: 0,
            met: None,
        };
    }
    let consumed_pico = weighted / weights;
    CompositeResult {
        consumed_pico,
        met: Some(weighted <= weights * PICO),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(weight: &str, target: &str, good: u64, total: u64) -> ObjectiveCounts {
        ObjectiveCounts {
            weight: CompositeWeight::parse(weight).unwrap(),
            target: TargetPpm::parse(target).unwrap(),
            good,
            total,
        }
    }

    #[test]
    fn budget_exactly_spent_is_met() {
        let r = combine(&[part("1", "99.9%", 999, 1000)]);
        assert_eq!(r.consumed_pico, PICO);
        assert_eq!(r.met, Some(true));
    }

    #[test]
    fn a_lax_objective_cannot_hide_a_strict_breach() {
        // 99.9% objective at 99.0% burns 10× its budget; the 95% one is perfect.
        let r = combine(&[part("1", "99.9%", 990, 1000), part("1", "95%", 1000, 1000)]);
        assert_eq!(r.consumed_pico, 5 * PICO);
        assert_eq!(r.met, Some(false));
    }

    #[test]
    fn weights_shift_the_balance() {
        let r = combine(&[part("3", "99%", 985, 1000), part("1", "99%", 1000, 1000)]);
        // (3 · 1.5 + 1 · 0) / 4 = 1.125
        assert_eq!(r.consumed_pico, 1_125_000_000_000);
        assert_eq!(combine(&[part("1", "99%", 0, 0)]).met, None);
    }
}
