//! The vector a closed period is proven over: per day of the period, how
//! many events (or slices) were good and how many bad, each committed at the
//! public bucket edge of its verdict.
//!
//! The bucket scheme is public and the same for every period of an
//! objective: two buckets, `[0, T]` and `(T, 2³² − 1]`, with `T` the
//! threshold as proven ([`ProvableComparison`]). A good value is committed
//! at `T`, the *highest* value its bucket holds, and a bad one at `2³² − 1`;
//! rounding up to the bucket's upper edge can only make the provider look
//! worse, never better — and with `T` itself an edge, no value changes its
//! verdict (`v ≤ T ⇔ edge(v) ≤ T`), so the proven fraction is exactly the
//! evaluator's. Ratio and time-slice objectives commit verdicts: 0 good, 1
//! bad, `T = 0`. A time-slice tally of `RatioTimeslices` weighs each slice
//! by its good share in millionths, so its sums are the evaluator's too.
//!
//! One pair of slots per day (of the window's time zone) rather than one
//! pair per period: an opening shows the day-by-day counts a dispute asks
//! about, and a month is 62 slots, the smallest standard circuit (64).
//!
//! The daily tallies must add up to the frozen period result, or the
//! vector is refused ([`NotProvable::Disagrees`]): a proof over counts that
//! are not the result's would prove something else.

use chrono::{DateTime, Utc};

use crate::budget::Tally;
use crate::objective::{MeasuredField, Objective, Sli, SliceBudgeting};
use crate::provable::{NotProvable, OPERATOR, ProvableComparison, UNIT, VALUE_MAX};

/// The unit of a vector of verdicts (0 good, 1 bad).
pub const VERDICT_UNIT: &str = "verdict";

/// One more than the largest weight of a slot (the circuit's 40 bits).
pub const WEIGHT_LIMIT: u64 = 1 << 40;

/// One day's counts (events, slices, or slice-millionths).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DayTally {
    /// The day's start (the period's start for its first day).
    pub day: DateTime<Utc>,
    pub good: u64,
    pub total: u64,
}

/// What is proven about one closed period of one objective.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PeriodVector {
    /// What the values measure: `latency`, `ttft`, `tpot`, or for verdicts
    /// `ratio`, `timeslices`, `ratio-timeslices`, `gauge`.
    pub field: String,
    /// `us` for durations, `verdict` for verdicts.
    pub unit: String,
    /// Always `<=`.
    pub operator: String,
    /// `T` as proven.
    pub threshold: u32,
    /// The value a good count is committed at (`T`, its bucket's upper edge).
    pub good_value: u32,
    /// The value a bad count is committed at.
    pub bad_value: u32,
    /// The proven fraction: the period's achieved compliance, rounded down
    /// to a millionth, so a proof always exists and says exactly how well
    /// the promise was kept (the target is compared with it, not proven).
    pub quota_ppm: u32,
    pub days: Vec<DayTally>,
}

impl PeriodVector {
    /// The `(value, weight)` pairs the circuit commits to: per day the good
    /// count, then the bad count. Empty counts are kept (weight 0), so the
    /// slot of each day is fixed by its position.
    pub fn pairs(&self) -> Vec<(u64, u64)> {
        self.days
            .iter()
            .flat_map(|d| {
                [
                    (u64::from(self.good_value), d.good),
                    (u64::from(self.bad_value), d.total - d.good),
                ]
            })
            .collect()
    }

    /// The sum of the days.
    pub fn tally(&self) -> Tally {
        self.days.iter().fold(Tally::default(), |t, d| Tally {
            good: t.good + d.good,
            total: t.total + d.total,
        })
    }
}

/// The vector of `objective`'s closed period whose frozen result is
/// `frozen`, from its daily tallies.
pub fn period_vector(
    objective: &Objective,
    frozen: Tally,
    days: Vec<DayTally>,
) -> Result<PeriodVector, NotProvable> {
    if let Some(d) = days.iter().find(|d| d.good > d.total) {
        return Err(NotProvable::Disagrees(format!(
            "the day from {} has {} good of {}",
            d.day, d.good, d.total
        )));
    }
    // A slot's weight has 40 bits: a trillion events a day.
    if let Some(d) = days.iter().find(|d| d.total >= WEIGHT_LIMIT) {
        return Err(NotProvable::TooMany(format!(
            "the day from {} counts {}, past a slot's 2^40 - 1",
            d.day, d.total
        )));
    }
    let (field, unit, threshold, good_value, bad_value) = proven_form(objective)?;
    let vector = PeriodVector {
        field,
        unit: unit.to_owned(),
        operator: OPERATOR.to_owned(),
        threshold,
        good_value,
        bad_value,
        quota_ppm: 0,
        days,
    };
    let summed = vector.tally();
    if summed != frozen {
        return Err(NotProvable::Disagrees(format!(
            "the days sum to {} good of {}, the frozen result says {} of {}",
            summed.good, summed.total, frozen.good, frozen.total
        )));
    }
    if frozen.total == 0 {
        return Err(NotProvable::Empty);
    }
    let quota = u128::from(frozen.good) * 1_000_000 / u128::from(frozen.total);
    Ok(PeriodVector {
        quota_ppm: u32::try_from(quota).expect("at most a million"),
        ..vector
    })
}

/// One day of one objective as it is committed while the period goes
/// (`docs/TRANSPARENCY.md`): the form proven and the day's two weights,
/// exactly the period vector's slots of that day.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DayMeasurement {
    pub field: String,
    pub unit: String,
    /// `T` as proven.
    pub threshold: u32,
    /// The day's weight at or under `T`.
    pub good: u64,
    /// The rest.
    pub bad: u64,
}

