//! Customers of a tenant: the other party of each SLA.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::CustomerId;

use crate::{Keyset, StoreError, TenantTx};

/// A customer as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Customer {
    pub id: CustomerId,
    pub external_ref: String,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct CustomerRow {
    id: uuid::Uuid,
    external_ref: String,
    name: String,
    created_at: DateTime<Utc>,
}

impl From<CustomerRow> for Customer {
    fn from(r: CustomerRow) -> Self {
        Customer {
            id: CustomerId::from_uuid(r.id),
            external_ref: r.external_ref,
            name: r.name,
            created_at: r.created_at,
        }
    }
}

/// Adds a customer to the transaction's tenant.
#[tracing::instrument(skip(tx))]
pub async fn create(
    tx: &mut TenantTx,
    external_ref: &str,
    name: &str,
) -> Result<Customer, StoreError> {
    let row: CustomerRow = sqlx::query_as(
        "INSERT INTO customers (tenant_id, id, external_ref, name) VALUES ($1, $2, $3, $4) \
         RETURNING id, external_ref, name, created_at",
    )
    .bind(tx.tenant().uuid())
    .bind(CustomerId::new().uuid())
    .bind(external_ref)
    .bind(name)
    .fetch_one(&mut **tx)
    .await?;
    Ok(row.into())
}

/// The customer with this external reference, if the tenant has one.
pub async fn find_by_ref(
    tx: &mut TenantTx,
    external_ref: &str,
) -> Result<Option<Customer>, StoreError> {
    let row: Option<CustomerRow> = sqlx::query_as(
        "SELECT id, external_ref, name, created_at FROM customers WHERE tenant_id = $1 AND external_ref = $2",
    )
    .bind(tx.tenant().uuid())
    .bind(external_ref)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(Customer::from))
}

/// The customer with this id.
pub async fn find(tx: &mut TenantTx, id: CustomerId) -> Result<Customer, StoreError> {
    let row: Option<CustomerRow> = sqlx::query_as(
        "SELECT id, external_ref, name, created_at FROM customers WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .fetch_optional(&mut **tx)
    .await?;
    row.map(Customer::from)
        .ok_or_else(|| StoreError::not_found("customer", id))
}

/// Every customer of the tenant, by external reference.
pub async fn list(tx: &mut TenantTx, page: &Keyset) -> Result<Vec<Customer>, StoreError> {
    let rows: Vec<CustomerRow> = sqlx::query_as(
        "SELECT id, external_ref, name, created_at FROM customers \
         WHERE tenant_id = $1 AND ($2::text IS NULL OR external_ref > $2) \
         ORDER BY external_ref LIMIT $3",
    )
    .bind(tx.tenant().uuid())
    .bind(&page.after)
    .bind(page.fetch())
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(Customer::from).collect())
}
