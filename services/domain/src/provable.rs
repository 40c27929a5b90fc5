//! How an objective's comparison becomes the circuit's one form, "at least q
//! of the weighted values are ≤ T" over 32-bit values: the unit, the
//! threshold as proven, and each measured value as committed.
//!
//! The circuit knows only `≤` on unsigned 32-bit values. So:
//!
//! - `v ≤ T` is proven as is; `v < T` as `v ≤ T − 1` (values are integers in
//!   the unit, so nothing lies between);
//! - `v ≥ T` and `v > T` mirror every value and the threshold about
//!   `2³² − 1`: `v′ = 2³² − 1 − v`, so `v ≥ T ⇔ v′ ≤ 2³² − 1 − T`, and
//!   `v > T ⇔ v′ ≤ 2³² − 2 − T`;
//! - a value past the 32-bit range saturates *against* the provider: a
//!   latency over `2³² − 1` µs (71 minutes) is committed as `2³² − 1`, which
//!   no threshold (at most an hour) accepts, and a mirrored value below
//!   zero cannot occur.
//!
//! Durations (latency, TTFT, TPOT) are proven in whole microseconds, as the
//! evaluator measures them. Numeric attributes (quality scores) are not yet
//! provable: they would need a fixed-point scale in the SLA document.

use crate::objective::{ThresholdOp, ThresholdValue};

/// The largest committed value.
pub const VALUE_MAX: u64 = u32::MAX as u64;
/// The only comparison the circuit proves, as a claim states it.
pub const OPERATOR: &str = "<=";
/// The unit of every proven value and threshold, as a claim states it.
pub const UNIT: &str = "us";

/// An objective's comparison in the circuit's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProvableComparison {
    /// `T` as proven: every committed value `≤ threshold` is good.
    pub threshold: u32,
    /// Whether values (and the threshold) are mirrored about `2³² − 1`.
    pub mirrored: bool,
    /// The unit of the values and of the threshold as the claim states it.
    pub unit: &'static str,
    /// The operator as the claim states it: always `<=`.
    pub operator: &'static str,
}

/// Why an objective cannot be proven as it stands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotProvable {
    #[error("a threshold on a numeric attribute has no fixed-point scale to prove it in")]
    NumericThreshold,
    #[error("`< 0` accepts no value: nothing can be proven")]
    NothingBelowZero,
    #[error("the threshold {0} µs is at or past the 32-bit range")]
    ThresholdOutOfRange(u64),
    /// The period had no events: the circuit needs a positive total weight,
    /// and a proof about nothing would say nothing. The period is reported
    /// as not provable (empty) rather than proven.
    #[error("the period has no events: there is nothing to prove")]
    Empty,
    /// The data the vector is built from do not add up to the frozen
    /// result: proving them would prove another result.
    #[error("the stored data disagree with the frozen result: {0}")]
    Disagrees(String),
    /// A count past what one slot of the circuit holds.
    #[error("too many events for the circuit: {0}")]
    TooMany(String),
}

impl ProvableComparison {
    /// The circuit's form of `op threshold`.
    pub fn of(op: ThresholdOp, threshold: ThresholdValue) -> Result<Self, NotProvable> {
        let t = match threshold {
            ThresholdValue::Duration(us) => us.as_micros(),
            ThresholdValue::Number(_) => return Err(NotProvable::NumericThreshold),
        };
        // `≤ 2³² − 1` would accept a saturated value: past the range the
        // verdict could no longer be the objective's. Durations stop at an
        // hour, far below.
        if t >= VALUE_MAX {
            return Err(NotProvable::ThresholdOutOfRange(t));
        }
        let (threshold, mirrored) = match op {
            ThresholdOp::Lte => (t, false),
            ThresholdOp::Lt => (
                t.checked_sub(1).ok_or(NotProvable::NothingBelowZero)?,
                false,
            ),
            ThresholdOp::Gte => (VALUE_MAX - t, true),
            // t < VALUE_MAX (checked above), so this cannot underflow.
            ThresholdOp::Gt => (VALUE_MAX - 1 - t, true),
        };
        Ok(Self {
            threshold: u32::try_from(threshold).expect("bounded by VALUE_MAX above"),
            mirrored,
            unit: UNIT,
            operator: OPERATOR,
        })
    }

    /// A measured value (µs) as committed: saturated at `2³² − 1`, then
    /// mirrored when the comparison is.
    pub fn value(&self, measured_us: u64) -> u32 {
        let v = measured_us.min(VALUE_MAX);
        let v = if self.mirrored { VALUE_MAX - v } else { v };
        u32::try_from(v).expect("bounded by VALUE_MAX")
    }

    /// Whether the committed form of `measured_us` is good: the same verdict
    /// as the objective's own comparison, for every value.
    pub fn is_good(&self, measured_us: u64) -> bool {
        self.value(measured_us) <= self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quantity::Micros;

    fn duration(us: u64) -> ThresholdValue {
        ThresholdValue::Duration(Micros::new(us))
    }

    #[test]
    fn each_operator_keeps_the_objectives_verdict_at_and_around_the_threshold() {
        for op in [
            ThresholdOp::Lte,
            ThresholdOp::Lt,
            ThresholdOp::Gte,
            ThresholdOp::Gt,
        ] {
            for t in [1u64, 2, 3_200_000, 3_600_000_000] {
                let proven = ProvableComparison::of(op, duration(t)).unwrap();
                for v in [
                    0,
                    1,
                    t - 1,
                    t,
                    t + 1,
                    2 * t,
                    VALUE_MAX - 1,
                    VALUE_MAX,
                    VALUE_MAX + 5,
                ] {
                    // Past the 32-bit range the value saturates: for `≤`/`<`
                    // that keeps it bad, as it is; for `≥`/`>` it stays good.
                    assert_eq!(proven.is_good(v), op.is_good(v, t), "{op} {t}: value {v}");
                }
            }
        }
    }

    #[test]
    fn the_claim_reads_less_or_equal_in_microseconds() {
        let p99 = ProvableComparison::of(ThresholdOp::Lt, duration(3_200_000)).unwrap();
        assert_eq!(
            (p99.threshold, p99.mirrored, p99.unit, p99.operator),
            (3_199_999, false, "us", "<=")
        );
        let floor = ProvableComparison::of(ThresholdOp::Gte, duration(100)).unwrap();
        assert_eq!((floor.threshold, floor.mirrored), (u32::MAX - 100, true));
        assert_eq!(floor.value(100), u32::MAX - 100);
    }

    #[test]
    fn what_cannot_be_proven_says_why() {
        assert_eq!(
            ProvableComparison::of(ThresholdOp::Lt, duration(0)),
            Err(NotProvable::NothingBelowZero)
        );
        assert_eq!(
            ProvableComparison::of(ThresholdOp::Gt, duration(VALUE_MAX)),
            Err(NotProvable::ThresholdOutOfRange(VALUE_MAX))
        );
        assert_eq!(
            ProvableComparison::of(ThresholdOp::Lte, duration(VALUE_MAX)),
            Err(NotProvable::ThresholdOutOfRange(VALUE_MAX))
        );
        assert_eq!(
            ProvableComparison::of(ThresholdOp::Lte, ThresholdValue::Number(0.8)),
            Err(NotProvable::NumericThreshold)
        );
        assert_eq!(
            ProvableComparison::of(ThresholdOp::Lte, duration(VALUE_MAX + 1)),
            Err(NotProvable::ThresholdOutOfRange(VALUE_MAX + 1))
        );
    }
}