/// The measurement of `objective` on the day `day` counts; an empty day is
/// measured too (zero weights), so every day of a period has one.
pub fn day_measurement(
    objective: &Objective,
    day: DayTally,
) -> Result<DayMeasurement, NotProvable> {
    if day.good > day.total {
        return Err(NotProvable::Disagrees(format!(
            "the day from {} has {} good of {}",
            day.day, day.good, day.total
        )));
    }
    if day.total >= WEIGHT_LIMIT {
        return Err(NotProvable::TooMany(format!(
            "the day from {} counts {}, past a slot's 2^40 - 1",
            day.day, day.total
        )));
    }
    let (field, unit, threshold, _, _) = proven_form(objective)?;
    Ok(DayMeasurement {
        field,
        unit: unit.to_owned(),
        threshold,
        good: day.good,
        bad: day.total - day.good,
    })
}

/// The field, unit, `T` as proven, and the values good and bad counts are
/// committed at, of `objective`; or why it cannot be proven.
fn proven_form(
    objective: &Objective,
) -> Result<(String, &'static str, u32, u32, u32), NotProvable> {
    Ok(match &objective.sli {
        Sli::Threshold(t) => {
            let field = match &t.field {
                MeasuredField::Attr(_) => return Err(NotProvable::NumericThreshold),
                f => f.native_name(),
            };
            let proven = ProvableComparison::of(t.op, t.value)?;
            // Past `T`, the worst value: never good, whatever `T` is.
            let bad = u32::try_from(VALUE_MAX).expect("VALUE_MAX is u32::MAX");
            (field, UNIT, proven.threshold, proven.threshold, bad)
        }
        Sli::Ratio(_) => ("ratio".to_owned(), VERDICT_UNIT, 0, 0, 1),
        Sli::Gauge(_) => ("gauge".to_owned(), VERDICT_UNIT, 0, 0, 1),
        Sli::TimeSlices(t) => {
            let field = match t.budgeting {
                SliceBudgeting::Timeslices { .. } => "timeslices",
                SliceBudgeting::RatioTimeslices => "ratio-timeslices",
            };
            (field.to_owned(), VERDICT_UNIT, 0, 0, 1)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sla::SlaDefinition;

    fn objectives() -> Vec<Objective> {
        let doc = "apiVersion: slaproof/v1\nkind: SLA\nmetadata: {name: acme}\nspec:\n  service: chat\n  \
                   window: {calendar: month, timeZone: UTC}\n  objectives:\n    \
                   - {name: p99, target: 99%, threshold: {field: latency, op: lt, value: 3.2s}}\n    \
                   - {name: floor, target: 99%, threshold: {field: tpot, op: gte, value: 1ms}}\n    \
                   - {name: quality, target: 90%, threshold: {field: attr.quality, op: gte, value: 0.8}}\n";
        SlaDefinition::from_document(doc).unwrap().objectives
    }

    fn day(d: u32, good: u64, total: u64) -> DayTally {
        DayTally {
            day: format!("2026-11-{d:02}T00:00:00Z").parse().unwrap(),
            good,
            total,
        }
    }

    #[test]
    fn a_percentile_commits_good_counts_at_its_threshold_and_bad_ones_past_any() {
        let p99 = &objectives()[0];
        let v = period_vector(
            p99,
            Tally {
                good: 297,
                total: 300,
            },
            vec![day(1, 99, 100), day(2, 100, 100), day(3, 98, 100)],
        )
        .unwrap();
        assert_eq!((v.field.as_str(), v.unit.as_str()), ("latency", "us"));
        assert_eq!(v.threshold, 3_199_999);
        assert_eq!(v.quota_ppm, 990_000);
        let pairs = v.pairs();
        assert_eq!(pairs.len(), 6);
        assert_eq!(pairs[0], (3_199_999, 99));
        assert_eq!(pairs[1], (u64::from(u32::MAX), 1));
        // Exactly the evaluator's fraction: good weight over total weight.
        let good: u64 = pairs.iter().filter(|p| p.0 <= 3_199_999).map(|p| p.1).sum();
        let total: u64 = pairs.iter().map(|p| p.1).sum();
        assert_eq!((good, total), (297, 300));
    }

    #[test]
    fn a_mirrored_threshold_keeps_bad_values_past_it() {
        let floor = &objectives()[1];
        let v = period_vector(floor, Tally { good: 1, total: 2 }, vec![day(1, 1, 2)]).unwrap();
        assert_eq!(v.threshold, u32::MAX - 1000);
        assert!(v.bad_value > v.threshold && v.good_value <= v.threshold);
        assert_eq!(v.quota_ppm, 500_000);
    }

    #[test]
    fn days_that_do_not_add_up_to_the_result_are_refused() {
        let p99 = &objectives()[0];
        let err = period_vector(
            p99,
            Tally {
                good: 10,
                total: 10,
            },
            vec![day(1, 9, 10)],
        );
        assert!(matches!(err, Err(NotProvable::Disagrees(_))), "{err:?}");
        let err = period_vector(p99, Tally { good: 0, total: 0 }, vec![day(1, 0, 0)]);
        assert_eq!(err, Err(NotProvable::Empty));
        let err = period_vector(
            &objectives()[2],
            Tally { good: 1, total: 1 },
            vec![day(1, 1, 1)],
        );
        assert_eq!(err, Err(NotProvable::NumericThreshold));
    }
}
