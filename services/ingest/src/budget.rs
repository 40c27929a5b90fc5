//! Memory: the request data all admitted requests may hold at once.
//!
//! The gate bounds how many requests are in, not how much each holds, and
//! a request's memory can be far more than its body: a 64 MiB body
//! decompressed from a small gzip, an OTLP export whose decoded messages
//! are tens of times its encoded bytes, 10,000 events of 64 attributes.
//! So each admitted request charges what it holds to one budget
//! (`ingest.max_memory_bytes`) as it goes: its body as sent, its body
//! decompressed, an estimate of what it decodes into, the events it keeps
//! for the write. A request that would go past the budget is answered 429
//! with `Retry-After` (the others will give theirs back), or 413 when it
//! alone would need more than the whole budget. Everything is given back
//! when the request ends.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::problem::IngestProblem;

/// How long the oldest request waits for memory before it is refused too.
const OLDEST_WAITS: Duration = Duration::from_secs(10);

/// The memory budget of the ingest endpoints.
///
/// Charges that do not fit fail at once, so that requests holding part of
/// what they need never wait on each other, with one exception that keeps
/// the budget from refusing everyone when large requests arrive together:
/// the oldest request (by admission) waits for memory to be given back,
/// up to 10 s, and while it waits no other request takes any.
#[derive(Debug)]
pub(crate) struct Budget {
    total: usize,
    state: Mutex<State>,
    given_back: Condvar,
    retry_after_secs: u64,
}

#[derive(Debug, Default)]
struct State {
    used: usize,
    /// Requests holding a charge, by admission order.
    live: BTreeSet<u64>,
    next: u64,
    /// The oldest request is waiting for memory.
    waiting: bool,
}

impl Budget {
    pub(crate) fn new(total: usize, retry_after_secs: u64) -> Arc<Self> {
        Arc::new(Self {
            total,
            state: Mutex::new(State::default()),
            given_back: Condvar::new(),
            retry_after_secs,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn give(&self, n: usize) {
        if n > 0 {
            self.state().used -= n;
            self.given_back.notify_all();
        }
    }

    /// Bytes charged now, by all requests.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.state().used
    }
}

/// What one request holds of the budget; given back when dropped.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<Budget>,
    held: AtomicUsize,
    /// Its place in admission order.
    seq: u64,
}

impl Charge {
    pub(crate) fn new(budget: &Arc<Budget>) -> Arc<Self> {
        let seq = {
            let mut state = budget.state();
            let seq = state.next;
            state.next += 1;
            state.live.insert(seq);
            seq
        };
        Arc::new(Self {
            budget: Arc::clone(budget),
            held: AtomicUsize::new(0),
            seq,
        })
    }

    /// Charges `n` more bytes, waiting if this is the oldest request: call
    /// it off the I/O threads. 429 when the budget is in use by others,
    /// 413 when this request alone would need more than all of it.
    pub(crate) fn take(&self, n: usize) -> Result<(), IngestProblem> {
        self.charge(n, true)
    }

    /// Charges `n` more bytes without waiting, for the I/O threads.
    pub(crate) fn take_now(&self, n: usize) -> Result<(), IngestProblem> {
        self.charge(n, false)
    }

    fn charge(&self, n: usize, may_wait: bool) -> Result<(), IngestProblem> {
        let total = self.budget.total;
        if self.held.load(Ordering::Acquire).saturating_add(n) > total {
            return Err(IngestProblem::too_large(total).with_detail(format!(
                "this request would take more than the {total} bytes of memory ingest gives all \
                 requests together (ingest.max_memory_bytes); send smaller batches"
            )));
        }
        let deadline = Instant::now() + OLDEST_WAITS;
        let mut state = self.budget.state();
        loop {
            let oldest = state.live.first() == Some(&self.seq);
            let fits = state.used.saturating_add(n) <= total;
            if fits && (oldest || !state.waiting) {
                state.used += n;
                if oldest {
                    state.waiting = false;
                }
                self.held.fetch_add(n, Ordering::AcqRel);
                return Ok(());
            }
            let now = Instant::now();
            if !(oldest && may_wait) || now >= deadline {
                if oldest {
                    state.waiting = false;
                }
                tracing::debug!(bytes = n, "ingest memory budget in use; answering 429");
                return Err(
                    IngestProblem::overloaded(self.budget.retry_after_secs).with_detail(
                        "ingest holds as much request data as it may at once; retry after the time \
                     in Retry-After",
                    ),
                );
            }
            state.waiting = true;
            state = self
                .budget
                .given_back
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Gives back `n` bytes (at most what is held) before the request ends.
    pub(crate) fn give_back(&self, n: usize) {
        let given = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                Some(held - n.min(held))
            })
            .map_or(0, |held| n.min(held));
        self.budget.give(given);
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let held = *self.held.get_mut();
        let mut state = self.budget.state();
        state.used -= held;
        state.live.remove(&self.seq);
        drop(state);
        self.budget.given_back.notify_all();
    }
}

/// Bytes charged for a while (a body, its decompressed copy, what it is
/// decoded into) and given back when this is dropped.
#[derive(Debug)]
pub(crate) struct Transient {
    charge: Arc<Charge>,
    bytes: usize,
}

impl Transient {
    pub(crate) fn new(charge: &Arc<Charge>) -> Self {
        Self {
            charge: Arc::clone(charge),
            bytes: 0,
        }
    }

    /// Off the I/O threads (see [`Charge::take`]).
    pub(crate) fn take(&mut self, n: usize) -> Result<(), IngestProblem> {
        self.charge.take(n)?;
        self.bytes += n;
        Ok(())
    }

