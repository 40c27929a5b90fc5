//! Burn rates, time to budget exhaustion, and the multiwindow multi-burn-rate alert rules of the SRE workbook, compared exactly.
//!
//! The burn rate over a stretch of time is how fast the error budget is
//! being spent there, relative to spending it exactly over the SLO window:
//!
//! ```text
//! burn = (bad / total) / (1 − target)        1 = the budget lasts exactly the window
//! ```
//!
//! A [`BurnRate`] keeps that as a fraction of two integers, so comparing it
//! with an alert threshold such as 14.4 never depends on floats.
//!
//! The alert rules are those of *The Site Reliability Workbook*, chapter 5
//! ("Alerting on SLOs", multiwindow, multi-burn-rate alerts), for a 30-day
//! window: page when 2% of the budget burns in 1 hour (burn 14.4, checked
//! over 1 h and 5 m) or 5% in 6 hours (burn 6, over 6 h and 30 m); open a
//! ticket when 10% burns in 3 days (burn 1, over 3 d and 6 h). For other
//! window lengths `W` the budget shares and lookbacks stay and the burn
//! rate becomes `share × W / long window` (28 days: 13.44, 5.6, 0.933…),
//! as Sloth and Pyrra do. A lookback longer than the window itself is
//! shrunk to the window (short window 1/12 of it, as in every workbook
//! rule), its threshold then being the share itself.

use std::cmp::Ordering;
use std::fmt;

use chrono::Duration;

use crate::budget::{ErrorBudget, Tally};
use crate::quantity::{PPM_PER_WHOLE, TargetPpm};

const PPM: u128 = PPM_PER_WHOLE as u128;

/// How fast an error budget burns: an exact non-negative fraction.
#[derive(Debug, Clone, Copy)]
pub struct BurnRate {
    num: u128,
    den: u128,
}

impl BurnRate {
    /// The burn rate of `tally` against `target`: `bad × 10⁶ / (total ×
    /// (10⁶ − target))`. With no events nothing burns: 0.
    pub fn of(tally: Tally, target: TargetPpm) -> Self {
        if tally.total == 0 {
            return Self::ZERO;
        }
        Self {
            num: u128::from(tally.bad()) * PPM,
            den: u128::from(tally.total) * u128::from(target.budget_ppm()),
        }
    }

    pub const ZERO: BurnRate = BurnRate { num: 0, den: 1 };

    /// `num / den`; `None` for a zero denominator.
    pub const fn from_fraction(num: u128, den: u128) -> Option<Self> {
        if den == 0 {
            None
        } else {
            Some(Self { num, den })
        }
    }

    /// A burn rate in thousandths (`14_400` is 14.4).
    pub const fn from_milli(milli: u64) -> Self {
        Self {
            num: milli as u128,
            den: 1000,
        }
    }

    /// The rate in thousandths, rounded down (for storage and display).
    pub fn milli(&self) -> u64 {
        u64::try_from(self.num.saturating_mul(1000) / self.den).unwrap_or(u64::MAX)
    }

    /// For charts only; verdicts compare [`BurnRate`]s exactly.
    pub fn as_f64(&self) -> f64 {
        self.num as f64 / self.den as f64
    }

    pub const fn numerator(&self) -> u128 {
        self.num
    }

    pub const fn denominator(&self) -> u128 {
        self.den
    }
}

/// Compares `a/b` with `c/d` exactly, without overflow, by comparing the
/// continued-fraction expansions term by term.
fn compare_fractions(mut a: u128, mut b: u128, mut c: u128, mut d: u128) -> Ordering {
    loop {
        let (qa, ra) = (a / b, a % b);
        let (qc, rc) = (c / d, c % d);
        let order = match qa.cmp(&qc) {
            Ordering::Equal => match (ra == 0, rc == 0) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                // ra/b vs rc/d orders like d/rc vs b/ra (reciprocals
                // swap sides), whose terms are again whole numbers.
                (false, false) => {
                    (a, b, c, d) = (d, rc, b, ra);
                    continue;
                }
            },
            other => other,
        };
        return order;
    }
}

