//! `POST /v1/events` with `Content-Type: application/json` and an
//! `Idempotency-Key`: the body as the handler's `native::check` sees it
//! once decoded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slaproof_ingest_fuzz::{Kind, bounds, check, peak_heap};

fuzz_target!(|body: &[u8]| {
    let (out, heap) =
        peak_heap(|| slaproof_ingest::fuzzing::events(false, body, &bounds(), Some("fuzz-batch")));
    check(Kind::Batch, &out, heap);
});
