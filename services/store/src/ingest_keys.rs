//! Ingest keys: what providers authenticate their telemetry with.
//!
//! A key looks like `spk_<12 characters>_<64 hex digits>`. The first part is
//! the prefix, stored in clear so people can tell keys apart and the store can
//! find the row; the whole key is stored only as its SHA-256. A key carries
//! 256 random bits, so a slow password hash would add latency to every ingest
//! request and no security.

use std::fmt;

use chrono::{DateTime, Utc};
use rand::Rng;
use sha2::{Digest, Sha256};
use slaproof_domain::ids::{IngestKeyId, TenantId};

use crate::{Database, Keyset, StoreError, TenantTx};

const SCHEME: &str = "spk_";
const PREFIX_CHARS: usize = 12;
const SECRET_BYTES: usize = 32;
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// An ingest key as stored: never the key itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IngestKey {
    pub id: IngestKeyId,
    pub prefix: String,
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A key just created: the only moment its secret is known. `Debug` hides
/// it; [`NewIngestKey::reveal`] hands it over once.
pub struct NewIngestKey {
    pub key: IngestKey,
    secret: String,
}

impl NewIngestKey {
    /// The full key, to show the user once.
    pub fn reveal(&self) -> &str {
        &self.secret
    }
}

impl fmt::Debug for NewIngestKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewIngestKey")
            .field("key", &self.key)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// Who an accepted key speaks for, and how its tenant names customers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub tenant: TenantId,
    pub key: IngestKeyId,
    /// The OTLP attribute naming a span's customer (the tenant's setting).
    pub otlp_customer_attribute: std::sync::Arc<str>,
}

#[derive(sqlx::FromRow)]
struct KeyRow {
    id: uuid::Uuid,
    prefix: String,
    name: String,
    created_at: DateTime<Utc>,
    revoked_at: Option<DateTime<Utc>>,
}

impl From<KeyRow> for IngestKey {
    fn from(r: KeyRow) -> Self {
        IngestKey {
            id: IngestKeyId::from_uuid(r.id),
            prefix: r.prefix,
            name: r.name,
            created_at: r.created_at,
            revoked_at: r.revoked_at,
        }
    }
}

fn digest(key: &str) -> Vec<u8> {
    Sha256::digest(key.as_bytes()).to_vec()
}

/// The prefix of a well-formed key, or `None` when it cannot be one of ours.
fn split(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(SCHEME)?;
    let (prefix, secret) = rest.split_once('_')?;
    let well_formed = prefix.len() == PREFIX_CHARS
        && prefix.bytes().all(|b| ALPHABET.contains(&b))
        && secret.len() == SECRET_BYTES * 2
        && secret.bytes().all(|b| b.is_ascii_hexdigit());
    well_formed.then(|| &key[..SCHEME.len() + PREFIX_CHARS])
}

/// Creates a key for the transaction's tenant. The secret is returned once.
#[tracing::instrument(skip(tx))]
pub async fn create(tx: &mut TenantTx, name: &str) -> Result<NewIngestKey, StoreError> {
    let (prefix, secret) = {
        let mut rng = rand::rng();
        let prefix: String = (0..PREFIX_CHARS)
            .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
            .collect();
        let bytes: [u8; SECRET_BYTES] = rng.random();
        let prefix = format!("{SCHEME}{prefix}");
        let secret = format!("{prefix}_{}", hex::encode(bytes));
        (prefix, secret)
    };
    let row: KeyRow = sqlx::query_as(
        "INSERT INTO ingest_keys (tenant_id, id, prefix, secret_sha256, name) VALUES ($1, $2, $3, $4, $5) \
         RETURNING id, prefix, name, created_at, revoked_at",
    )
    .bind(tx.tenant().uuid())
    .bind(IngestKeyId::new().uuid())
    .bind(&prefix)
    .bind(digest(&secret))
    .bind(name)
    .fetch_one(&mut **tx)
    .await?;
    Ok(NewIngestKey {
        key: row.into(),
        secret,
    })
}

/// The tenant a key speaks for, or `None` for a malformed, unknown or
/// revoked key (callers answer 401 alike, so nothing leaks which it was).
#[tracing::instrument(skip_all)]
pub async fn authenticate(db: &Database, key: &str) -> Result<Option<Authenticated>, StoreError> {
    let Some(prefix) = split(key) else {
        return Ok(None);
    };
    let mut tx = db.platform_tx().await?;
    let row: Option<(uuid::Uuid, uuid::Uuid)> =
        sqlx::query_as("SELECT tenant_id, key_id FROM slaproof_authenticate_ingest_key($1, $2)")
            .bind(prefix)
            .bind(digest(key))
            .fetch_optional(&mut *tx)
            .await?;
    tx.commit().await?;
    let Some((tenant, key)) = row else {
        return Ok(None);
    };
    let tenant = TenantId::from_uuid(tenant);
    let mut tx = db.tenant_tx(tenant).await?;
    let attribute = crate::tenants::otlp_customer_attribute(&mut tx).await?;
    tx.commit().await?;
    Ok(Some(Authenticated {
        tenant,
        key: IngestKeyId::from_uuid(key),
        otlp_customer_attribute: attribute.into(),
    }))
}

/// Revokes a key by id or prefix. Revoking twice keeps the first time.
#[tracing::instrument(skip(tx))]
pub async fn revoke(tx: &mut TenantTx, id_or_prefix: &str) -> Result<IngestKey, StoreError> {
    let id = id_or_prefix.parse::<IngestKeyId>().ok().map(|id| id.uuid());
    let row: Option<KeyRow> = sqlx::query_as(
        "UPDATE ingest_keys SET revoked_at = coalesce(revoked_at, $4) \
         WHERE tenant_id = $1 AND (id = $2 OR prefix = $3) \
         RETURNING id, prefix, name, created_at, revoked_at",
    )
    .bind(tx.tenant().uuid())
    .bind(id)
    .bind(id_or_prefix)
    // Bound, not now(): Citus refuses now() inside COALESCE in an UPDATE.
    .bind(Utc::now())
    .fetch_optional(&mut **tx)
    .await?;
    row.map(IngestKey::from)
        .ok_or_else(|| StoreError::not_found("ingest key", id_or_prefix))
}

/// The tenant's keys, newest first, revoked ones included.
pub async fn list(tx: &mut TenantTx, page: &Keyset) -> Result<Vec<IngestKey>, StoreError> {
    let rows: Vec<KeyRow> = sqlx::query_as(
        "SELECT id, prefix, name, created_at, revoked_at FROM ingest_keys \
         WHERE tenant_id = $1 AND ($2::text IS NULL OR prefix > $2) \
         ORDER BY prefix LIMIT $3",
    )
    .bind(tx.tenant().uuid())
    .bind(&page.after)
    .bind(page.fetch())
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(IngestKey::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_accepts_only_well_formed_keys() {
        let key = format!("spk_abcdefghij01_{}", "0f".repeat(32));
        assert_eq!(split(&key), Some("spk_abcdefghij01"));
        for bad in [
            "",
            "spk_",
            "spk_abcdefghij01",
            "spk_abcdefghij01_00",
            "sk_abcdefghij01_0000000000000000000000000000000000000000000000000000000000000000",
            "spk_ABCDEFGHIJ01_0000000000000000000000000000000000000000000000000000000000000000",
        ] {
            assert_eq!(split(bad), None, "{bad}");
        }
    }
}
