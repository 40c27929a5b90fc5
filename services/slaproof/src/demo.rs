//! The demo tenant `slaproof up` creates so a newcomer has something to look
//! at: a tenant, a customer, an ingest key and a realistic SLA.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::Context;
use slaproof_domain::ids::TenantId;
use slaproof_domain::sla::SlaDefinition;
use slaproof_store::{Database, StoreError, customers, ingest_keys, slas, tenants};

/// The demo tenant's name.
pub const TENANT: &str = "demo";
/// The demo SLA, shipped with the domain crate's fixtures.
pub const SLA_DOCUMENT: &str = include_str!("../../domain/fixtures/demo-sla.yaml");
/// Where the demo ingest key is kept, inside the data directory, so that it
/// can be shown again on later starts (a real tenant's key is shown once).
const KEY_FILE: &str = "demo-ingest-key";

/// What the demo consists of.
#[derive(Debug, Clone)]
pub struct Demo {
    pub tenant: TenantId,
    pub customer_ref: String,
    pub sla_name: String,
    pub ingest_key: String,
    /// Whether this start created the tenant.
    pub created: bool,
}

/// Makes sure every part of the demo exists; each step is idempotent, so an
/// interrupted first start is completed by the next.
pub async fn ensure(db: &Database, data_dir: &Path) -> anyhow::Result<Demo> {
    let definition =
        SlaDefinition::from_document(SLA_DOCUMENT).context("the shipped demo SLA is invalid")?;
    let customer_ref = definition
        .customer
        .clone()
        .unwrap_or_else(|| "acme-corp".to_owned());

    let (tenant, created) = match tenants::resolve(db, TENANT).await {
        Ok(id) => (id, false),
        Err(StoreError::NotFound { .. }) => (
            tenants::create(db, TENANT, "Demo LLM provider").await?.id,
            true,
        ),
        Err(err) => return Err(err.into()),
    };

    let mut tx = db.tenant_tx(tenant).await?;
    if customers::find_by_ref(&mut tx, &customer_ref)
        .await?
        .is_none()
    {
        customers::create(&mut tx, &customer_ref, "Acme Corp").await?;
    }
    slas::apply(&mut tx, &definition).await?;

    fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    let key_path = data_dir.join(KEY_FILE);
    let saved = fs::read_to_string(&key_path)
        .ok()
        .map(|k| k.trim().to_owned());
    let still_valid = match &saved {
        Some(key) => ingest_keys::authenticate(db, key)
            .await?
            .is_some_and(|a| a.tenant == tenant),
        None => false,
    };
    let ingest_key = match saved {
        Some(key) if still_valid => key,
        _ => {
            let key = ingest_keys::create(&mut tx, "demo").await?;
            let mut file = fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .mode(0o600)
                .open(&key_path)
                .with_context(|| format!("saving the demo key to {}", key_path.display()))?;
            writeln!(file, "{}", key.reveal())?;
            key.reveal().to_owned()
        }
    };
    tx.commit().await?;
    Ok(Demo {
        tenant,
        customer_ref,
        sla_name: definition.name.as_str().to_owned(),
        ingest_key,
        created,
    })
}
