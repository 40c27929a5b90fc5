//! `POST /v1/traces` with `Content-Type: application/json`: an
//! `ExportTraceServiceRequest` decoded and its GenAI spans mapped to events.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slaproof_ingest_fuzz::{Kind, bounds, check, peak_heap};

fuzz_target!(|body: &[u8]| {
    let (out, heap) = peak_heap(|| slaproof_ingest::fuzzing::traces(false, body, &bounds()));
    check(Kind::Spans, &out, heap);
});
