//! `POST /v1/slas` and `slaproof sla apply`: the SLA document reader
//! (native YAML or JSON, OpenSLO), as `SlaDefinition::read_document` runs
//! it for the API before any transaction. Besides no panic and the
//! script's time and memory limits: at most [`HEAP_LIMIT`] of heap whatever
//! anchors and aliases the document holds, and every SLA it accepts reads
//! back the same from each form slaproof writes (native YAML, OpenSLO).
#![no_main]

use libfuzzer_sys::fuzz_target;
use slaproof_domain::sla::SlaDefinition;
use slaproof_ingest_fuzz::peak_heap;

/// The most heap one document may take while it is read: the API's goal
/// for any one request is 512 MiB for the whole process.
const HEAP_LIMIT: usize = 256 << 20;

fuzz_target!(|body: &[u8]| {
    let Ok(text) = std::str::from_utf8(body) else {
        // The API refuses a body that is not UTF-8 before reading it.
        return;
    };
    let (read, heap) = peak_heap(|| SlaDefinition::read_document(text));
    assert!(heap <= HEAP_LIMIT, "{heap} bytes of heap for {} bytes", text.len());
    let Ok((sla, _)) = read else {
        return;
    };
    let native = sla.to_native_yaml();
    let again = SlaDefinition::from_document(&native)
        .unwrap_or_else(|e| panic!("its own native YAML does not read back: {e}\n{native}"));
    assert_eq!(again, sla, "native YAML round trip\n{native}");
    let openslo = sla.to_openslo_yaml();
    let again = SlaDefinition::from_document(&openslo)
        .unwrap_or_else(|e| panic!("its own OpenSLO does not read back: {e}\n{openslo}"));
    assert_eq!(again, sla, "OpenSLO round trip\n{openslo}");
});