    /// On the I/O threads (see [`Charge::take_now`]).
    pub(crate) fn take_now(&mut self, n: usize) -> Result<(), IngestProblem> {
        self.charge.take_now(n)?;
        self.bytes += n;
        Ok(())
    }

    pub(crate) fn give_back(&mut self, n: usize) {
        let n = n.min(self.bytes);
        self.charge.give_back(n);
        self.bytes -= n;
    }
}

impl Drop for Transient {
    fn drop(&mut self) {
        self.charge.give_back(self.bytes);
    }
}

/// Bytes kept for the answer (events, refusals), charged in steps so that
/// the shared counter is touched once per step, not once per event.
#[derive(Debug)]
pub(crate) struct Kept<'a> {
    charge: &'a Charge,
    pending: usize,
}

/// Bytes kept before they are charged.
const KEPT_STEP: usize = 256 * 1024;

impl<'a> Kept<'a> {
    pub(crate) fn new(memory: &'a crate::Memory) -> Self {
        Self {
            charge: &memory.kept,
            pending: 0,
        }
    }

    pub(crate) fn charge(&mut self, n: usize) -> Result<(), IngestProblem> {
        self.pending += n;
        if self.pending >= KEPT_STEP {
            self.flush()?;
        }
        Ok(())
    }

    pub(crate) fn flush(&mut self) -> Result<(), IngestProblem> {
        let n = std::mem::take(&mut self.pending);
        self.charge.take(n)
    }
}

// What values take on the heap, as charged: estimates on the high side
// (an allocation's header and rounding), not exact figures.

/// A heap allocation of `len` bytes.
pub(crate) fn heap(len: usize) -> usize {
    if len == 0 {
        0
    } else {
        len.next_multiple_of(16) + 16
    }
}

fn text(s: &str) -> usize {
    heap(s.len())
}

fn maybe(s: Option<&String>) -> usize {
    s.map_or(0, |s| text(s))
}

/// A JSON value's heap: map entries as B-tree slots (key, value, a share
/// of the node).
pub(crate) fn json_bytes(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    match value {
        Value::String(s) => text(s),
        Value::Array(items) => {
            heap(items.len() * size_of::<Value>()) + items.iter().map(json_bytes).sum::<usize>()
        }
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| size_of::<String>() + size_of::<Value>() + 16 + text(k) + json_bytes(v))
            .sum(),
        _ => 0,
    }
}

/// An event kept for the write, beyond its place in the batch's vector.
pub(crate) fn event_bytes(e: &slaproof_store::events::StoredEvent) -> usize {
    text(&e.service)
        + maybe(e.model.as_ref())
        + maybe(e.request_id.as_ref())
        + maybe(e.error_class.as_ref())
        + json_bytes(&e.attributes)
}

/// A refusal kept for the answer.
pub(crate) fn error_bytes(e: &crate::event::EventError) -> usize {
    size_of::<crate::event::EventError>() + text(&e.field) + text(&e.reason)
}

/// A histogram point kept for the write.
pub(crate) fn point_bytes(p: &slaproof_store::histograms::HistogramPoint) -> usize {
    size_of::<slaproof_store::histograms::HistogramPoint>()
        + text(&p.metric)
        + text(&p.unit)
        + text(&p.service)
        + maybe(p.model.as_ref())
        + json_bytes(&p.attributes)
        + heap(p.bounds.len() * 8)
        + heap(p.bucket_counts.len() * 8)
}

/// A gauge value kept for the write.
pub(crate) fn gauge_bytes(g: &slaproof_store::gauges::GaugeValue) -> usize {
    size_of::<slaproof_store::gauges::GaugeValue>()
        + text(&g.metric)
        + text(&g.service)
        + text(&g.request_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_refused_past_the_budget_and_given_back() {
        let budget = Budget::new(100, 2);
        let a = Charge::new(&budget);
        let b = Charge::new(&budget);
        a.take(60).unwrap();
        let busy = b.take(50).unwrap_err();
        assert_eq!(busy.status(), 429);
        assert_eq!(busy.retry_after_secs(), Some(2));
        let never = b.take(101).unwrap_err();
        assert_eq!(never.status(), 413);
        {
            let mut t = Transient::new(&b);
            t.take(40).unwrap();
            assert_eq!(budget.used(), 100);
        }
        assert_eq!(budget.used(), 60);
        a.give_back(1_000);
        assert_eq!(budget.used(), 0);
        a.take(10).unwrap();
        drop(a);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn the_oldest_request_waits_for_memory_and_the_others_do_not() {
        let budget = Budget::new(100, 1);
        let oldest = Charge::new(&budget);
        let younger = Charge::new(&budget);
        oldest.take(30).unwrap();
        younger.take(60).unwrap();
        // The younger one would wait: it is refused at once instead.
        let started = Instant::now();
        assert_eq!(younger.take(20).unwrap_err().status(), 429);
        assert!(started.elapsed() < Duration::from_secs(1));
        // The oldest waits until the younger one gives its memory back.
        let waiter = {
            let oldest = Arc::clone(&oldest);
            std::thread::spawn(move || oldest.take(50))
        };
        while !budget.state().waiting {
            std::thread::sleep(Duration::from_millis(1));
        }
        // While it waits, memory given back is kept for it.
        let third = Charge::new(&budget);
        younger.give_back(20);
        assert_eq!(third.take(10).unwrap_err().status(), 429);
        drop(younger);
        waiter.join().unwrap().unwrap();
        assert_eq!(budget.used(), 80);
        third.take(15).unwrap();
        // Without waiting (on the I/O threads), the oldest is refused too.
        assert_eq!(oldest.take_now(10).unwrap_err().status(), 429);
    }
}
