//! The webhook worker's settings: the `[webhooks]` section of the
//! configuration.

use std::time::Duration;

use serde::Deserialize;

/// How the webhook worker runs. Every field has a default.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Milliseconds between two polls when the last found nothing to do.
    pub poll_interval_ms: u64,
    /// Outbox messages fanned out, and deliveries claimed, per round.
    pub batch: i32,
    /// Deliveries one worker sends at once.
    pub concurrency: usize,
    /// Of those, how many one tenant's deliveries may take: the rest stay
    /// open for the other tenants, however far behind one tenant's
    /// endpoints are. At most `concurrency`.
    pub tenant_concurrency: i32,
    /// Deliveries in flight to one endpoint at once, across workers (an
    /// ordered endpoint takes one).
    pub endpoint_concurrency: i32,
    /// How long a receiver may take to answer one delivery.
    pub request_timeout_secs: u64,
    /// How much of an answer is read before the connection is dropped (the
    /// first KiB is kept with the attempt).
    pub max_response_bytes: usize,
    /// How long a claimed delivery is the worker's before another may
    /// take it over (a worker that died mid-delivery): more than the
    /// request timeout.
    pub lease_secs: u64,
    /// An endpoint every attempt to which has failed for this long is
    /// disabled (with an `endpoint.disabled` fact, reason `failing`).
    pub disable_after_failing_secs: u64,
    /// Days attempts are kept; housekeeping then deletes them, and the
    /// finished deliveries left without any. At least as long as
    /// `disable_after_failing_secs`, which reads the attempts.
    pub attempts_retention_days: u32,
    /// The AES-256-GCM key endpoint secrets are sealed under, base64 of 32
    /// bytes (e.g. `openssl rand -base64 32`). Without one the platform
    /// makes a key on first use and keeps it in the database. Never
    /// shown by `Debug`.
    pub secret_key: Option<String>,
    /// Keys `secret_key` replaced, comma-separated base64: secrets sealed
    /// under them still open until `slaproof webhook reseal` seals them
    /// under `secret_key`; then they can go. Never shown by `Debug`.
    pub previous_secret_keys: Option<String>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("poll_interval_ms", &self.poll_interval_ms)
            .field("batch", &self.batch)
            .field("concurrency", &self.concurrency)
            .field("tenant_concurrency", &self.tenant_concurrency)
            .field("endpoint_concurrency", &self.endpoint_concurrency)
            .field("request_timeout_secs", &self.request_timeout_secs)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("lease_secs", &self.lease_secs)
            .field(
                "disable_after_failing_secs",
                &self.disable_after_failing_secs,
            )
            .field("attempts_retention_days", &self.attempts_retention_days)
            .field(
                "secret_key",
                &self.secret_key.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "previous_secret_keys",
                &self.previous_secret_keys.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            poll_interval_ms: 500,
            batch: 100,
            // One tenant alone gets 16 in flight, as before tenants had
            // shares; 16 more stay for the others.
            concurrency: 32,
            tenant_concurrency: 16,
            endpoint_concurrency: 16,
            request_timeout_secs: 15,
            max_response_bytes: 64 * 1024,
            lease_secs: 60,
            disable_after_failing_secs: 5 * 24 * 3600,
            attempts_retention_days: 30,
            secret_key: None,
            previous_secret_keys: None,
        }
    }
}

/// A setting outside its bounds: the error every settings section answers with.
pub use slaproof_domain::settings::SettingsError;

