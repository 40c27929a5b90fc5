//! Synthetic probes: slaproof measures a provider's endpoint itself, on each
//! probe's schedule, and stores every run as an event with source `probe`.
//!
//! A runner polls for due probes and claims them through the database
//! (`FOR UPDATE SKIP LOCKED`, `next_run_at` moved on in the same
//! statement), so any number of replicas run each slot exactly once. Every
//! connection goes through the operator's [`OutboundPolicy`], checked again
//! at the resolution the connection uses; a refusal is recorded by the
//! class of address, never the address a name resolved to, since the
//! provider reads its probes' results.
//!
//! # A provider cannot forge its own measurement
//!
//! Probes measure the provider independently, so nothing the provider can
//! do may put a result of its choosing in a probe run's place. Events are
//! keyed `(tenant_id, occurred_at, id)` and written `ON CONFLICT DO
//! NOTHING`; the provider writes events of its tenant with any id and time
//! through the ingest API. Were a run's id predictable (it once was a hash
//! of the probe and its slot, both known to the provider), a provider's
//! endpoint could, on seeing the probe's request, write good events under
//! that id at every microsecond of the moments before, and the run's own
//! event, written later, would be skipped as a duplicate: a failure
//! measured, none stored. Two walls stand against it:
//!
//! - A run's event id is random ([`fresh_event_id`]: 122 bits from the
//!   operating system's generator), drawn after the measurement and never
//!   shown before the event is stored, so no one can hold its key in
//!   advance. An id derived with a server secret (an HMAC of the probe and
//!   its slot) would be as unpredictable, but needs a secret stored, kept
//!   from every tenant and never rotated away; and the derivation bought
//!   nothing, since `occurred_at` is the run's own start, different for
//!   every run of a slot anyway. A write is retried with the same event, so
//!   a retry whose first attempt committed is a duplicate, never a second
//!   run.
//! - A write that finds its key taken checks that the event holding it is
//!   the run's own ([`probes::holds_run`]: source `probe`, which the ingest
//!   API refuses to take from a sender, and the run's request id). If it is
//!   not, the run is written again under a fresh id; it is never dropped.
//!
//! Everything the provider sends is `source = provider`, so SLAs and the
//! run list that read `source == "probe"` count slaproof's measurements
//! only.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use slaproof_app::webhooks::{PROBE_HEADER_PREFIX, WebhookKey};
use slaproof_domain::ids::{EventId, ProbeId, TenantId};
use slaproof_http::outbound::OutboundPolicy;
use slaproof_store::events::{EventSource, StoredEvent};
use slaproof_store::probes::{self, ClaimedProbe, ProbeDefinition, ProbeKind, ProbeResult};
use slaproof_store::{Database, StoreError};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::writer::{EventWriter, WriteError};

mod measure;
mod target;

pub use measure::{Measurement, completion_body, measure};
use target::ProbeResolver;
pub use target::{TargetRefused, check_literal};

/// The `User-Agent` of every probe request, so providers can tell probe
/// traffic from their customers'.
pub const USER_AGENT: &str = concat!("slaproof-probe/", env!("CARGO_PKG_VERSION"));

/// Retries of a probe event's write after a passing database failure.
const WRITE_RETRIES: u32 = 3;

/// Fresh ids a run's event is tried under when its key is found taken by
/// an event that is not its own (with random ids, one is all it ever takes).
const ID_ATTEMPTS: u32 = 3;

/// The runs in flight per tenant, poisoned or not: a count is all it holds.
fn lock(
    held: &std::sync::Mutex<HashMap<TenantId, i32>>,
) -> std::sync::MutexGuard<'_, HashMap<TenantId, i32>> {
    held.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One run counted against its tenant until dropped (also when the run's
/// task fails).
struct Holding {
    held: Arc<std::sync::Mutex<HashMap<TenantId, i32>>>,
    tenant: TenantId,
}

impl Holding {
    fn take(held: &Arc<std::sync::Mutex<HashMap<TenantId, i32>>>, tenant: TenantId) -> Self {
        *lock(held).entry(tenant).or_default() += 1;
        Self {
            held: held.clone(),
            tenant,
        }
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        if let Some(n) = lock(&self.held).get_mut(&self.tenant) {
            *n -= 1;
        }
    }
}

/// How the probe runner behaves; `slaproof`'s `[probes]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// How often a runner asks for due probes, in milliseconds: a run
    /// starts at most this late after its slot.
    pub poll_interval_ms: u64,
    /// Probes one runner measures at once.
    pub concurrency: usize,
    /// Of those, how many one tenant's probes may take: the rest stay open
    /// for the other tenants' runs, however slow one tenant's targets.
    /// At most `concurrency`.
    pub tenant_concurrency: usize,
    /// Bytes of an answer read at most; an answer is timed to its end or
    /// to this many bytes, whichever comes first.
    pub max_response_bytes: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            poll_interval_ms: 1000,
            // One tenant alone gets 16 at once, as before tenants had
            // shares; 16 more stay for the others.
            concurrency: 32,
            tenant_concurrency: 16,
            max_response_bytes: 1024 * 1024,
        }
    }
}

