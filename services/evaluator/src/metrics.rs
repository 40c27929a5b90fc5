//! The evaluator's own metrics for operators, through the OpenTelemetry API:
//! a no-op until the binary installs a meter provider.

use std::sync::LazyLock;
use std::time::Duration;

use opentelemetry::global;
use opentelemetry::metrics::{Counter, Gauge, Histogram};

use crate::failures::Stuck;

/// Made on first use, after the binary's set-up, so bound to its provider.
struct Instruments {
    evaluated: Counter<u64>,
    failures: Counter<u64>,
    duration: Histogram<f64>,
    lag: Gauge<f64>,
    sla_failures: Counter<u64>,
    failing_slas: Gauge<u64>,
    stuck_slas: Gauge<u64>,
    failing_tenants: Gauge<u64>,
    stuck_tenants: Gauge<u64>,
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
        sla_failures: meter
            .u64_counter("slaproof.evaluator.sla.failures")
            .with_unit("{sla}")
            .with_description(
                "SLA evaluations that failed (unreadable, or rolled back) while their tenant's other SLAs were evaluated",
            )
            .build(),
        failing_slas: meter
            .u64_gauge("slaproof.evaluator.slas.failing")
            .with_unit("{sla}")
            .with_description("SLAs, across tenants, whose latest evaluation failed")
            .build(),
        stuck_slas: meter
            .u64_gauge("slaproof.evaluator.slas.stuck")
            .with_unit("{sla}")
            .with_description("SLAs, across tenants, whose evaluation failed 10 rounds in a row or more")
            .build(),
        failing_tenants: meter
            .u64_gauge("slaproof.evaluator.tenants.failing")
            .with_unit("{tenant}")
            .with_description("Tenants whose evaluation job is failing and waits to be retried")
            .build(),
        stuck_tenants: meter
            .u64_gauge("slaproof.evaluator.tenants.stuck")
            .with_unit("{tenant}")
            .with_description(
                "Tenants whose evaluation job failed its attempts in a row (10) or more: retried every 10 minutes at most",
            )
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

pub(crate) fn sla_failed() {
    INSTRUMENTS.sla_failures.add(1, &[]);
}

/// Every replica counts all tenants each round, so each reports the same.
pub(crate) fn stuck(stuck: Stuck) {
    let instruments = &*INSTRUMENTS;
    instruments.failing_slas.record(stuck.failing_slas, &[]);
    instruments.stuck_slas.record(stuck.stuck_slas, &[]);
    instruments
        .failing_tenants
        .record(stuck.failing_tenants, &[]);
    instruments.stuck_tenants.record(stuck.stuck_tenants, &[]);
}
