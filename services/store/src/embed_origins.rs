//! The origins allowed to frame a tenant's embedded dashboards (`api_embed_origins`).

use crate::{StoreError, TenantTx};

/// Replaces the tenant's origins with `origins`.
#[tracing::instrument(skip(tx))]
pub async fn replace(tx: &mut TenantTx, origins: &[String]) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM api_embed_origins WHERE tenant_id = $1")
        .bind(tx.tenant().uuid())
        .execute(&mut **tx)
        .await?;
    sqlx::query(
        "INSERT INTO api_embed_origins (tenant_id, origin) \
         SELECT $1::uuid, o FROM unnest($2::text[]) AS o ON CONFLICT DO NOTHING",
    )
    .bind(tx.tenant().uuid())
    .bind(origins)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The tenant's origins, sorted.
#[tracing::instrument(skip(tx))]
pub async fn list(tx: &mut TenantTx) -> Result<Vec<String>, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT origin FROM api_embed_origins WHERE tenant_id = $1 ORDER BY origin",
    )
    .bind(tx.tenant().uuid())
    .fetch_all(&mut **tx)
    .await?)
}
