//! Embed tokens revoked before they expire (`api_embed_revocations`).

use crate::{StoreError, TenantTx};

/// Seconds a revocation is kept: longer than any embed token lives (an
/// hour at most), so a revoked token is refused until it expires anyway.
pub const KEEP_REVOCATION_SECS: f64 = 2.0 * 3600.0;

/// Revokes the tenant's embed token `token_id`, and forgets revocations
/// no token can need any more (so the table stays about an hour long).
#[tracing::instrument(skip(tx))]
pub async fn revoke(tx: &mut TenantTx, token_id: uuid::Uuid) -> Result<(), StoreError> {
    sqlx::query(
        "DELETE FROM api_embed_revocations \
         WHERE tenant_id = $1 AND revoked_at < now() - make_interval(secs => $2)",
    )
    .bind(tx.tenant().uuid())
    .bind(KEEP_REVOCATION_SECS)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "INSERT INTO api_embed_revocations (tenant_id, token_id) VALUES ($1, $2) \
         ON CONFLICT DO NOTHING",
    )
    .bind(tx.tenant().uuid())
    .bind(token_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Whether the tenant's embed token `token_id` was revoked.
#[tracing::instrument(skip(tx))]
pub async fn is_revoked(tx: &mut TenantTx, token_id: uuid::Uuid) -> Result<bool, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM api_embed_revocations WHERE tenant_id = $1 AND token_id = $2)",
    )
    .bind(tx.tenant().uuid())
    .bind(token_id)
    .fetch_one(&mut **tx)
    .await?)
}
