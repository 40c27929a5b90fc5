//! Entry points for the fuzz targets in `fuzz/` (cargo-fuzz), not an API:
//! each runs on a decoded body what its handler runs before the database,
//! with a memory budget of its own of the default size.

use opentelemetry_proto::tonic::metrics::v1::metric;
use slaproof_store::events::StoredEvent;
use slaproof_store::histograms::HistogramPoint;

use crate::body::BatchFormat;
use crate::budget::{self, Budget, Charge, Transient};
use crate::event::{EventError, TimeBounds};
use crate::otlp::{self, Encoding};
use crate::otlp_metrics;
use crate::otlp_size::Msg;
use crate::problem::IngestProblem;
use crate::{Memory, Settings};

/// Most items one request may carry (`body::MAX_ITEMS`).
pub const MAX_ITEMS: usize = crate::body::MAX_ITEMS;
/// Most refusals an answer lists (`problem::MAX_ERRORS_LISTED`).
pub const MAX_ERRORS_LISTED: usize = crate::problem::MAX_ERRORS_LISTED;
/// Most `(field, reason)` pairs an answer counts apart (`problem::MAX_COUNTS`).
pub const MAX_COUNTS: usize = crate::problem::MAX_COUNTS;

/// What a body came to.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Items seen: events, values, GenAI spans or data points.
    pub received: usize,
    /// Items valid, to be written.
    pub accepted: usize,
    /// Items refused.
    pub rejected: usize,
    /// Native and gauges: the refusals the answer lists, the entries
    /// of its `counts` and what they add up to.
    pub listed: Option<usize>,
    pub count_entries: Option<usize>,
    pub counted: Option<usize>,
    /// OTLP: the items and bytes `otlp_size` estimated before decoding,
    /// and the items (spans, data points of every type) decoded.
    pub estimate: Option<(usize, usize)>,
    pub decoded_items: Option<usize>,
    /// The status the body was refused with as a whole, if it was.
    pub refused: Option<u16>,
}

impl Outcome {
    fn refused(problem: &IngestProblem) -> Self {
        Self {
            refused: Some(problem.status().as_u16()),
            ..Self::default()
        }
    }

    fn batch(received: usize, accepted: usize, errors: Vec<EventError>) -> Self {
        let counts = crate::problem::counts(&errors);
        Self {
            received,
            accepted,
            rejected: errors.len(),
            count_entries: Some(counts.len()),
            counted: Some(counts.iter().map(|c| c.count).sum()),
            listed: Some(crate::problem::listed(errors).len()),
            ..Self::default()
        }
    }
}

/// A request's memory, from a budget of its own.
fn memory() -> Memory {
    let settings = Settings::default();
    let budget = Budget::new(settings.max_memory_bytes, settings.retry_after_secs);
    let charge = Charge::new(&budget);
    Memory {
        held: Transient::new(&charge),
        kept: charge,
    }
}

fn format(ndjson: bool) -> BatchFormat {
    if ndjson {
        BatchFormat::Ndjson
    } else {
        BatchFormat::JsonArray
    }
}

/// `POST /v1/events`: `native::check`, with or without an `Idempotency-Key`.
pub fn events(ndjson: bool, body: &[u8], bounds: &TimeBounds, key: Option<&str>) -> Outcome {
    match crate::native::check(format(ndjson), body, bounds, key, &mut memory()) {
        Ok(c) => Outcome::batch(c.received, c.events.len(), c.errors),
        Err(problem) => Outcome::refused(&problem),
    }
}

/// `POST /v1/gauges`: `gauges::check`.
pub fn gauges(ndjson: bool, body: &[u8], bounds: &TimeBounds) -> Outcome {
    match crate::gauges::check(format(ndjson), body, bounds, &mut memory()) {
        Ok(c) => Outcome::batch(c.received, c.values.len(), c.errors),
        Err(problem) => Outcome::refused(&problem),
    }
}

/// The OTLP encoding of a body.
fn encoding(protobuf: bool) -> Encoding {
    if protobuf {
        Encoding::Protobuf
    } else {
        Encoding::Json
    }
}

/// `POST /v1/traces`: what the handler runs off the I/O threads: the size
/// estimate (`otlp::estimate`), the decoding with its charge
/// (`otlp::decode`), `otlp::map_export`, and the charge for what is kept.
pub fn traces(protobuf: bool, body: &[u8], bounds: &TimeBounds) -> Outcome {
    let encoding = encoding(protobuf);
    let mut memory = memory();
    let mut out = Outcome::default();
    let run = |memory: &mut Memory, out: &mut Outcome| -> Result<(), IngestProblem> {
        let estimate = otlp::estimate(Msg::TraceRequest, encoding, body)?;
        out.estimate = Some((estimate.items, estimate.bytes));
        let export = otlp::decode(encoding, body, &estimate, memory)?;
        out.decoded_items = Some(
            export
                .resource_spans
                .iter()
                .flat_map(|r| &r.scope_spans)
                .map(|s| s.spans.len())
                .sum(),
        );
        let m = otlp::map_export(&export, bounds, otlp::DEFAULT_CUSTOMER_ATTRIBUTE);
        memory.kept.take(
            m.events.capacity() * size_of::<StoredEvent>()
                + m.events.iter().map(budget::event_bytes).sum::<usize>()
                + m.errors.iter().map(budget::error_bytes).sum::<usize>(),
        )?;
        (out.received, out.accepted, out.rejected) = (m.spans, m.events.len(), m.errors.len());
        Ok(())
    };
    if let Err(problem) = run(&mut memory, &mut out) {
        out.refused = Some(problem.status().as_u16());
    }
    out
}

/// `POST /v1/metrics`: as [`traces`], for `otlp_metrics`.
pub fn metrics(protobuf: bool, body: &[u8], bounds: &TimeBounds) -> Outcome {
    let encoding = encoding(protobuf);
    let mut memory = memory();
    let mut out = Outcome::default();
    let run = |memory: &mut Memory, out: &mut Outcome| -> Result<(), IngestProblem> {
        let estimate = otlp::estimate(Msg::MetricsRequest, encoding, body)?;
        out.estimate = Some((estimate.items, estimate.bytes));
        let export = otlp_metrics::decode(encoding, body, &estimate, memory)?;
        out.decoded_items = Some(
            export
                .resource_metrics
                .iter()
                .flat_map(|r| &r.scope_metrics)
                .flat_map(|s| &s.metrics)
                .filter_map(|m| m.data.as_ref())
                .map(|data| match data {
                    metric::Data::Gauge(g) => g.data_points.len(),
                    metric::Data::Sum(s) => s.data_points.len(),
                    metric::Data::Histogram(h) => h.data_points.len(),
                    metric::Data::ExponentialHistogram(e) => e.data_points.len(),
                    metric::Data::Summary(s) => s.data_points.len(),
                })
                .sum(),
        );
        let m = otlp_metrics::map_export(&export, bounds);
        memory.kept.take(
            m.points.capacity() * size_of::<HistogramPoint>()
                + m.points.iter().map(budget::point_bytes).sum::<usize>()
                + m.errors.iter().map(budget::error_bytes).sum::<usize>(),
        )?;
        (out.received, out.accepted, out.rejected) =
            (m.data_points, m.points.len(), m.errors.len());
        Ok(())
    };
    if let Err(problem) = run(&mut memory, &mut out) {
        out.refused = Some(problem.status().as_u16());
    }
    out
}
