//! Chart sketches: DDSketches of the latency, time to first token and time per output token of a minute's (or any span's) events — for charts, never for verdicts.
//!
//! Percentile objectives are judged on exact counts of events at or under
//! their thresholds; a chart of "p99 over the day" needs the distribution
//! instead, which exact counts cannot give for any percentile asked
//! afterwards. A DDSketch answers every quantile within a relative error
//! ([`RELATIVE_ERROR`]) and merges exactly: its bins are keyed by value
//! alone, so the merge of sixty minute sketches is the sketch of the hour's
//! values, bin for bin.

use sketches_ddsketch::{Config, DDSketch};

use crate::event::EventFields;

/// The relative accuracy of every quantile read from a sketch: the
/// answer for quantile q is within 1% of the value of rank
/// ⌊q·(n − 1)⌋ among the n values (DDSketch's α, the crate's default).
pub const RELATIVE_ERROR: f64 = 0.01;

/// A sketch that cannot be read or merged: stored bytes that are not a
/// sketch, or sketches of different accuracy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable sketch: {0}")]
pub struct SketchError(pub String);

fn config() -> Config {
    // The defaults (α = 1%, up to 2048 bins) are what the binary encoding
    // decodes to, so stored and fresh sketches always merge.
    Config::defaults()
}

/// The three sketches of one minute, hour or chart point; `None` while no
/// event carried the field.
#[derive(Clone, Default)]
pub struct Sketches {
    pub latency: Option<DDSketch>,
    pub ttft: Option<DDSketch>,
    pub tpot: Option<DDSketch>,
}

impl std::fmt::Debug for Sketches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The crate's sketch has no Debug; the counts say enough.
        let count = |s: &Option<DDSketch>| s.as_ref().map(DDSketch::count);
        f.debug_struct("Sketches")
            .field("latency", &count(&self.latency))
            .field("ttft", &count(&self.ttft))
            .field("tpot", &count(&self.tpot))
            .finish()
    }
}

fn record(slot: &mut Option<DDSketch>, micros: Option<u64>) {
    if let Some(v) = micros {
        // Microseconds below 2⁵³ are exact as f64.
        slot.get_or_insert_with(|| DDSketch::new(config()))
            .add(v as f64);
    }
}

fn merge_slot(slot: &mut Option<DDSketch>, other: &Option<DDSketch>) -> Result<(), SketchError> {
    match (slot.as_mut(), other) {
        (_, None) => Ok(()),
        (None, Some(o)) => {
            *slot = Some(o.clone());
            Ok(())
        }
        (Some(s), Some(o)) => s
            .merge(o)
            .map_err(|e| SketchError(format!("cannot merge sketches of different accuracy: {e}"))),
    }
}

fn encode(slot: &Option<DDSketch>) -> Option<Vec<u8>> {
    slot.as_ref().map(DDSketch::to_java_bytes)
}

fn decode(bytes: Option<Vec<u8>>) -> Result<Option<DDSketch>, SketchError> {
    bytes
        .map(|b| DDSketch::from_java_bytes(&b).map_err(|e| SketchError(e.to_string())))
        .transpose()
}

impl Sketches {
    /// Adds one event's latency, TTFT and TPOT (those it carries).
    pub fn add(&mut self, event: &impl EventFields) {
        record(&mut self.latency, event.latency_us());
        record(&mut self.ttft, event.ttft_us());
        record(&mut self.tpot, event.tpot_us());
    }

    /// Merges another set in (exact: the result is the sketch of both sets
    /// of values).
    pub fn merge(&mut self, other: &Sketches) -> Result<(), SketchError> {
        merge_slot(&mut self.latency, &other.latency)?;
        merge_slot(&mut self.ttft, &other.ttft)?;
        merge_slot(&mut self.tpot, &other.tpot)
    }

    /// The stored form: each sketch in the sketches-java binary encoding.
    pub fn encode(&self) -> [Option<Vec<u8>>; 3] {
        [
            encode(&self.latency),
            encode(&self.ttft),
            encode(&self.tpot),
        ]
    }