impl PartialEq for BurnRate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for BurnRate {}
impl PartialOrd for BurnRate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for BurnRate {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_fractions(self.num, self.den, other.num, other.den)
    }
}

impl fmt::Display for BurnRate {
    /// `14.4×`, to three decimals, rounded down.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.milli();
        let (whole, frac) = (m / 1000, m % 1000);
        if frac == 0 {
            write!(f, "{whole}×")
        } else {
            let text = format!("{frac:03}");
            write!(f, "{whole}.{}×", text.trim_end_matches('0'))
        }
    }
}

/// How long until the budget left is spent if the current burn rate holds:
/// `remaining share × window length / burn rate`, rounded down to a
/// second. `None` when nothing burns (never).
///
/// The remaining share is first rounded down to a ppm, so the result may
/// be up to a few seconds early — a projection, never a verdict.
pub fn time_to_exhaustion(
    budget: &ErrorBudget,
    window: Duration,
    burn: BurnRate,
) -> Option<Duration> {
    if burn.num == 0 {
        return None;
    }
    let remaining_ppm = match budget.remaining_ppm() {
        Some(r) => u128::from(r),
        // No events yet: the whole budget is left.
        None => PPM,
    };
    let window_secs = u128::try_from(window.num_seconds().max(0)).unwrap_or(0);
    let at_rate_one = remaining_ppm * window_secs / PPM;
    // at_rate_one < 2⁶³ and den < 2¹⁰⁴ would overflow only past 2¹²⁸; such
    // burn rates are vanishingly slow, so saturate to "beyond any window".
    let secs = at_rate_one
        .checked_mul(burn.den)
        .map_or(u128::from(u64::MAX >> 2), |n| n / burn.num);
    Some(Duration::seconds(
        i64::try_from(secs)
            .unwrap_or(i64::MAX / 1000)
            .min(i64::MAX / 1000),
    ))
}

/// How an alert reaches people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertSeverity {
    /// Wake someone up.
    Page,
    /// Look at it in working hours.
    Ticket,
}

impl AlertSeverity {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Page => "page",
            Self::Ticket => "ticket",
        }
    }
}

/// One multiwindow burn-rate rule: fires when the burn rate over both the
/// long and the short lookback reaches the threshold. The long window
/// makes it significant; the short one makes it stop soon after the
/// burning stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BurnRateAlertRule {
    /// Stable name for stored alert state: `page-1h`, `page-6h`, `ticket-3d`.
    pub name: &'static str,
    pub severity: AlertSeverity,
    pub long_window: Duration,
    pub short_window: Duration,
    /// The share of the whole budget the rule catches burning within the
    /// long window, in ppm (2% = 20000).
    pub budget_share_ppm: u32,
    /// The burn rate both windows must reach.
    pub threshold: BurnRate,
}

/// The workbook's three rules for a 30-day window: (name, severity, budget
/// share in ppm, long window in minutes).
const WORKBOOK: [(&str, AlertSeverity, u32, i64); 3] = [
    ("page-1h", AlertSeverity::Page, 20_000, 60),
    ("page-6h", AlertSeverity::Page, 50_000, 6 * 60),
    ("ticket-3d", AlertSeverity::Ticket, 100_000, 3 * 24 * 60),
];

impl BurnRateAlertRule {
    /// The workbook's rules scaled to an SLO window of length `window`
    /// (see the module documentation). For 30 days the thresholds are
    /// exactly 14.4, 6 and 1.
    pub fn workbook(window: Duration) -> [BurnRateAlertRule; 3] {
        let window_secs = u128::try_from(window.num_seconds().max(60)).unwrap_or(60);
        WORKBOOK.map(|(name, severity, share, long_minutes)| {
            let long_secs = (long_minutes as u128 * 60).min(window_secs);
            // Every workbook rule's short window is 1/12 of its long one.
            let short_secs = (long_secs / 12).max(1);
            BurnRateAlertRule {
                name,
                severity,
                long_window: Duration::seconds(long_secs as i64),
                short_window: Duration::seconds(short_secs as i64),
                budget_share_ppm: share,
                // share × W / long, with share in ppm.
                threshold: BurnRate {
                    num: u128::from(share) * window_secs,
                    den: PPM * long_secs,
                },
            }
        })
    }

