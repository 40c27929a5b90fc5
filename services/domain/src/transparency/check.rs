//! A customer's check of its own client-side log against the provider's
//! transparency log: for each request it observed, whether the log holds
//! it, and whether the recorded status and latency agree with what it saw.

use serde::{Deserialize, Serialize};

use super::Leaf;

/// One request as the customer's client saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    pub request_id: String,
    /// The HTTP status the client received, if it kept it.
    #[serde(default)]
    pub status: Option<i32>,
    /// The latency the client measured, in milliseconds, if it kept it.
    #[serde(default)]
    pub latency_ms: Option<f64>,
}

/// How far a recorded latency may stand from the observed one before the
/// two disagree: the client's clock adds network time the provider's does
/// not see, so the default is generous.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Absolute, in milliseconds.
    pub latency_ms: f64,
    /// Relative to the observed latency (0.1 is 10%); the larger bound wins.
    pub latency_ratio: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Self {
            latency_ms: 100.0,
            latency_ratio: 0.1,
        }
    }
}

impl Tolerance {
    /// Why the tolerance cannot be used, naming the field.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.latency_ms.is_finite() && self.latency_ms >= 0.0) {
            return Err("tolerance.latency_ms must be a finite number at or above 0".into());
        }
        if !(self.latency_ratio.is_finite() && (0.0..=10.0).contains(&self.latency_ratio)) {
            return Err("tolerance.latency_ratio must be between 0 and 10".into());
        }
        Ok(())
    }
}

/// What the check found for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// In a signed day of the log, its proof verified, and the recorded
    /// values agree with the observed ones within the tolerance.
    Included,
    /// In the log with a verified proof, but a recorded value disagrees.
    Disagreeing,
    /// Logged, but the stored event no longer hashes to its leaf: it was
    /// changed after its day was logged.
    Altered,
    /// Stored, but its day's log is not built yet.
    NotLogged,
    /// No event with this request id is stored for this customer.
    Missing,
}

/// One field on which the log and the customer disagree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub field: String,
    pub observed: String,
    pub recorded: String,
}

/// The fields on which `leaf` disagrees with `observed` beyond `tolerance`.
/// A value the customer did not keep is not compared; a value the log does
/// not hold while the customer observed one is a disagreement.
pub fn differences(observed: &Observation, leaf: &Leaf, tolerance: &Tolerance) -> Vec<Difference> {
    let mut found = Vec::new();
    if let Some(status) = observed.status
        && leaf.status != Some(status)
    {
        found.push(Difference {
            field: "status".into(),
            observed: status.to_string(),
            recorded: leaf.status.map_or("none".into(), |s| s.to_string()),
        });
    }
    if let Some(latency_ms) = observed.latency_ms {
        let allowed = tolerance
            .latency_ms
            .max(latency_ms.abs() * tolerance.latency_ratio);
        let recorded_ms = leaf.latency_us.map(|us| us as f64 / 1000.0);
        if recorded_ms.is_none_or(|r| (r - latency_ms).abs() > allowed) {
            found.push(Difference {
                field: "latency_ms".into(),
                observed: latency_ms.to_string(),
                recorded: recorded_ms.map_or("none".into(), |r| r.to_string()),
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(status: Option<i32>, latency_us: Option<i64>) -> Leaf {
        Leaf {
            v: 1,
            salt: String::new(),
            event: "evt_x".into(),
            request_id: Some("r".into()),
            source: "provider".into(),
            service: "s".into(),
            customer: None,
            model: None,
            occurred_at_us: 0,
            received_at_us: 0,
            late: false,
            status,
            error_class: None,
            latency_us,
            ttft_us: None,
            tpot_us: None,
            input_tokens: None,
            output_tokens: None,
            streaming: None,
        }
    }

    fn seen(status: Option<i32>, latency_ms: Option<f64>) -> Observation {
        Observation {
            request_id: "r".into(),
            status,
            latency_ms,
        }
    }

    #[test]
    fn values_within_the_tolerance_agree_and_others_are_named() {
        let t = Tolerance::default();
        let l = leaf(Some(200), Some(1_000_000));
        assert!(differences(&seen(Some(200), Some(1_090.0)), &l, &t).is_empty());
        assert!(differences(&seen(None, None), &l, &t).is_empty());
        let d = differences(&seen(Some(503), Some(1_200.0)), &l, &t);
        assert_eq!(
            d.iter().map(|d| d.field.as_str()).collect::<Vec<_>>(),
            ["status", "latency_ms"]
        );
        assert_eq!(
            (d[1].observed.as_str(), d[1].recorded.as_str()),
            ("1200", "1000")
        );
        // Small latencies get the absolute bound.
        assert!(differences(&seen(None, Some(90.0)), &leaf(None, Some(10_000)), &t).is_empty());
        // Observed but not recorded is a disagreement.
        assert_eq!(
            differences(&seen(Some(200), None), &leaf(None, None), &t).len(),
            1
        );
    }

    #[test]
    fn bad_tolerances_are_refused_by_name() {
        let bad = Tolerance {
            latency_ms: f64::NAN,
            latency_ratio: 0.1,
        };
        assert!(bad.validate().unwrap_err().contains("latency_ms"));
        let bad = Tolerance {
            latency_ms: 1.0,
            latency_ratio: -1.0,
        };
        assert!(bad.validate().unwrap_err().contains("latency_ratio"));
    }
}
