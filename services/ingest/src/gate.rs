//! Backpressure: a bounded number of requests are admitted (writing, or
//! waiting for one of a bounded number of writers); the next one is told to
//! come back later with 429 and `Retry-After` instead of being queued, so
//! memory stays bounded however much load is offered.
//!
//! Requests are admitted after authentication, so the gate knows whose they
//! are: no tenant holds more than its share of the places
//! (`ingest.max_in_flight_per_tenant`, by default a quarter), so one
//! tenant's slow uploads or bursts leave room for the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use slaproof_domain::ids::TenantId;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};

use crate::problem::IngestProblem;

/// Requests admitted per tenant, by tenant.
type InFlight = Arc<Mutex<HashMap<TenantId, usize>>>;

/// The admission gate of the ingest endpoints.
#[derive(Debug)]
pub(crate) struct Gate {
    admitted: Arc<Semaphore>,
    writers: Semaphore,
    per_tenant: usize,
    tenants: InFlight,
    retry_after_secs: u64,
}

/// A request's place inside the gate; released when dropped.
#[derive(Debug)]
pub(crate) struct Admission {
    _permit: OwnedSemaphorePermit,
    tenant: TenantId,
    tenants: InFlight,
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = tenants.get_mut(&self.tenant) {
            *n -= 1;
            if *n == 0 {
                tenants.remove(&self.tenant);
            }
        }
    }
}

impl Gate {
    /// `max_in_flight` requests admitted at once, at most `per_tenant` of
    /// one tenant, `writers` of them writing.
    pub(crate) fn new(
        max_in_flight: usize,
        per_tenant: usize,
        writers: usize,
        retry_after_secs: u64,
    ) -> Self {
        Self {
            admitted: Arc::new(Semaphore::new(max_in_flight)),
            writers: Semaphore::new(writers.min(max_in_flight)),
            per_tenant: per_tenant.clamp(1, max_in_flight.max(1)),
            tenants: InFlight::default(),
            retry_after_secs,
        }
    }

    /// A tenant's share when none is configured: a quarter of the gate,
    /// at least one place.
    pub(crate) fn default_share(max_in_flight: usize) -> usize {
        (max_in_flight / 4).max(1)
    }

    /// Admits an authenticated request, or answers 429 at once when its
    /// tenant has its share in use or the gate is full. Call before reading
    /// the body: a refused request costs no memory.
    pub(crate) fn admit(&self, tenant: TenantId) -> Result<Admission, IngestProblem> {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        let held = tenants.get(&tenant).copied().unwrap_or(0);
        if held >= self.per_tenant {
            tracing::debug!(%tenant, held, "tenant at its share of ingest; answering 429");
            return Err(IngestProblem::tenant_busy(
                self.per_tenant,
                self.retry_after_secs,
            ));
        }
        match Arc::clone(&self.admitted).try_acquire_owned() {
            Ok(permit) => {
                tenants.insert(tenant, held + 1);
                Ok(Admission {
                    _permit: permit,
                    tenant,
                    tenants: Arc::clone(&self.tenants),
                })
            }
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
        let gate = Gate::new(2, 2, 1, 3);
        let tenant = TenantId::new();
        let a = gate.admit(tenant).unwrap();
        let b = gate.admit(tenant).unwrap();
        let refused = gate.admit(TenantId::new()).unwrap_err();
        assert_eq!(refused.status(), 429);
        assert_eq!(refused.retry_after_secs(), Some(3));
        let writing = gate.writer(&a).await.unwrap();
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(20), gate.writer(&b));
        assert!(waiting.await.is_err(), "one writer at a time");
        drop(writing);
        drop(a);
        assert!(gate.admit(tenant).is_ok());
    }

    #[test]
    fn a_tenant_gets_its_share_and_the_others_the_rest() {
        assert_eq!(Gate::default_share(16), 4);
        assert_eq!(Gate::default_share(2), 1);
        let gate = Gate::new(4, 2, 1, 1);
        let (busy, other) = (TenantId::new(), TenantId::new());
        let first = gate.admit(busy).unwrap();
        let _second = gate.admit(busy).unwrap();
        let refused = gate.admit(busy).unwrap_err();
        assert_eq!(refused.status(), 429);
        assert!(
            refused.message().contains("this tenant"),
            "{}",
            refused.message()
        );
        let _others = [gate.admit(other).unwrap(), gate.admit(other).unwrap()];
        let full = gate.admit(TenantId::new()).unwrap_err();
        assert!(full.message().contains("capacity"), "{}", full.message());
        drop(first);
        let again = gate.admit(busy).unwrap();
        drop(again);
        drop(_second);
        assert!(gate.tenants.lock().unwrap().get(&busy).is_none());
    }
}
