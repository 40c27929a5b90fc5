//! Ingest keys: the credentials providers send telemetry with.

use slaproof_domain::label::Label;
pub use slaproof_store::ingest_keys::IngestKey;
use slaproof_store::{TenantTx, ingest_keys};

use crate::authz::Scope;
use crate::idempotency::Creating;
use crate::{App, AppError, Caller, Page, PageRequest};

/// A key just created, with its secret: shown this once, never stored
/// (`Debug` leaves it out).
#[derive(Clone)]
pub struct CreatedKey {
    pub key: IngestKey,
    pub secret: String,
}

impl std::fmt::Debug for CreatedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedKey")
            .field("key", &self.key)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// How the tenant's telemetry is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestSettings {
    /// The OTLP attribute (on a span, else on its resource) that names the
    /// customer the request served, by the provider's reference.
    pub otlp_customer_attribute: String,
}

impl App {
    /// The tenant's ingest settings (`ingest_key:manage`).
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn ingest_settings(&self, caller: &Caller) -> Result<IngestSettings, AppError> {
        caller.require_provider(Scope::IngestKeyManage)?;
        self.in_tx(caller, async |tx| {
            Ok(IngestSettings {
                otlp_customer_attribute: slaproof_store::tenants::otlp_customer_attribute(tx)
                    .await?,
            })
        })
        .await
    }

    /// Sets the tenant's ingest settings (`ingest_key:manage`): ingest reads
    /// them with each key it authenticates, so a change reaches every
    /// replica within `ingest.key_cache_secs`.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn set_ingest_settings(
        &self,
        caller: &Caller,
        settings: IngestSettings,
    ) -> Result<IngestSettings, AppError> {
        caller.require_provider(Scope::IngestKeyManage)?;
        let attribute = settings.otlp_customer_attribute.trim().to_owned();
        slaproof_domain::event::check_otlp_attribute_name(&attribute)
            .map_err(|rule| AppError::invalid("otlp_customer_attribute", rule))?;
        self.in_tx(caller, async |tx| {
            slaproof_store::tenants::set_otlp_customer_attribute(tx, &attribute).await?;
            Ok(IngestSettings {
                otlp_customer_attribute: attribute.clone(),
            })
        })
        .await
    }

    pub async fn create_ingest_key(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<CreatedKey, AppError> {
        self.in_tx(caller, async |tx| {
            self.create_ingest_key_in(tx, caller, name).await
        })
        .await
    }

    /// [`App::create_ingest_key`] inside a transaction of the caller's
    /// tenant (see [`App::once`]).
    #[tracing::instrument(skip(self, tx, caller), fields(tenant = %caller.tenant()))]
    pub async fn create_ingest_key_in(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        name: &str,
    ) -> Result<CreatedKey, AppError> {
        Creating::INGEST_KEY.require(caller)?;
        let name = Label::parse(name).map_err(|e| AppError::invalid("name", e.to_string()))?;
        let created = ingest_keys::create(tx, name.as_str()).await?;
        Ok(CreatedKey {
            secret: created.reveal().to_owned(),
            key: created.key,
        })
    }

    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn list_ingest_keys(
        &self,
        caller: &Caller,
        page: &PageRequest,
    ) -> Result<Page<IngestKey>, AppError> {
        caller.require_provider(Scope::IngestKeyManage)?;
        let mut tx = self.tx(caller).await?;
        let keyset = page.keyset()?;
        let keys = ingest_keys::list(&mut tx, &keyset).await?;
        tx.commit().await?;
        Ok(Page::of(keys, &keyset, |k| k.prefix.as_str()))
    }

    /// Revokes a key by id or prefix; revoking twice keeps the first time.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn revoke_ingest_key(
        &self,
        caller: &Caller,
        id_or_prefix: &str,
    ) -> Result<IngestKey, AppError> {
        caller.require_provider(Scope::IngestKeyManage)?;
        let mut tx = self.tx(caller).await?;
        let key = ingest_keys::revoke(&mut tx, id_or_prefix).await?;
        tx.commit().await?;
        Ok(key)
    }
}
