//! The evaluator's own metrics for operators, through the OpenTelemetry API:
//! a no-op until the binary installs a meter provider.

use std::sync::LazyLock;
use std::time::Duration;

use opentelemetry::global;
use opentelemetry::metrics::{Counter, Gauge, Histogram};

/// Made on first use, after the binary's set-up, so bound to its provider.
struct Instruments {
    evaluated: Counter<u64>,
    failures: Counter<u64>,
    duration: Histogram<f64>,
    lag: Gauge<f64>,
}

static INSTRUMENTS: LazyLock<Instruments> = LazyLock::new(|| {
    let meter = global::meter("slaproof-evaluator");
    Instruments {
        evaluated: meter
            .u64_counter("slaproof.evaluator.tenants.evaluated")
            .with_unit("{tenant}")
            .with_description("Tenant evaluations committed")
            .build(),
        failures: meter
            .u64_counter("slaproof.evaluator.failures")
            .with_unit("{tenant}")
            .with_description("Tenant evaluations that failed and will be retried")
            .build(),
        duration: meter
            .f64_histogram("slaproof.evaluator.evaluation.duration")
            .with_unit("s")
            .with_description("Time to evaluate one tenant, commit included")
            .build(),
        lag: meter
            .f64_gauge("slaproof.evaluator.watermark.lag")
            .with_unit("s")
            .with_description("How far the last evaluated tenant's watermark is behind real time")
            .build(),
    }
});

pub(crate) fn evaluated(took: Duration, lag_secs: f64) {
    let instruments = &*INSTRUMENTS;
    instruments.evaluated.add(1, &[]);
    instruments.duration.record(took.as_secs_f64(), &[]);
    instruments.lag.record(lag_secs.max(0.0), &[]);
}

pub(crate) fn failed() {
    INSTRUMENTS.failures.add(1, &[]);
}
