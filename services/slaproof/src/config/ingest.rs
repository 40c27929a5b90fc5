//! The `[ingest]` section: the limits of `POST /v1/events` and the OTLP
//! endpoints, and their rules.

use serde::Deserialize;

use super::{ConfigError, EventsConfig, invalid};

/// The ingest service (`POST /v1/events`).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IngestConfig {
    /// Largest request body as sent (compressed or not), in bytes; 413 past it.
    pub max_body_bytes: usize,
    /// Largest body once decompressed, in bytes; 413 past it.
    pub max_decoded_bytes: usize,
    /// How many seconds in the future an event's time may be (clock skew).
    pub max_future_secs: u64,
    /// Batches written at once; each holds a database connection.
    pub writers: usize,
    /// Requests admitted at once (writing or waiting for a writer); the
    /// next one gets 429 with Retry-After instead of a queue that grows.
    pub max_in_flight: usize,
    /// Requests of one tenant admitted at once, so that one tenant's slow
    /// uploads leave room for the others; unset: a quarter of
    /// `max_in_flight`, at least 1.
    pub max_in_flight_per_tenant: Option<usize>,
    /// Seconds sent in Retry-After with 429 and 503.
    pub retry_after_secs: u64,
    /// Memory all admitted requests may hold at once, in bytes: bodies as
    /// sent and decompressed, what they decode into, the events they write.
    /// Past it a request gets 429 (413 if it alone would go past it).
    pub max_memory_bytes: usize,
    /// Seconds an admitted request's body has to arrive in whole; 408 after.
    pub body_timeout_secs: u64,
    /// Requests per second one ingest key may send; more get 429 with
    /// Retry-After. 0 turns the limit off.
    pub rate_limit_per_sec: f64,
    /// Requests one key may send at once above its rate.
    pub rate_limit_burst: u32,
    /// Seconds what the database said of an ingest key is remembered; a
    /// revoked key is refused within this time. 0: asked every time.
    pub key_cache_secs: u64,
}

impl Default for IngestConfig {
    fn default() -> Self {
        let defaults = slaproof_ingest::Settings::default();
        Self {
            max_body_bytes: defaults.max_body_bytes,
            max_decoded_bytes: defaults.max_decoded_bytes,
            max_future_secs: defaults.max_future_secs,
            writers: defaults.writers,
            max_in_flight: defaults.max_in_flight,
            max_in_flight_per_tenant: defaults.max_in_flight_per_tenant,
            retry_after_secs: defaults.retry_after_secs,
            max_memory_bytes: defaults.max_memory_bytes,
            body_timeout_secs: defaults.body_timeout_secs,
            rate_limit_per_sec: defaults.rate_limit_per_sec,
            rate_limit_burst: defaults.rate_limit_burst,
            key_cache_secs: defaults.key_cache_secs,
        }
    }
}

impl IngestConfig {
    /// The ingest service's settings; events older than the retention are
    /// refused, since they would be dropped at the next upkeep.
    pub fn settings(&self, events: &EventsConfig) -> slaproof_ingest::Settings {
        slaproof_ingest::Settings {
            max_body_bytes: self.max_body_bytes,
            max_decoded_bytes: self.max_decoded_bytes,
            max_future_secs: self.max_future_secs,
            retention_days: events.retention_days,
            writers: self.writers,
            max_in_flight: self.max_in_flight,
            max_in_flight_per_tenant: self.max_in_flight_per_tenant,
            retry_after_secs: self.retry_after_secs,
            max_memory_bytes: self.max_memory_bytes,
            body_timeout_secs: self.body_timeout_secs,
            rate_limit_per_sec: self.rate_limit_per_sec,
            rate_limit_burst: self.rate_limit_burst,
            key_cache_secs: self.key_cache_secs,
        }
    }

    /// Checks every rule; each writer holds one of `max_connections`.
    pub(super) fn validate(&self, max_connections: u32) -> Result<(), ConfigError> {
        let ingest = self;
        if !(1024..=1 << 30).contains(&ingest.max_body_bytes) {
            return Err(invalid(
                "ingest.max_body_bytes",
                format!(
                    "must be between 1024 and 2^30, got {}",
                    ingest.max_body_bytes
                ),
            ));
        }
        if !(ingest.max_body_bytes..=1 << 32).contains(&ingest.max_decoded_bytes) {
            return Err(invalid(
                "ingest.max_decoded_bytes",
                format!(
                    "must be between ingest.max_body_bytes ({}) and 2^32, got {}",
                    ingest.max_body_bytes, ingest.max_decoded_bytes
                ),
            ));
        }
        if ingest.max_future_secs > 86_400 {
            return Err(invalid(
                "ingest.max_future_secs",
                format!("must be at most 86400, got {}", ingest.max_future_secs),
            ));
        }
        // Each writer holds a connection; the others serve keys and health.
        let connections = max_connections as usize;
        if ingest.writers == 0 || ingest.writers >= connections {
            return Err(invalid(
                "ingest.writers",
                format!(
                    "must be at least 1 and below database.max_connections ({connections}), got {}",
                    ingest.writers
                ),
            ));
        }
        if !(ingest.writers..=100_000).contains(&ingest.max_in_flight) {
            return Err(invalid(
                "ingest.max_in_flight",
                format!(
                    "must be between ingest.writers ({}) and 100000, got {}",
                    ingest.writers, ingest.max_in_flight
                ),
            ));
        }
        if !(1..=3600).contains(&ingest.retry_after_secs) {
            return Err(invalid(
                "ingest.retry_after_secs",
                format!(
                    "must be between 1 and 3600, got {}",
                    ingest.retry_after_secs
                ),
            ));
        }
        if let Some(share) = ingest.max_in_flight_per_tenant
            && !(1..=ingest.max_in_flight).contains(&share)
        {
            return Err(invalid(
                "ingest.max_in_flight_per_tenant",
                format!(
                    "must be between 1 and ingest.max_in_flight ({}), got {share}",
                    ingest.max_in_flight
                ),
            ));
        }
        // A request's decompressed body alone must fit.
        if !(ingest.max_decoded_bytes..=1 << 40).contains(&ingest.max_memory_bytes) {
            return Err(invalid(
                "ingest.max_memory_bytes",
                format!(
                    "must be between ingest.max_decoded_bytes ({}) and 2^40, got {}",
                    ingest.max_decoded_bytes, ingest.max_memory_bytes
                ),
            ));
        }
        if !(1..=3600).contains(&ingest.body_timeout_secs) {
            return Err(invalid(
                "ingest.body_timeout_secs",
                format!(
                    "must be between 1 and 3600, got {}",
                    ingest.body_timeout_secs
                ),
            ));
        }
        if !(ingest.rate_limit_per_sec.is_finite() && ingest.rate_limit_per_sec >= 0.0) {
            return Err(invalid(
                "ingest.rate_limit_per_sec",
                format!(
                    "must be 0 (no limit) or more, got {}",
                    ingest.rate_limit_per_sec
                ),
            ));
        }
        if ingest.rate_limit_burst == 0 {
            return Err(invalid("ingest.rate_limit_burst", "must be at least 1"));
        }
        if ingest.key_cache_secs > 3600 {
            return Err(invalid(
                "ingest.key_cache_secs",
                format!("must be at most 3600, got {}", ingest.key_cache_secs),
            ));
        }
        Ok(())
    }
}
