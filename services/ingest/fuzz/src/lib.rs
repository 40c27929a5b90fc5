//! What the ingest fuzz targets share: a fixed clock, so that a crash found
//! once reproduces on any day; a heap meter; and the invariants every
//! outcome keeps.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use slaproof_ingest::Settings;
use slaproof_ingest::event::TimeBounds;
use slaproof_ingest::fuzzing::{MAX_COUNTS, MAX_ERRORS_LISTED, MAX_ITEMS, Outcome};

/// The fuzzers' "now": 2026-06-01T00:00:00Z. Seed bodies carry times just
/// before it, so they hold valid items.
pub const NOW_SECS: i64 = 1_780_272_000;

/// The times accepted at [`NOW_SECS`] under the default settings
/// (400 days back, 300 s ahead), as the handlers compute them.
pub fn bounds() -> TimeBounds {
    let settings = Settings::default();
    let now = DateTime::<Utc>::from_timestamp(NOW_SECS, 0).expect("a valid time");
    TimeBounds::at(
        now,
        settings.retention_days,
        chrono::Duration::seconds(i64::try_from(settings.max_future_secs).unwrap_or(i64::MAX)),
    )
}

/// The system allocator, counting the bytes live and their peak.
struct Meter;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let live = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

// SAFETY: every call is passed on to `System` unchanged; the counters are
// only bookkeeping.
unsafe impl GlobalAlloc for Meter {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            // Both blocks may be live for a moment; count the new one first.
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static METER: Meter = Meter;

/// Runs `f` and tells the most heap it held at once above what was live
/// before it.
pub fn peak_heap<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(before))
}

/// How a body's items may be counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Native events and gauge values: every item received is accepted or
    /// refused, a batch holds at most `MAX_ITEMS`, the answer lists and
    /// counts refusals.
    Batch,
    /// OTLP spans: every GenAI span is accepted or refused.
    Spans,
    /// OTLP data points: a point flagged "no recorded value" is neither.
    DataPoints,
}

/// Peak heap of an OTLP check allowed per byte of `otlp_size`'s estimate
/// (which is meant to be on the high side), beyond [`HEAP_SLACK`]. The
/// check holds the decoded export and the events or points mapped from it,
/// the latter charged to the budget separately, hence more than 1.
pub const HEAP_PER_ESTIMATED_BYTE: usize = 2;
/// Heap any check may use regardless of the estimate (parser buffers,
/// error texts).
pub const HEAP_SLACK: usize = 256 * 1024;

/// Panics (a libFuzzer crash) when an outcome breaks a rule; `heap` is the
/// check's peak heap from [`peak_heap`]. With `SLAPROOF_FUZZ_SHOW` set,
/// prints every outcome (for running a target on a few inputs).
pub fn check(kind: Kind, out: &Outcome, heap: usize) {
    static SHOW: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *SHOW.get_or_init(|| std::env::var_os("SLAPROOF_FUZZ_SHOW").is_some()) {
        eprintln!("{kind:?}: {out:?}, peak heap {heap} bytes");
    }
    assert!(
        out.accepted <= MAX_ITEMS,
        "{} items accepted, over MAX_ITEMS ({MAX_ITEMS}): {out:?}",
        out.accepted
    );
    match kind {
        Kind::Batch | Kind::Spans => assert_eq!(
            out.accepted + out.rejected,
            out.received,
            "every item is accepted or refused: {out:?}"
        ),
        Kind::DataPoints => assert!(
            out.accepted + out.rejected <= out.received,
            "more points decided than received: {out:?}"
        ),
    }
    if let Some(status) = out.refused {
        assert!(
            [400, 413].contains(&status),
            "refused with {status}, expected 400 or 413: {out:?}"
        );
    }
    match kind {
        Kind::Batch => {
            assert!(
                out.received <= MAX_ITEMS,
                "{} items read, over MAX_ITEMS ({MAX_ITEMS}): {out:?}",
                out.received
            );
            if out.refused.is_none() {
                let listed = out.listed.expect("a batch answer lists its refusals");
                assert!(
                    listed <= MAX_ERRORS_LISTED,
                    "{listed} refusals listed, over MAX_ERRORS_LISTED ({MAX_ERRORS_LISTED})"
                );
                assert_eq!(
                    listed,
                    out.rejected.min(MAX_ERRORS_LISTED),
                    "the first refusals are listed: {out:?}"
                );
                assert_eq!(
                    out.counted,
                    Some(out.rejected),
                    "the counts add up to the refusals: {out:?}"
                );
                assert!(
                    out.count_entries.is_some_and(|n| n <= MAX_COUNTS + 1),
                    "at most MAX_COUNTS ({MAX_COUNTS}) entries and `*`: {out:?}"
                );
            }
        }
        Kind::Spans | Kind::DataPoints => {
            assert_eq!(out.listed, None);
            if let Some(decoded) = out.decoded_items {
                let (estimated, bytes) = out.estimate.expect("estimated before decoding");
                assert!(
                    decoded <= estimated,
                    "{decoded} items decoded, {estimated} counted before decoding: {out:?}"
                );
                assert!(
                    decoded <= MAX_ITEMS,
                    "{decoded} items decoded, over MAX_ITEMS ({MAX_ITEMS}): {out:?}"
                );
                assert!(
                    out.received <= decoded,
                    "more items mapped than decoded: {out:?}"
                );
                assert!(
                    heap <= HEAP_PER_ESTIMATED_BYTE * bytes + HEAP_SLACK,
                    "peak heap {heap} bytes for an estimate of {bytes}: {out:?}"
                );
            }
        }
    }
}