    /// Whether the rule fires for these counts over its long and short
    /// lookbacks. A lookback with no events burns nothing.
    pub fn fires(&self, target: TargetPpm, long: Tally, short: Tally) -> bool {
        BurnRate::of(long, target) >= self.threshold
            && BurnRate::of(short, target) >= self.threshold
    }
}

/// What happened to an alert between two evaluations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertTransition {
    /// It was quiet and now fires.
    Fired,
    /// It fired and the condition no longer holds.
    Resolved,
    /// Still firing.
    StillFiring,
    /// Still quiet.
    Quiet,
}

impl AlertTransition {
    /// From the stored state (`was_firing`) and the current condition.
    pub const fn between(was_firing: bool, fires: bool) -> Self {
        match (was_firing, fires) {
            (false, true) => Self::Fired,
            (true, false) => Self::Resolved,
            (true, true) => Self::StillFiring,
            (false, false) => Self::Quiet,
        }
    }

    /// Whether the alert fires after this transition.
    pub const fn firing(self) -> bool {
        matches!(self, Self::Fired | Self::StillFiring)
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
    fn thirty_days_gives_the_workbook_numbers_exactly() {
        let rules = BurnRateAlertRule::workbook(Duration::days(30));
        assert_eq!(rules[0].threshold, BurnRate::from_milli(14_400));
        assert_eq!(rules[0].long_window, Duration::hours(1));
        assert_eq!(rules[0].short_window, Duration::minutes(5));
        assert_eq!(rules[1].threshold, BurnRate::from_milli(6_000));
        assert_eq!(rules[1].long_window, Duration::hours(6));
        assert_eq!(rules[1].short_window, Duration::minutes(30));
        assert_eq!(rules[2].threshold, BurnRate::from_milli(1_000));
        assert_eq!(rules[2].long_window, Duration::days(3));
        assert_eq!(rules[2].short_window, Duration::hours(6));
        assert_eq!(rules[2].severity, AlertSeverity::Ticket);
    }

    #[test]
    fn other_windows_scale_the_burn_rate() {
        let rules = BurnRateAlertRule::workbook(Duration::days(28));
        assert_eq!(rules[0].threshold, BurnRate::from_milli(13_440));
        assert_eq!(rules[1].threshold, BurnRate::from_milli(5_600));
        // 0.1 × 28 / 3 = 0.9333…: exact, not 0.933.
        assert!(rules[2].threshold > BurnRate::from_milli(933));
        assert!(rules[2].threshold < BurnRate::from_milli(934));
        assert_eq!(rules[2].threshold.to_string(), "0.933×");
        // A one-day window cannot look back three days.
        let day = BurnRateAlertRule::workbook(Duration::days(1));
        assert_eq!(day[2].long_window, Duration::days(1));
        assert_eq!(day[2].short_window, Duration::hours(2));
        assert_eq!(day[2].threshold, BurnRate::from_milli(100));
    }

    #[test]
    fn burn_rate_one_spends_the_budget_over_the_window() {
        // 99.9%: 1 bad in 1000 burns at exactly 1.
        let b = BurnRate::of(Tally::new(999, 1000).unwrap(), target("99.9%"));
        assert_eq!(b, BurnRate::from_milli(1000));
        assert_eq!(b.to_string(), "1×");
        assert_eq!(
            BurnRate::of(Tally::default(), target("99%")),
            BurnRate::ZERO
        );
    }

    #[test]
    fn the_page_fires_at_14_4_and_not_a_hair_below() {
        let rule = BurnRateAlertRule::workbook(Duration::days(30))[0];
        let t = target("99.9%");
        // 14.4× of a 0.1% budget = 1.44% bad.
        let at = Tally::new(100_000 - 1440, 100_000).unwrap();
        let below = Tally::new(100_000 - 1439, 100_000).unwrap();
        assert!(rule.fires(t, at, at));
        assert!(!rule.fires(t, at, below));
        assert!(!rule.fires(t, below, at));
    }

    #[test]
    fn time_to_exhaustion_at_rate_one_is_the_remaining_share_of_the_window() {
        let t = target("99%");
        let budget = ErrorBudget::new(t, Tally::new(9_950, 10_000).unwrap()); // half used
        let tte = time_to_exhaustion(&budget, Duration::days(30), BurnRate::from_milli(1000));
        assert_eq!(tte, Some(Duration::days(15)));
        let fast = time_to_exhaustion(&budget, Duration::days(30), BurnRate::from_milli(15_000));
        assert_eq!(fast, Some(Duration::days(1)));
        assert_eq!(
            time_to_exhaustion(&budget, Duration::days(30), BurnRate::ZERO),
            None
        );
    }

    #[test]
    fn transitions() {
        assert_eq!(
            AlertTransition::between(false, true),
            AlertTransition::Fired
        );
        assert_eq!(
            AlertTransition::between(true, false),
            AlertTransition::Resolved
        );
        assert!(AlertTransition::between(true, true).firing());
        assert!(!AlertTransition::between(false, false).firing());
    }

    proptest! {
        #[test]
        fn exact_comparison_agrees_with_cross_multiplication(
            a in 0u128..1u128 << 60, b in 1u128..1u128 << 60, c in 0u128..1u128 << 60, d in 1u128..1u128 << 60
        ) {
            let x = BurnRate::from_fraction(a, b).unwrap();
            let y = BurnRate::from_fraction(c, d).unwrap();
            prop_assert_eq!(x.cmp(&y), (a * d).cmp(&(c * b)));
        }

        #[test]
        fn exact_comparison_handles_the_full_range(
            a in 0u128..=u128::MAX, b in 1u128..=u128::MAX, k in 1u128..1000
        ) {
            let x = BurnRate::from_fraction(a, b).unwrap();
            // a/b and (a/k)/(b/k) when both divide: equal.
            let y = BurnRate::from_fraction(a / k * k, b / k * k).unwrap_or(x);
            let _ = x.cmp(&y);
            prop_assert_eq!(x.cmp(&x), Ordering::Equal);
        }

        #[test]
        fn more_bad_events_never_lower_the_burn(total in 1u64..1_000_000, bad in 0u64..1_000_000, t in 1u32..1_000_000) {
            let bad = bad.min(total);
            let target = TargetPpm::from_ppm(t).unwrap();
            let b0 = BurnRate::of(Tally::new(total - bad, total).unwrap(), target);
            let more = (bad + 1).min(total);
            let b1 = BurnRate::of(Tally::new(total - more, total).unwrap(), target);
            prop_assert!(b1 >= b0);
        }

        #[test]
        fn burn_rate_above_one_over_the_whole_window_is_a_miss(
            total in 1u64..10_000_000, bad in 0u64..10_000_000, t in 1u32..1_000_000
        ) {
            // Over the full window, the budget is met exactly when burn ≤ 1.
            let bad = bad.min(total);
            let tally = Tally::new(total - bad, total).unwrap();
            let target = TargetPpm::from_ppm(t).unwrap();
            prop_assert_eq!(
                BurnRate::of(tally, target) <= BurnRate::from_milli(1000),
                ErrorBudget::new(target, tally).met()
            );
        }

        #[test]
        fn thresholds_follow_share_times_window_over_lookback(days in 1i64..400) {
            for rule in BurnRateAlertRule::workbook(Duration::days(days)) {
                let expected = rule.budget_share_ppm as f64 / 1e6 * (days * 86_400) as f64
                    / rule.long_window.num_seconds() as f64;
                prop_assert!((rule.threshold.as_f64() - expected).abs() < 1e-9);
                prop_assert!(rule.long_window <= Duration::days(days));
                prop_assert_eq!(rule.short_window * 12, rule.long_window);
            }
        }
    }
}
