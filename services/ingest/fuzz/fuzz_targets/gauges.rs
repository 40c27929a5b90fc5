//! `POST /v1/gauges`: each input is checked as a JSON array and as NDJSON,
//! the two bodies the handler takes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slaproof_ingest_fuzz::{Kind, bounds, check, peak_heap};

fuzz_target!(|body: &[u8]| {
    let bounds = bounds();
    for ndjson in [false, true] {
        let (out, heap) = peak_heap(|| slaproof_ingest::fuzzing::gauges(ndjson, body, &bounds));
        check(Kind::Batch, &out, heap);
    }
});
