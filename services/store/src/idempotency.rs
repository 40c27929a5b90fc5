//! `Idempotency-Key` claims and the answers kept for retries (`api_idempotency_keys`).

use serde_json::Value;

use crate::{Database, StoreError, TenantTx, tenants};

/// A key as stored: the request's fingerprint and, once answered, the answer.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredKey {
    pub fingerprint: Vec<u8>,
    pub status: Option<i16>,
    pub response: Option<Value>,
}

/// Claims `key` for `subject` with the request's fingerprint: true when the
/// key was new, or when an earlier claim never finished (its process died)
/// and is older than `abandoned_after_secs`, so it does not block forever.
#[tracing::instrument(skip(tx, fingerprint))]
pub async fn claim(
    tx: &mut TenantTx,
    subject: &str,
    key: &str,
    fingerprint: &[u8],
    abandoned_after_secs: f64,
) -> Result<bool, StoreError> {
    let now = chrono::Utc::now();
    let abandoned_before = chrono::Duration::from_std(std::time::Duration::from_secs_f64(
        abandoned_after_secs.max(0.0),
    ))
    .ok()
    .and_then(|after| now.checked_sub_signed(after))
    .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC);
    let inserted = sqlx::query(
        "INSERT INTO api_idempotency_keys (tenant_id, subject, key, fingerprint, created_at) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (tenant_id, subject, key) DO UPDATE \
           SET fingerprint = EXCLUDED.fingerprint, created_at = EXCLUDED.created_at \
           WHERE api_idempotency_keys.status IS NULL \
             AND api_idempotency_keys.created_at < $6",
    )
    .bind(tx.tenant().uuid())
    .bind(subject)
    .bind(key)
    .bind(fingerprint)
    // The time and the cut-off are bound: Citus wants what the WHERE of an
    // upsert on a distributed table computes to be immutable, and
    // timestamptz arithmetic is not.
    .bind(now)
    .bind(abandoned_before)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}

/// The key as stored.
#[tracing::instrument(skip(tx))]
pub async fn find(tx: &mut TenantTx, subject: &str, key: &str) -> Result<StoredKey, StoreError> {
    Ok(sqlx::query_as(
        "SELECT fingerprint, status, response FROM api_idempotency_keys \
         WHERE tenant_id = $1 AND subject = $2 AND key = $3",
    )
    .bind(tx.tenant().uuid())
    .bind(subject)
    .bind(key)
    .fetch_one(&mut **tx)
    .await?)
}

/// Keeps the answer of a claimed key.
#[tracing::instrument(skip(tx, response))]
pub async fn answer(
    tx: &mut TenantTx,
    subject: &str,
    key: &str,
    status: i16,
    response: &Value,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE api_idempotency_keys SET status = $4, response = $5 \
         WHERE tenant_id = $1 AND subject = $2 AND key = $3",
    )
    .bind(tx.tenant().uuid())
    .bind(subject)
    .bind(key)
    .bind(status)
    .bind(response)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Deletes every tenant's keys older than `keep_secs`; answers how many
/// went. Each tenant in its own transaction: row-level security holds for
/// this too.
pub async fn expire(db: &Database, keep_secs: f64) -> Result<u64, StoreError> {
    let mut deleted = 0;
    for tenant in tenants::list(db).await? {
        let mut tx = db.tenant_tx(tenant.id).await?;
        deleted += sqlx::query(
            "DELETE FROM api_idempotency_keys \
             WHERE tenant_id = $1 AND created_at < now() - make_interval(secs => $2)",
        )
        .bind(tenant.id.uuid())
        .bind(keep_secs)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
    }
    Ok(deleted)
}
