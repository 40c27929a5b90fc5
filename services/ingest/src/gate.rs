//! Backpressure: a bounded number of requests are admitted (writing, or
//! waiting for one of a bounded number of writers); the next one is told to
//! come back later with 429 and `Retry-After` instead of being queued, so
//! memory stays bounded however much load is offered.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};

use crate::problem::IngestProblem;

/// The admission gate of the ingest endpoints.
#[derive(Debug)]
pub(crate) struct Gate {
    admitted: Arc<Semaphore>,
    writers: Semaphore,
    retry_after_secs: u64,
}

/// A request's place inside the gate; released when dropped.
#[derive(Debug)]
pub(crate) struct Admission {
    _permit: OwnedSemaphorePermit,
}

impl Gate {
    /// `max_in_flight` requests admitted at once, `writers` of them writing.
    pub(crate) fn new(max_in_flight: usize, writers: usize, retry_after_secs: u64) -> Self {
        Self {
            admitted: Arc::new(Semaphore::new(max_in_flight)),
            writers: Semaphore::new(writers.min(max_in_flight)),
            retry_after_secs,
        }
    }

    /// Admits a request, or answers 429 at once when the gate is full. Call
    /// before reading the body: a refused request costs no memory.
    pub(crate) fn admit(&self) -> Result<Admission, IngestProblem> {
        match Arc::clone(&self.admitted).try_acquire_owned() {
            Ok(permit) => Ok(Admission { _permit: permit }),
            Err(_) => {
                tracing::debug!("ingest at capacity; answering 429");
                Err(IngestProblem::overloaded(self.retry_after_secs))
            }
        }
    }

    /// Waits for a writer. Only admitted requests wait, so the wait is
    /// bounded by the gate's size.
    pub(crate) async fn writer(
        &self,
        _admission: &Admission,
    ) -> Result<SemaphorePermit<'_>, IngestProblem> {
        // The semaphore is never closed.
        self.writers
            .acquire()
            .await
            .map_err(|_| IngestProblem::unavailable(self.retry_after_secs))
    }

    pub(crate) fn retry_after_secs(&self) -> u64 {
        self.retry_after_secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_gate_refuses_past_its_size_and_reopens() {
        let gate = Gate::new(2, 1, 3);
        let a = gate.admit().unwrap();
        let b = gate.admit().unwrap();
        let refused = gate.admit().unwrap_err();
        assert_eq!(refused.status(), 429);
        assert_eq!(refused.retry_after_secs(), Some(3));
        let writing = gate.writer(&a).await.unwrap();
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(20), gate.writer(&b));
        assert!(waiting.await.is_err(), "one writer at a time");
        drop(writing);
        drop(a);
        assert!(gate.admit().is_ok());
    }
}