pub use slaproof_domain::settings::SettingsError;

impl Settings {
    /// Checks the rules.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if !(50..=60_000).contains(&self.poll_interval_ms) {
            return Err(SettingsError {
                key: "probes.poll_interval_ms",
                rule: format!(
                    "must be between 50 and 60000, got {}",
                    self.poll_interval_ms
                ),
            });
        }
        if !(1..=1024).contains(&self.concurrency) {
            return Err(SettingsError {
                key: "probes.concurrency",
                rule: format!("must be between 1 and 1024, got {}", self.concurrency),
            });
        }
        if !(1..=self.concurrency).contains(&self.tenant_concurrency) {
            return Err(SettingsError {
                key: "probes.tenant_concurrency",
                rule: format!(
                    "must be between 1 and probes.concurrency ({}), got {}",
                    self.concurrency, self.tenant_concurrency
                ),
            });
        }
        if !(1024..=64 * 1024 * 1024).contains(&self.max_response_bytes) {
            return Err(SettingsError {
                key: "probes.max_response_bytes",
                rule: format!(
                    "must be between 1024 and 64 MiB, got {}",
                    self.max_response_bytes
                ),
            });
        }
        Ok(())
    }

    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.poll_interval_ms)
    }
}

/// Why a run could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("reading the probe: {0}")]
    Store(#[from] StoreError),
    #[error("storing the probe's event: {0}")]
    Write(#[from] WriteError),
    #[error("building the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("every id tried for the probe's event was taken by another event")]
    KeyTaken,
    #[error("the probe's header {0} is sealed and {1}")]
    SealedHeader(String, String),
}

/// Runs due probes. Cheap to share: one HTTP client (its connection pool)
/// and one event writer for every probe.
#[derive(Debug)]
pub struct ProbeRunner {
    db: Database,
    settings: Settings,
    policy: OutboundPolicy,
    client: reqwest::Client,
    writer: EventWriter,
    /// Opens the sealed header values (`None`: only headers stored before
    /// they were sealed can be sent).
    key: Option<WebhookKey>,
}

impl ProbeRunner {
    pub fn new(
        db: Database,
        settings: Settings,
        policy: OutboundPolicy,
    ) -> Result<Self, ProbeError> {
        let client = policy
            .client_builder()
            // The policy's resolver, with the ranges probes refuse beyond
            // it and refusals that do not tell the addresses.
            .dns_resolver(Arc::new(ProbeResolver {
                policy: policy.clone(),
            }))
            .user_agent(USER_AGENT)
            // Every run opens its own connection (DNS, TCP, TLS included):
            // runs are alike whatever the interval, and every run's
            // addresses pass the policy's resolver again.
            .pool_max_idle_per_host(0)
            .build()
            .map_err(ProbeError::Client)?;
        Ok(Self {
            writer: EventWriter::new(db.clone()),
            db,
            settings,
            policy,
            client,
            key: None,
        })
    }

    /// Polls for due probes and runs them until `shutdown`; runs already
    /// started finish (each is bounded by its timeout). One tenant's runs
    /// hold at most `tenant_concurrency` of the slots.
    pub async fn run(self: Arc<Self>, shutdown: tokio_util::sync::CancellationToken) {
        let permits = Arc::new(Semaphore::new(self.settings.concurrency));
        // Runs in flight per tenant, told to each claim.
        let held: Arc<std::sync::Mutex<HashMap<TenantId, i32>>> = Arc::default();
        let mut running = JoinSet::new();
        loop {
            while running.try_join_next().is_some() {}
            let free = permits.available_permits();
            if free > 0 {
                let holding: Vec<(TenantId, i32)> = lock(&held)
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(t, n)| (*t, *n))
                    .collect();
                match probes::claim_due(
                    &self.db,
                    i32::try_from(free).unwrap_or(i32::MAX),
                    self.per_tenant(),
                    &holding,
                )
                .await
                {
                    Ok(claimed) => {
                        for probe in claimed {
                            let Ok(permit) = permits.clone().acquire_owned().await else {
                                break;
                            };
                            let runner = self.clone();
                            let holding = Holding::take(&held, probe.tenant);
                            running.spawn(async move {
                                runner.run_claimed(probe).await;
                                drop((holding, permit));
                            });
                        }
                    }
                    Err(err) => tracing::error!(error = %err, "could not claim due probes"),
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(self.settings.poll_interval()) => {}
            }
        }
        while running.join_next().await.is_some() {}
    }

    /// The key the app sealed probe headers under (the webhook key).
    pub fn with_key(mut self, key: WebhookKey) -> Self {
        self.key = Some(key);
        self
    }

    /// `definition` with its header values opened.
    fn opened(
        &self,
        tenant: TenantId,
        mut definition: ProbeDefinition,
    ) -> Result<ProbeDefinition, ProbeError> {
        for (name, value) in &mut definition.headers {
            if !value.starts_with(PROBE_HEADER_PREFIX) {
                continue;
            }
            let Some(key) = &self.key else {
                return Err(ProbeError::SealedHeader(
                    name.clone(),
                    "this runner has no key".into(),
                ));
            };
            *value = key
                .open_probe_header(tenant, name, value)
                .map_err(|e| ProbeError::SealedHeader(name.clone(), e.to_string()))?;
        }
        Ok(definition)
    }

    /// The most runs one tenant may hold.
    fn per_tenant(&self) -> i32 {
        i32::try_from(self.settings.tenant_concurrency).unwrap_or(i32::MAX)
    }

    /// Claims and runs every due probe, one batch after another, and
    /// returns how many ran: for tools and tests that want a round now.
    pub async fn run_due(self: &Arc<Self>) -> Result<usize, ProbeError> {
        let mut ran = 0;
        loop {
            let limit = i32::try_from(self.settings.concurrency).unwrap_or(i32::MAX);
            let claimed = probes::claim_due(&self.db, limit, self.per_tenant(), &[]).await?;
            if claimed.is_empty() {
                return Ok(ran);
            }
            let mut batch = JoinSet::new();
            for probe in claimed {
                let runner = self.clone();
                batch.spawn(async move { runner.run_claimed(probe).await });
            }
            while batch.join_next().await.is_some() {
                ran += 1;
            }
        }
    }

    /// Runs one claimed slot and records it; failures are logged, since the
    /// slot is gone either way (the next one comes at the probe's cadence).
    #[tracing::instrument(skip(self), fields(tenant = %probe.tenant, probe = %probe.id))]
    async fn run_claimed(&self, probe: ClaimedProbe) {
        if let Err(err) = self.try_run_claimed(probe).await {
            tracing::error!(error = %err, "probe run not recorded");
        }
    }

    async fn try_run_claimed(&self, claimed: ClaimedProbe) -> Result<(), ProbeError> {
        let mut tx = self.db.tenant_tx(claimed.tenant).await?;
        let stored = match probes::find(&mut tx, claimed.id).await {
            Ok(stored) => stored,
            // Deleted since it was claimed: nothing to measure.
            Err(StoreError::NotFound { .. }) => return Ok(()),
            Err(err) => return Err(err.into()),
        };
        tx.commit().await?;
        // Switched off since it was claimed: its owner wants no more runs.
        if !stored.definition.enabled {
            return Ok(());
        }
        // Not run (nor recorded against the provider) when a header does
        // not open: the fault is the platform's keys, not the target's.
        let definition = self.opened(claimed.tenant, stored.definition)?;
        let measured = measure(
            &self.client,
            &self.policy,
            &definition,
            self.settings.max_response_bytes,
        )
        .await;
        tracing::debug!(outcome = measured.outcome.as_str(), status = ?measured.status, latency_us = measured.latency_us, "probe ran");
        crate::metrics::probe_run(measured.outcome.as_str());
        let event = event_of(claimed.id, claimed.scheduled_at, &definition, &measured);
        self.store_event(claimed.tenant, event).await?;
        let mut tx = self.db.tenant_tx(claimed.tenant).await?;
        probes::record_result(
            &mut tx,
            claimed.id,
            &ProbeResult {
                at: measured.started_at,
                outcome: measured.outcome,
                status: measured.status,
                // The detail may quote the target (a stream's error
                // message): bounded, so a target cannot fill the row.
                error: measured.error_class.map(|class| match &measured.error {
                    Some(detail) => {
                        format!("{class}: {}", detail.chars().take(500).collect::<String>())
                    }
                    None => class.to_owned(),
                }),
                latency_us: Some(measured.latency_us),
            },
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Stores a run's event (source `probe`) and answers it as stored: under
    /// its own id, or a fresh one when that id's key was found held by an
    /// event that is not this run's (see the module's notes on forgery).
    /// The measurement cannot be repeated, so a passing database failure is
    /// retried with the same event: a retry whose first attempt committed
    /// finds the run's own event and stores nothing more.
    pub async fn store_event(
        &self,
        tenant: TenantId,
        mut event: StoredEvent,
    ) -> Result<StoredEvent, ProbeError> {
        let request_id = event.request_id.clone().unwrap_or_default();
        for _ in 0..ID_ATTEMPTS {
            if self.write_retrying(tenant, &event).await?.stored > 0 {
                return Ok(event);
            }
            let mut tx = self.db.tenant_tx(tenant).await?;
            let own = probes::holds_run(&mut tx, event.occurred_at, event.id, &request_id).await?;
            tx.commit().await?;
            if own {
                return Ok(event);
            }
            tracing::error!(
                event = %event.id,
                occurred_at = %event.occurred_at,
                request_id,
                "a probe run's event key is held by an event the runner did not write; storing the run under a fresh id"
            );
            event.id = fresh_event_id();
        }
        Err(ProbeError::KeyTaken)
    }

    async fn write_retrying(
        &self,
        tenant: TenantId,
        event: &StoredEvent,
    ) -> Result<crate::writer::Written, ProbeError> {
        let mut attempt = 0;
        loop {
            match self.writer.write(tenant, std::slice::from_ref(event)).await {
                Ok(written) => return Ok(written),
                Err(err) if err.is_transient() && attempt < WRITE_RETRIES => {
                    attempt += 1;
                    tracing::warn!(error = %err, attempt, "probe event not stored yet; retrying");
                    tokio::time::sleep(Duration::from_millis(200 * (1 << attempt))).await;
                }
                Err(err) => return Err(err.into()),
            }
        }
    }
}

/// A new id for a run's event: random (version 4, 122 bits from the
/// operating system's generator), so that no one can know it before the
/// event is stored.
pub fn fresh_event_id() -> EventId {
    EventId::from_uuid(uuid::Uuid::new_v4())
}

/// The event a run becomes, under a [fresh id](fresh_event_id).
pub fn event_of(
    probe: ProbeId,
    scheduled_at: DateTime<Utc>,
    definition: &ProbeDefinition,
    measured: &Measurement,
) -> StoredEvent {
    StoredEvent {
        id: fresh_event_id(),
        occurred_at: measured.started_at,
        source: EventSource::Probe,
        service: definition.service.clone(),
        // A probe run for a customer (with its credentials) names it and
        // counts for its SLAs; the provider's own counts for service-wide
        // SLAs only.
        customer: definition.customer.clone(),
        model: definition.model.clone(),
        // The probe and its slot, so an operator can find the run.
        request_id: Some(format!("{probe}@{}", scheduled_at.timestamp())),
        status: measured.status,
        error_class: measured.error_class.map(str::to_owned),
        latency_us: Some(measured.latency_us),
        ttft_us: measured.ttft_us,
        tpot_us: measured.tpot_us,
        input_tokens: measured.input_tokens,
        output_tokens: measured.output_tokens,
        streaming: Some(definition.kind == ProbeKind::StreamingCompletion),
        attributes: serde_json::json!({}),
    }
}

#[cfg(test)]
mod tests {
    use slaproof_store::probes::ProbeOutcome;

    use super::measure::tests::definition;
    use super::*;

    #[test]
    fn a_run_event_id_cannot_be_told_from_the_probe_and_its_slot() {
        let probe = ProbeId::new();
        let at = Utc::now();
        let measured = Measurement {
            started_at: at,
            outcome: ProbeOutcome::Good,
            status: Some(200),
            error_class: None,
            error: None,
            latency_us: 1,
            ttft_us: None,
            tpot_us: None,
            input_tokens: None,
            output_tokens: None,
        };
        let definition = definition();
        let one = event_of(probe, at, &definition, &measured);
        let two = event_of(probe, at, &definition, &measured);
        // Same probe, slot and measurement: different, random ids.
        assert_ne!(one.id, two.id);
        assert_eq!(one.id.uuid().get_version_num(), 4);
        assert_eq!(one.source, EventSource::Probe);
        assert_eq!(one.request_id, two.request_id);
    }
}
