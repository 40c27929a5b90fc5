//! `POST /v1/metrics` with `Content-Type: application/json`: an
//! `ExportMetricsServiceRequest` decoded and its data points mapped to
//! histogram points or refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slaproof_ingest_fuzz::{Kind, bounds, check, peak_heap};

fuzz_target!(|body: &[u8]| {
    let (out, heap) = peak_heap(|| slaproof_ingest::fuzzing::metrics(false, body, &bounds()));
    check(Kind::DataPoints, &out, heap);
});