    /// Reads the stored form back.
    pub fn decode(
        latency: Option<Vec<u8>>,
        ttft: Option<Vec<u8>>,
        tpot: Option<Vec<u8>>,
    ) -> Result<Self, SketchError> {
        Ok(Self {
            latency: decode(latency)?,
            ttft: decode(ttft)?,
            tpot: decode(tpot)?,
        })
    }
}

/// One measure over one chart point.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Events that carried the field.
    pub count: u64,
    /// In microseconds, one per quantile asked, each within
    /// [`RELATIVE_ERROR`]; empty when `count` is 0.
    pub quantiles: Vec<f64>,
}

impl Summary {
    /// The count and the `quantiles` of one sketch.
    pub fn of(sketch: &Option<DDSketch>, quantiles: &[f64]) -> Self {
        let Some(s) = sketch.as_ref().filter(|s| s.count() > 0) else {
            return Self {
                count: 0,
                quantiles: Vec::new(),
            };
        };
        Self {
            count: s.count() as u64,
            // Quantiles were checked to lie in [0, 1]; a non-empty sketch
            // answers each.
            quantiles: quantiles
                .iter()
                .map(|&q| s.quantile(q).ok().flatten().unwrap_or(f64::NAN))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventView;
    use proptest::prelude::*;

    fn sketch_of(values: &[u64]) -> Sketches {
        let mut s = Sketches::default();
        for &v in values {
            s.add(&EventView {
                latency_us: Some(v),
                ..EventView::default()
            });
        }
        s
    }

    /// The value of rank ⌊q·(n − 1)⌋, the rank DDSketch answers for.
    fn exact(sorted: &[u64], q: f64) -> f64 {
        sorted[(q * (sorted.len() as f64 - 1.0)) as usize] as f64
    }

    fn within(estimate: f64, exact: f64) -> bool {
        (estimate - exact).abs() <= RELATIVE_ERROR * exact + 1e-9
    }

    const QS: [f64; 6] = [0.0, 0.5, 0.9, 0.95, 0.99, 1.0];

    proptest! {
        #[test]
        fn quantiles_are_within_the_relative_error_of_exact_ones(
            values in prop::collection::vec(1u64..60_000_000, 1..2_000)
        ) {
            let s = sketch_of(&values);
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let summary = Summary::of(&s.latency, &QS);
            prop_assert_eq!(summary.count, values.len() as u64);
            for (q, estimate) in QS.iter().zip(&summary.quantiles) {
                prop_assert!(within(*estimate, exact(&sorted, *q)), "q{} = {} vs {}", q, estimate, exact(&sorted, *q));
            }
        }

        #[test]
        fn merged_minutes_equal_one_sketch_of_all_and_survive_encoding(
            minutes in prop::collection::vec(prop::collection::vec(1u64..60_000_000, 0..300), 1..60)
        ) {
            let mut merged = Sketches::default();
            for minute in &minutes {
                let [l, t, p] = sketch_of(minute).encode();
                merged.merge(&Sketches::decode(l, t, p).unwrap()).unwrap();
            }
            let all: Vec<u64> = minutes.concat();
            let one = sketch_of(&all);
            let (m, o) = (Summary::of(&merged.latency, &QS), Summary::of(&one.latency, &QS));
            // Bins are keyed by value alone: the merge is the same sketch.
            prop_assert_eq!(&m, &o);
            if !all.is_empty() {
                let mut sorted = all;
                sorted.sort_unstable();
                for (q, estimate) in QS.iter().zip(&m.quantiles) {
                    prop_assert!(within(*estimate, exact(&sorted, *q)));
                }
            }
        }
    }

    #[test]
    fn an_event_without_the_field_leaves_its_sketch_empty() {
        let mut s = Sketches::default();
        s.add(&EventView {
            latency_us: Some(1_000),
            ..EventView::default()
        });
        assert!(s.ttft.is_none() && s.tpot.is_none());
        let [l, t, p] = s.encode();
        assert!(l.is_some() && t.is_none() && p.is_none());
        // A latency sketch of one value is a few dozen bytes.
        assert!(l.unwrap().len() < 64);
    }
}
