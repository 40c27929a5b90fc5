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
//! ticket when 10% burns in 3 days (burn 1, over 3 d and 6 h).
//!
//! The share is of the *whole window's* budget, so for a window of another
//! length `W` the thresholds 14.4, 6 and 1 stay and the lookbacks scale:
//!
//! ```text
//! long lookback  = share × W / threshold     (30 d: 1 h, 6 h, 3 d)
//! short lookback = long lookback / 12
//! ```
//!
//! A 365-day year pages on 14.4 over 12 h 10 m and 61 m, a 7-day week over
//! 14 m and 1 m, a 1-day window over 2 m and 1 m. Scaling the thresholds
//! instead, over fixed lookbacks, asks more than the budget can burn on
//! long windows (a 90-day quarter at 95% would need 43.2 over an hour,
//! where a total outage burns 20) and next to nothing on short ones (a
//! day's ticket at 0.1). The rules keep the names of the 30-day rules they
//! are scaled from (`page-1h`, `page-6h`, `ticket-3d`): stored alert state
//! refers to them.
//!
//! Each lookback is rounded on its own to the nearest whole minute (the
//! evaluator's rollup unit), halves up, and is at least one minute: the
//! long one from `share × W / threshold`, the short one from a twelfth of
//! that exact value (a year: 730 m and 60.83 → 61 m). For a window of at
//! least a minute no lookback is longer than the window.
//!
//! A total outage burns at `1 / (1 − target)`, the highest rate a target
//! allows. Where that is below a rule's threshold (14.4 under a target of
//! 93.05…%, 6 under 83.33…%; the ticket's 1 never) the rule fires at that
//! highest rate instead, so that every rule still fires on a total outage
//! over both of its lookbacks (see [`BurnRateAlertRule::threshold_for`]).

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

    /// The highest burn rate `target` allows, every event bad: `1 / (1 −
    /// target)` (10 at 90%, 1000 at 99.9%).
    pub fn highest(target: TargetPpm) -> Self {
        // A target is below 100%, so its budget is at least 1 ppm.
        Self {
            num: PPM,
            den: u128::from(target.budget_ppm()),
        }
    }

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
    /// Stable name for stored alert state: `page-1h`, `page-6h`,
    /// `ticket-3d`. It names the 30-day rule this one is scaled from, not
    /// its lookback: a year's `page-1h` looks back 12 h 10 m.
    pub name: &'static str,
    pub severity: AlertSeverity,
    /// `share × W / threshold`, in whole minutes (see the module docs).
    pub long_window: Duration,
    /// A twelfth of the long window, in whole minutes.
    pub short_window: Duration,
    /// The share of the whole window's budget the rule catches burning
    /// within the long window, in ppm (2% = 20000).
    pub budget_share_ppm: u32,
    /// The workbook's burn rate for the rule (14.4, 6 or 1), whatever the
    /// window. Both windows must reach it, or the target's highest burn
    /// where that is lower: [`Self::threshold_for`].
    pub threshold: BurnRate,
}

/// The workbook's three rules: (name, severity, budget share in ppm,
/// threshold in thousandths). For a 30-day window their long lookbacks are
/// 1 h, 6 h and 3 d.
const WORKBOOK: [(&str, AlertSeverity, u32, u64); 3] = [
    ("page-1h", AlertSeverity::Page, 20_000, 14_400),
    ("page-6h", AlertSeverity::Page, 50_000, 6_000),
    ("ticket-3d", AlertSeverity::Ticket, 100_000, 1_000),
];

impl BurnRateAlertRule {
    /// The workbook's rules for an SLO window of length `window`: the
    /// thresholds 14.4, 6 and 1, over lookbacks scaled to the window (see
    /// the module documentation). For 30 days the lookbacks are exactly
    /// 1 h/5 m, 6 h/30 m and 3 d/6 h. A window under a minute (refused
    /// upstream) counts as one minute.
    pub fn workbook(window: Duration) -> [BurnRateAlertRule; 3] {
        let window = window.max(Duration::minutes(1));
        let window_secs = u128::try_from(window.num_seconds()).unwrap_or(60);
        WORKBOOK.map(|(name, severity, share, threshold_milli)| {
            // share × W / threshold in seconds: share_ppm × W / (threshold_milli × 1000).
            let num = u128::from(share) * window_secs;
            let den = u128::from(threshold_milli) * (PPM / 1000);
            BurnRateAlertRule {
                name,
                severity,
                long_window: whole_minutes(num, den, window),
                // Every workbook rule's short window is 1/12 of its long one.
                short_window: whole_minutes(num, den * 12, window),
                budget_share_ppm: share,
                threshold: BurnRate::from_milli(threshold_milli),
            }
        })
    }

