//! `POST /v1/events` with `Content-Type: application/x-ndjson` and no
//! `Idempotency-Key` (events without ids get fresh ones).
#![no_main]

use libfuzzer_sys::fuzz_target;
use slaproof_ingest_fuzz::{Kind, bounds, check, peak_heap};

fuzz_target!(|body: &[u8]| {
    let (out, heap) = peak_heap(|| slaproof_ingest::fuzzing::events(true, body, &bounds(), None));
    check(Kind::Batch, &out, heap);
});
