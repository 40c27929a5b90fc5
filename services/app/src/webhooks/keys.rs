//! The key endpoint secrets are sealed under: configured or made by the
//! platform, rotated by configuring a new one beside the old and re-sealing.

use std::sync::Arc;

use serde::Serialize;
use std::collections::BTreeMap;

use slaproof_store::{platform_secrets, probes, tenants, webhooks};

use super::WebhookKey;
use crate::{App, AppError};

/// The name of the platform-made key in `platform_secrets`, used when the
/// operator configures none.
const KEY_NAME: &str = "webhook_secret_key";

/// What a re-seal did, over every tenant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Resealed {
    /// Endpoints looked at.
    pub endpoints: u64,
    /// Endpoints whose secrets and headers were sealed again under the
    /// current key (or whose headers were sealed for the first time).
    pub resealed: u64,
    /// Endpoints whose secret opens under none of the keys given: left as
    /// they are (their deliveries fail until the secret is rotated).
    pub unopenable: u64,
    /// Probes looked at.
    pub probes: u64,
    /// Probes whose header values were sealed again under the current key
    /// (or for the first time).
    pub probes_resealed: u64,
    /// Probes with a header value that opens under none of the keys
    /// given: left as they are (their runs stop until the header is set
    /// again).
    pub unopenable_probes: u64,
}

impl App {
    /// The operator's webhook key (`webhooks.secret_key`, with
    /// `webhooks.previous_secret_keys`), in place of the one the platform
    /// makes itself.
    pub fn with_webhook_key(mut self, key: WebhookKey) -> Self {
        self.webhook_key = Some(Arc::new(key));
        self
    }

    /// The key endpoint secrets are sealed under: the configured one, or
    /// one made on first use and kept in `platform_secrets` (readable only
    /// through a definer function), shared by every replica. A configured
    /// key still opens what the platform's key sealed, so that an operator
    /// moving to a key of its own loses no endpoint (then re-seals). The
    /// platform's key is read once per process: it never changes.
    pub async fn webhook_key(&self) -> Result<WebhookKey, AppError> {
        let platform = self
            .platform_webhook_key
            .get_or_try_init(|| async {
                let fresh = rand::random::<[u8; 32]>();
                let kept = platform_secrets::get_or_create(&self.db, KEY_NAME, &fresh).await?;
                WebhookKey::from_bytes(&kept).map_err(|e| AppError::Internal(Box::new(e)))
            })
            .await?
            .clone();
        Ok(match &self.webhook_key {
            Some(key) => (**key).clone().with_previous([platform]),
            None => platform,
        })
    }

    /// Seals every endpoint's secrets (and a rotation's previous secret)
    /// and custom headers, and every probe's header values, under the
    /// current key (headers stored in the
    /// clear before they were sealed too), tenant by tenant, each in one
    /// transaction:
    /// after it, the replaced keys can leave the configuration. An
    /// operator's operation (the CLI's `slaproof webhook reseal`); running
    /// it again does nothing more.
    #[tracing::instrument(skip(self))]
    pub async fn reseal_webhook_secrets(&self) -> Result<Resealed, AppError> {
        let key = self.webhook_key().await?;
        let mut done = Resealed::default();
        for tenant in tenants::list(&self.db).await? {
            let mut tx = self.db.tenant_tx(tenant.id).await?;
            for mut sealed in webhooks::sealed_secrets(&mut tx).await? {
                done.endpoints += 1;
                let stale = |s: &[u8]| !key.is_current(tenant.id, sealed.id, s);
                let headers_stale = match &sealed.headers_sealed {
                    Some(h) => !key.headers_current(tenant.id, sealed.id, h),
                    // Written before headers were sealed: in the clear.
                    None => true,
                };
                if !stale(&sealed.current)
                    && !sealed.previous.as_deref().is_some_and(stale)
                    && !headers_stale
                {
                    continue;
                }
                let Ok(current) = key.open(tenant.id, sealed.id, &sealed.current) else {
                    tracing::warn!(tenant = %tenant.id, endpoint = %sealed.id, "a webhook secret opens under none of the configured keys");
                    done.unopenable += 1;
                    continue;
                };
                let headers = match &sealed.headers_sealed {
                    Some(h) => match key.open_headers(tenant.id, sealed.id, h) {
                        Ok(headers) => headers,
                        Err(_) => {
                            tracing::warn!(tenant = %tenant.id, endpoint = %sealed.id, "a webhook endpoint's headers open under none of the configured keys");
                            done.unopenable += 1;
                            continue;
                        }
                    },
                    None => std::mem::take(&mut sealed.headers),
                };
                // A previous secret that no longer opens only loses its
                // overlap signature: dropped rather than kept unopenable.
                let previous = sealed
                    .previous
                    .as_deref()
                    .and_then(|s| key.open(tenant.id, sealed.id, s).ok());
                sealed.current = key.seal(tenant.id, sealed.id, &current);
                sealed.previous = previous.map(|p| key.seal(tenant.id, sealed.id, &p));
                let headers = super::seal_headers(&key, tenant.id, sealed.id, &headers);
                webhooks::reseal(&mut tx, &sealed, &headers).await?;
                done.resealed += 1;
            }
            for (probe, headers) in probes::all_headers(&mut tx).await? {
                done.probes += 1;
                if headers
                    .iter()
                    .all(|(name, value)| key.probe_header_current(tenant.id, name, value))
                {
                    continue;
                }
                let opened: Result<BTreeMap<String, String>, _> = headers
                    .iter()
                    .map(|(name, value)| {
                        key.open_probe_header(tenant.id, name, value)
                            .map(|clear| (name.clone(), clear))
                    })
                    .collect();
                let Ok(opened) = opened else {
                    tracing::warn!(tenant = %tenant.id, %probe, "a probe's headers open under none of the configured keys");
                    done.unopenable_probes += 1;
                    continue;
                };
                let sealed = crate::probes::seal_all(&key, tenant.id, opened);
                probes::reseal_headers(&mut tx, probe, &sealed).await?;
                done.probes_resealed += 1;
            }
            tx.commit().await?;
        }
        Ok(done)
    }
}