    /// The burn rate both lookbacks must reach under `target`: the rule's
    /// threshold, or the highest burn the target allows (`1 / (1 −
    /// target)`, a total outage) where that is lower, so that a total
    /// outage fires every rule. At 90% page-1h fires at 10, not 14.4.
    pub fn threshold_for(&self, target: TargetPpm) -> BurnRate {
        self.threshold.min(BurnRate::highest(target))
    }

    /// Whether the rule fires for these counts over its long and short
    /// lookbacks, against [`Self::threshold_for`] the target. A lookback
    /// with no events burns nothing.
    pub fn fires(&self, target: TargetPpm, long: Tally, short: Tally) -> bool {
        let threshold = self.threshold_for(target);
        BurnRate::of(long, target) >= threshold && BurnRate::of(short, target) >= threshold
    }
}

/// `num / den` seconds as whole minutes, to the nearest (halves up), at
/// least one. Never past `window`, which for a window of at least a minute
/// only guards the conversion: a lookback is at most a tenth of the window
/// plus the rounding.
fn whole_minutes(num: u128, den: u128, window: Duration) -> Duration {
    let per_minute = den * 60;
    let minutes = ((2 * num + per_minute) / (2 * per_minute)).max(1);
    i64::try_from(minutes)
        .ok()
        .and_then(Duration::try_minutes)
        .map_or(window, |d| d.min(window))
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

    /// Checks each rule's name, long and short lookback (whole minutes) and
    /// threshold (thousandths, compared exactly).
    fn assert_rules(window: Duration, expected: [(&str, i64, i64, u64); 3]) {
        let rules = BurnRateAlertRule::workbook(window);
        for (rule, (name, long, short, milli)) in rules.iter().zip(expected) {
            assert_eq!(rule.name, name, "{window}");
            assert_eq!(
                rule.long_window,
                Duration::minutes(long),
                "{name} long, {window}"
            );
            assert_eq!(
                rule.short_window,
                Duration::minutes(short),
                "{name} short, {window}"
            );
            assert_eq!(
                rule.threshold,
                BurnRate::from_milli(milli),
                "{name} threshold, {window}"
            );
        }
    }

    #[test]
    fn months_of_28_and_31_days_scale_the_lookbacks_not_the_thresholds() {
        // 0.02 × 40320 min / 14.4 = 56 min; 56 / 12 = 4.67 → 5 min.
        assert_rules(
            Duration::days(28),
            [
                ("page-1h", 56, 5, 14_400),
                ("page-6h", 336, 28, 6_000),
                ("ticket-3d", 4032, 336, 1_000),
            ],
        );
        // 0.02 × 44640 min / 14.4 = 62 min; 62 / 12 = 5.17 → 5 min.
        assert_rules(
            Duration::days(31),
            [
                ("page-1h", 62, 5, 14_400),
                ("page-6h", 372, 31, 6_000),
                ("ticket-3d", 4464, 372, 1_000),
            ],
        );
    }

    #[test]
    fn a_week_a_quarter_and_a_year() {
        // 0.02 × 10080 min / 14.4 = 14 min; 14 / 12 = 1.17 → 1 min.
        assert_rules(
            Duration::days(7),
            [
                ("page-1h", 14, 1, 14_400),
                ("page-6h", 84, 7, 6_000),
                ("ticket-3d", 1008, 84, 1_000),
            ],
        );
        // 0.02 × 129600 min / 14.4 = 180 min = 3 h.
        assert_rules(
            Duration::days(90),
            [
                ("page-1h", 180, 15, 14_400),
                ("page-6h", 1080, 90, 6_000),
                ("ticket-3d", 12_960, 1080, 1_000),
            ],
        );
        // The calendar quarter's nominal 91 days: 182 / 12 = 15.17 → 15 min.
        assert_rules(
            Duration::days(91),
            [
                ("page-1h", 182, 15, 14_400),
                ("page-6h", 1092, 91, 6_000),
                ("ticket-3d", 13_104, 1092, 1_000),
            ],
        );
        // 0.02 × 525600 min / 14.4 = 730 min = 12 h 10 m; 730 / 12 =
        // 60.83 → 61 min. The ticket looks back 36.5 days.
        assert_rules(
            Duration::days(365),
            [
                ("page-1h", 730, 61, 14_400),
                ("page-6h", 4380, 365, 6_000),
                ("ticket-3d", 52_560, 4380, 1_000),
            ],
        );
    }

    #[test]
    fn short_windows_look_back_at_least_a_minute() {
        // 0.02 × 1440 min / 14.4 = 2 min, its short lookback 1/6 min → 1.
        assert_rules(
            Duration::days(1),
            [
                ("page-1h", 2, 1, 14_400),
                ("page-6h", 12, 1, 6_000),
                ("ticket-3d", 144, 12, 1_000),
            ],
        );
        // 1000 min: 1.39 → 1, 0.12 → 1; 8.33 → 8, 0.69 → 1; 100, 8.33 → 8.
        assert_rules(
            Duration::minutes(1000),
            [
                ("page-1h", 1, 1, 14_400),
                ("page-6h", 8, 1, 6_000),
                ("ticket-3d", 100, 8, 1_000),
            ],
        );
        // The shortest window there is: every lookback is the minute.
        assert_rules(
            Duration::minutes(1),
            [
                ("page-1h", 1, 1, 14_400),
                ("page-6h", 1, 1, 6_000),
                ("ticket-3d", 1, 1, 1_000),
            ],
        );
    }

    #[test]
    fn lookbacks_round_to_the_nearest_minute_halves_up() {
        // 45 days: page-1h 0.02 × 64800 / 14.4 = 90 min, short 7.5 → 8.
        let rules = BurnRateAlertRule::workbook(Duration::days(45));
        assert_eq!(rules[0].long_window, Duration::minutes(90));
        assert_eq!(rules[0].short_window, Duration::minutes(8));
        // 2 d 1 h = 2940 min: page-6h 0.05 × 2940 / 6 = 24.5 → 25, short
        // 2.04 → 2; page-1h 4.08 → 4, short 0.34 → 1.
        let rules = BurnRateAlertRule::workbook(Duration::minutes(2940));
        assert_eq!(rules[0].long_window, Duration::minutes(4));
        assert_eq!(rules[0].short_window, Duration::minutes(1));
        assert_eq!(rules[1].long_window, Duration::minutes(25));
        assert_eq!(rules[1].short_window, Duration::minutes(2));
    }

    #[test]
    fn a_quarter_at_95_percent_pages_on_a_total_outage() {
        // The highest burn at 95% is 1 / 0.05 = 20: above 14.4, so the page
        // fires (the old scaled threshold, 0.02 × 2160 h / 1 h = 43.2, never
        // could).
        let t = target("95%");
        let page = BurnRateAlertRule::workbook(Duration::days(90))[0];
        // One event a minute over the 180 and 15 minutes, every one bad.
        let (long, short) = (Tally::new(0, 180).unwrap(), Tally::new(0, 15).unwrap());
        assert_eq!(BurnRate::of(long, t), BurnRate::from_milli(20_000));
        assert_eq!(BurnRate::of(short, t), BurnRate::from_milli(20_000));
        assert!(page.fires(t, long, short));
        // 14.4 × 5% = 72% bad fires; 71% does not.
        let at = Tally::new(28, 100).unwrap();
        let below = Tally::new(29, 100).unwrap();
        assert!(page.fires(t, at, at));
        assert!(!page.fires(t, below, at));
    }

    #[test]
    fn a_year_at_99_percent_pages_within_two_hours_of_a_total_outage() {
        let t = target("99%");
        let page = BurnRateAlertRule::workbook(Duration::days(365))[0];
        assert_eq!(page.long_window, Duration::minutes(730));
        assert_eq!(page.short_window, Duration::minutes(61));
        // One event a minute; everything fails over both lookbacks: 100×.
        assert!(page.fires(t, Tally::new(0, 730).unwrap(), Tally::new(0, 61).unwrap()));
        // An outage that began 106 minutes ago after a clean stretch: the
        // long lookback burns 106/730/1% = 14.52 ≥ 14.4 and pages; at 105
        // minutes (14.38) not yet. (The old rules, page-1h at 175.2 and
        // page-6h at 73 over 6 h, paged only after 263 minutes.)
        let short = Tally::new(0, 61).unwrap();
        assert!(page.fires(t, Tally::new(730 - 106, 730).unwrap(), short));
        assert!(!page.fires(t, Tally::new(730 - 105, 730).unwrap(), short));
    }

    #[test]
    fn a_day_long_window_does_not_page_on_a_trickle() {
        // 99.9% over a rolling day: 1 bad in 2000 burns at 0.5, which the
        // old scaled thresholds (0.48, 0.2, 0.1) all fired on.
        let t = target("99.9%");
        let trickle = Tally::new(1999, 2000).unwrap();
        assert_eq!(BurnRate::of(trickle, t), BurnRate::from_milli(500));
        for rule in BurnRateAlertRule::workbook(Duration::days(1)) {
            assert!(!rule.fires(t, trickle, trickle), "{}", rule.name);
        }
        // 14.4× (1.44% bad) over its 2 and 1 minutes pages.
        let fast = Tally::new(100_000 - 1440, 100_000).unwrap();
        assert!(BurnRateAlertRule::workbook(Duration::days(1))[0].fires(t, fast, fast));
    }

    #[test]
    fn a_target_too_low_for_a_threshold_pages_on_a_total_outage() {
        // At 90% nothing burns faster than 1 / 0.1 = 10, below page-1h's
        // 14.4: it fires at 10, on a total outage, instead of never.
        let t = target("90%");
        let [page_1h, page_6h, ticket] = BurnRateAlertRule::workbook(Duration::days(30));
        let all_bad = Tally::new(0, 1000).unwrap();
        let nearly = Tally::new(1, 1000).unwrap(); // 9.99×
        assert!(page_1h.fires(t, all_bad, all_bad));
        assert!(!page_1h.fires(t, nearly, all_bad));
        assert!(!page_1h.fires(t, all_bad, nearly));
        // page-6h's 6 and the ticket's 1 are reachable: unchanged.
        let six = Tally::new(400, 1000).unwrap();
        let under_six = Tally::new(401, 1000).unwrap();
        assert!(page_6h.fires(t, six, six));
        assert!(!page_6h.fires(t, under_six, six));
        let one = Tally::new(900, 1000).unwrap();
        let under_one = Tally::new(901, 1000).unwrap();
        assert!(ticket.fires(t, one, one));
        assert!(!ticket.fires(t, under_one, one));
        assert_eq!(BurnRate::highest(t), BurnRate::from_milli(10_000));
        assert_eq!(page_1h.threshold_for(t), BurnRate::from_milli(10_000));
        assert_eq!(page_6h.threshold_for(t), BurnRate::from_milli(6_000));
        assert_eq!(page_1h.threshold, BurnRate::from_milli(14_400));
    }

    #[test]
    fn the_highest_burn_replaces_14_4_exactly_below_93_0555_percent() {
        let page = BurnRateAlertRule::workbook(Duration::days(30))[0];
        // Budget 69445 ppm: 10⁶ / 69445 = 14.39996… < 14.4.
        let below = TargetPpm::from_ppm(930_555).unwrap();
        assert_eq!(page.threshold_for(below), BurnRate::highest(below));
        assert!(page.threshold_for(below) < page.threshold);
        // Budget 69444 ppm: 14.40009… > 14.4.
        let above = TargetPpm::from_ppm(930_556).unwrap();
        assert_eq!(page.threshold_for(above), page.threshold);
        // A total outage fires every rule, whatever the target and window.
        let all_bad = Tally::new(0, 7).unwrap();
        for ppm in [1, 500_000, 900_000, 930_555, 999_999] {
            let t = TargetPpm::from_ppm(ppm).unwrap();
            for days in [1, 7, 30, 91, 365] {
                for rule in BurnRateAlertRule::workbook(Duration::days(days)) {
                    assert!(
                        rule.fires(t, all_bad, all_bad),
                        "{} at {t}, {days} d",
                        rule.name
                    );
                }
            }
        }
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
        fn lookbacks_follow_share_times_window_over_threshold(secs in 60i64..=400 * 86_400) {
            let window = Duration::seconds(secs);
            for rule in BurnRateAlertRule::workbook(window) {
                let threshold = rule.threshold.as_f64();
                prop_assert!([14.4, 6.0, 1.0].contains(&threshold));
                let long = rule.budget_share_ppm as f64 / 1e6 * secs as f64 / threshold;
                for (lookback, exact) in [(rule.long_window, long), (rule.short_window, long / 12.0)] {
                    let got = lookback.num_seconds();
                    prop_assert_eq!(got % 60, 0, "{} {}", rule.name, lookback);
                    prop_assert!(got >= 60);
                    // Within half a minute, or the one-minute floor.
                    prop_assert!(
                        (got as f64 - exact).abs() <= 30.0 + 1e-6 || (got == 60 && exact < 30.0),
                        "{} {lookback} for {exact} s", rule.name
                    );
                    prop_assert!(lookback <= window);
                }
                prop_assert!(rule.short_window <= rule.long_window);
            }
        }
    }
}
