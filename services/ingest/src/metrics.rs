//! Ingest's own metrics for operators, through the OpenTelemetry API: a
//! no-op until the binary installs a meter provider (`telemetry.otlp_endpoint`).

use std::sync::LazyLock;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::global;
use opentelemetry::metrics::{Counter, Histogram};

/// Instruments made once, on first use: after the binary's set-up, so they
/// are bound to its provider. Attribute values are static strings, so
/// recording allocates nothing on the hot path.
struct Instruments {
    accepted: Counter<u64>,
    refused: Counter<u64>,
    batches_refused: Counter<u64>,
    write_duration: Histogram<f64>,
    probe_runs: Counter<u64>,
    gauges_accepted: Counter<u64>,
    gauges_refused: Counter<u64>,
    points_stored: Counter<u64>,
    points_refused: Counter<u64>,
}

static INSTRUMENTS: LazyLock<Instruments> = LazyLock::new(|| {
    let meter = global::meter("slaproof-ingest");
    Instruments {
        accepted: meter
            .u64_counter("slaproof.ingest.events.accepted")
            .with_unit("{event}")
            .with_description("Events stored or recognised as duplicates")
            .build(),
        refused: meter
            .u64_counter("slaproof.ingest.events.refused")
            .with_unit("{event}")
            .with_description(
                "Events refused, by reason: invalid, or valid but in a refused atomic batch",
            )
            .build(),
        batches_refused: meter
            .u64_counter("slaproof.ingest.batches.refused")
            .with_unit("{batch}")
            .with_description("Batches answered 429 (at capacity) or 503 (store unavailable)")
            .build(),
        write_duration: meter
            .f64_histogram("slaproof.ingest.write.duration")
            .with_unit("s")
            .with_description("Time to write one batch, waiting for a writer included")
            .build(),
        probe_runs: meter
            .u64_counter("slaproof.probes.runs")
            .with_unit("{run}")
            .with_description("Synthetic probe runs, by result: good, bad, error")
            .build(),
        gauges_accepted: meter
            .u64_counter("slaproof.ingest.gauges.accepted")
            .with_unit("{value}")
            .with_description("Gauge values stored, by outcome: new, or duplicate (a retry)")
            .build(),
        gauges_refused: meter
            .u64_counter("slaproof.ingest.gauges.refused")
            .with_unit("{value}")
            .with_description(
                "Gauge values refused, by reason: invalid, atomic, or conflict (another value stored before)",
            )
            .build(),
        points_stored: meter
            .u64_counter("slaproof.ingest.histogram_points.stored")
            .with_unit("{point}")
            .with_description("OTLP GenAI histogram data points stored, by outcome: new, or duplicate")
            .build(),
        points_refused: meter
            .u64_counter("slaproof.ingest.histogram_points.refused")
            .with_unit("{point}")
            .with_description("OTLP metric data points refused (another kind, or invalid)")
            .build(),
    }
});

/// Why events were refused.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Refusal {
    /// The event itself failed a check.
    Invalid,
    /// The event was valid, but its atomic batch held an invalid one.
    Atomic,
    /// A gauge value differing from the one stored before for its request.
    Conflict,
}

impl Refusal {
    fn as_str(self) -> &'static str {
        match self {
            Refusal::Invalid => "invalid",
            Refusal::Atomic => "atomic",
            Refusal::Conflict => "conflict",
        }
    }
}

pub(crate) fn accepted(events: usize) {
    INSTRUMENTS.accepted.add(events as u64, &[]);
}

pub(crate) fn refused(reason: Refusal, events: usize) {
    if events == 0 {
        return;
    }
    INSTRUMENTS
        .refused
        .add(events as u64, &[KeyValue::new("reason", reason.as_str())]);
}

/// A batch answered 429 or 503, for the client to retry.
pub(crate) fn batch_refused(status: u16) {
    let status = if status == 429 { "429" } else { "503" };
    INSTRUMENTS
        .batches_refused
        .add(1, &[KeyValue::new("http.response.status_code", status)]);
}

pub(crate) fn write_duration(took: Duration) {
    INSTRUMENTS.write_duration.record(took.as_secs_f64(), &[]);
}

pub(crate) fn probe_run(result: &'static str) {
    INSTRUMENTS
        .probe_runs
        .add(1, &[KeyValue::new("result", result)]);
}

/// Gauge values of one batch now stored: `new` ones and `duplicates`.
pub(crate) fn gauges_accepted(new: u64, duplicates: u64) {
    if new > 0 {
        INSTRUMENTS
            .gauges_accepted
            .add(new, &[KeyValue::new("outcome", "new")]);
    }
    if duplicates > 0 {
        INSTRUMENTS
            .gauges_accepted
            .add(duplicates, &[KeyValue::new("outcome", "duplicate")]);
    }
}

pub(crate) fn gauges_refused(reason: Refusal, values: usize) {
    if values == 0 {
        return;
    }
    INSTRUMENTS
        .gauges_refused
        .add(values as u64, &[KeyValue::new("reason", reason.as_str())]);
}

/// OTLP histogram data points of one export now stored: `new` ones and
/// `duplicates` (stored before, by an earlier send of the same export).
pub(crate) fn points_stored(new: u64, duplicates: u64) {
    if new > 0 {
        INSTRUMENTS
            .points_stored
            .add(new, &[KeyValue::new("outcome", "new")]);
    }
    if duplicates > 0 {
        INSTRUMENTS
            .points_stored
            .add(duplicates, &[KeyValue::new("outcome", "duplicate")]);
    }
}

pub(crate) fn points_refused(points: usize) {
    if points > 0 {
        INSTRUMENTS.points_refused.add(points as u64, &[]);
    }
}
