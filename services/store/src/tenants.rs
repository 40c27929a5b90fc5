//! Tenants: the providers using slaproof.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::TenantId;

use crate::{Database, Keyset, StoreError, TenantTx};

/// A tenant as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Tenant {
    pub id: TenantId,
    pub name: String,
    pub display_name: String,
    pub created_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct TenantRow {
    id: uuid::Uuid,
    name: String,
    display_name: String,
    created_at: DateTime<Utc>,
}

impl From<TenantRow> for Tenant {
    fn from(r: TenantRow) -> Self {
        Tenant {
            id: TenantId::from_uuid(r.id),
            name: r.name,
            display_name: r.display_name,
            created_at: r.created_at,
        }
    }
}

/// Creates a tenant. The insert runs in the new tenant's own transaction, so
/// it passes the same row-level security as every other write.
#[tracing::instrument(skip(db))]
pub async fn create(db: &Database, name: &str, display_name: &str) -> Result<Tenant, StoreError> {
    let id = TenantId::new();
    let mut tx = db.tenant_tx(id).await?;
    let row: TenantRow = sqlx::query_as(
        "INSERT INTO tenants (id, name, display_name) VALUES ($1, $2, $3) \
         RETURNING id, name, display_name, created_at",
    )
    .bind(id.uuid())
    .bind(name)
    .bind(display_name)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row.into())
}

/// The tenant this transaction acts for.
pub async fn current(tx: &mut TenantTx) -> Result<Tenant, StoreError> {
    let tenant = tx.tenant();
    sqlx::query_as::<_, TenantRow>(
        "SELECT id, name, display_name, created_at FROM tenants WHERE id = $1",
    )
    .bind(tenant.uuid())
    .fetch_optional(&mut **tx)
    .await?
    .map(Tenant::from)
    .ok_or_else(|| StoreError::not_found("tenant", tenant))
}

/// The OTLP attribute that names a span's customer for this tenant.
pub async fn otlp_customer_attribute(tx: &mut TenantTx) -> Result<String, StoreError> {
    let tenant = tx.tenant();
    sqlx::query_scalar("SELECT otlp_customer_attribute FROM tenants WHERE id = $1")
        .bind(tenant.uuid())
        .fetch_optional(&mut **tx)
        .await?
        .ok_or_else(|| StoreError::not_found("tenant", tenant))
}

/// Sets the OTLP attribute that names a span's customer for this tenant
/// (checked by the caller; the table's rule refuses a malformed one).
pub async fn set_otlp_customer_attribute(
    tx: &mut TenantTx,
    attribute: &str,
) -> Result<(), StoreError> {
    sqlx::query("UPDATE tenants SET otlp_customer_attribute = $2 WHERE id = $1")
        .bind(tx.tenant().uuid())
        .bind(attribute)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Finds a tenant by its id (`ten_…`) or its name. Operators type either.
#[tracing::instrument(skip(db))]
pub async fn resolve(db: &Database, id_or_name: &str) -> Result<TenantId, StoreError> {
    if let Ok(id) = id_or_name.parse::<TenantId>() {
        let mut tx = db.tenant_tx(id).await?;
        let found = current(&mut tx).await?;
        tx.commit().await?;
        return Ok(found.id);
    }
    let mut tx = db.platform_tx().await?;
    let id: Option<uuid::Uuid> = sqlx::query_scalar("SELECT slaproof_tenant_id_by_name($1)")
        .bind(id_or_name)
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    id.map(TenantId::from_uuid)
        .ok_or_else(|| StoreError::not_found("tenant", id_or_name))
}

/// Every tenant, for operators.
pub async fn list(db: &Database) -> Result<Vec<Tenant>, StoreError> {
    tenants(db, None, None).await
}

/// A page of the tenants by name, for operators.
pub async fn page(db: &Database, page: &Keyset) -> Result<Vec<Tenant>, StoreError> {
    tenants(db, page.after.as_deref(), Some(page.fetch())).await
}

async fn tenants(
    db: &Database,
    after: Option<&str>,
    fetch: Option<i64>,
) -> Result<Vec<Tenant>, StoreError> {
    // The function answers every tenant (operators' lists are short); the
    // page is cut from its answer.
    let mut tx = db.platform_tx().await?;
    let rows: Vec<TenantRow> = sqlx::query_as(
        "SELECT id, name, display_name, created_at FROM slaproof_list_tenants() \
         WHERE ($1::text IS NULL OR name > $1) ORDER BY name LIMIT $2",
    )
    .bind(after)
    .bind(fetch)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows.into_iter().map(Tenant::from).collect())
}