impl Settings {
    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.poll_interval_ms)
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs)
    }

    pub fn lease(&self) -> Duration {
        Duration::from_secs(self.lease_secs)
    }

    pub fn disable_after_failing(&self) -> Duration {
        Duration::from_secs(self.disable_after_failing_secs)
    }

    /// Checks the bounds.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let check = slaproof_domain::settings::within;
        check(
            "webhooks.poll_interval_ms",
            self.poll_interval_ms,
            10,
            60_000,
        )?;
        check(
            "webhooks.batch",
            u64::try_from(self.batch).unwrap_or(0),
            1,
            1000,
        )?;
        check("webhooks.concurrency", self.concurrency as u64, 1, 256)?;
        check(
            "webhooks.tenant_concurrency",
            u64::try_from(self.tenant_concurrency).unwrap_or(0),
            1,
            self.concurrency as u64,
        )?;
        check(
            "webhooks.endpoint_concurrency",
            u64::try_from(self.endpoint_concurrency).unwrap_or(0),
            1,
            256,
        )?;
        check(
            "webhooks.request_timeout_secs",
            self.request_timeout_secs,
            1,
            60,
        )?;
        check(
            "webhooks.max_response_bytes",
            self.max_response_bytes as u64,
            1024,
            1024 * 1024,
        )?;
        check("webhooks.lease_secs", self.lease_secs, 10, 3600)?;
        check(
            "webhooks.disable_after_failing_secs",
            self.disable_after_failing_secs,
            1,
            30 * 24 * 3600,
        )?;
        check(
            "webhooks.attempts_retention_days",
            u64::from(self.attempts_retention_days),
            1,
            3650,
        )?;
        // The disabling rule finds the start of a failing run among the
        // attempts: deleted sooner, a run would never look long enough.
        if u64::from(self.attempts_retention_days) * 24 * 3600 < self.disable_after_failing_secs {
            return Err(SettingsError {
                key: "webhooks.attempts_retention_days",
                rule: format!(
                    "must cover webhooks.disable_after_failing_secs ({} s), or a failing endpoint is never disabled",
                    self.disable_after_failing_secs
                ),
            });
        }
        if self.lease_secs <= self.request_timeout_secs {
            return Err(SettingsError {
                key: "webhooks.lease_secs",
                rule: format!(
                    "must exceed webhooks.request_timeout_secs ({}), or another worker takes over deliveries still in flight",
                    self.request_timeout_secs
                ),
            });
        }
        self.key()?;
        Ok(())
    }

    /// The configured key with the keys it replaced, if one is configured.
    pub fn key(&self) -> Result<Option<slaproof_app::webhooks::WebhookKey>, SettingsError> {
        use slaproof_app::webhooks::WebhookKey;
        let Some(key) = &self.secret_key else {
            if self.previous_secret_keys.is_some() {
                return Err(SettingsError {
                    key: "webhooks.previous_secret_keys",
                    rule: "needs webhooks.secret_key, the key that replaced them".to_owned(),
                });
            }
            return Ok(None);
        };
        let current = WebhookKey::from_base64(key).map_err(|e| SettingsError {
            key: "webhooks.secret_key",
            rule: e.to_string(),
        })?;
        let mut previous = Vec::new();
        for (i, text) in self
            .previous_secret_keys
            .iter()
            .flat_map(|list| list.split(','))
            .filter(|t| !t.trim().is_empty())
            .enumerate()
        {
            // The position, never the text: it is a key.
            previous.push(WebhookKey::from_base64(text).map_err(|e| SettingsError {
                key: "webhooks.previous_secret_keys",
                rule: format!("key {}: {e}", i + 1),
            })?);
        }
        Ok(Some(current.with_previous(previous)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_pass_and_bounds_are_named() {
        assert_eq!(Settings::default().validate(), Ok(()));
        let short_lease = Settings {
            lease_secs: 15,
            ..Settings::default()
        };
        assert_eq!(
            short_lease.validate().unwrap_err().key,
            "webhooks.lease_secs"
        );
        let bad_key = Settings {
            secret_key: Some("c2hvcnQ=".into()),
            ..Settings::default()
        };
        assert_eq!(bad_key.validate().unwrap_err().key, "webhooks.secret_key");
        let greedy = Settings {
            tenant_concurrency: 33,
            ..Settings::default()
        };
        assert_eq!(
            greedy.validate().unwrap_err().key,
            "webhooks.tenant_concurrency"
        );
        let never = Settings {
            disable_after_failing_secs: 0,
            ..Settings::default()
        };
        assert_eq!(
            never.validate().unwrap_err().key,
            "webhooks.disable_after_failing_secs"
        );
        assert!(!format!("{bad_key:?}").contains("c2hvcnQ"));
        for (days, ok) in [
            (0, false),
            (5, true),
            (4, false),
            (3650, true),
            (3651, false),
        ] {
            let retention = Settings {
                attempts_retention_days: days,
                ..Settings::default()
            };
            match retention.validate() {
                Ok(()) => assert!(ok, "{days}"),
                Err(e) => {
                    assert!(!ok, "{days}");
                    assert_eq!(e.key, "webhooks.attempts_retention_days");
                }
            }
        }
    }
}
