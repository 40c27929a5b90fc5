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

/// One customer reference as a round of events named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceSeen {
    pub external_ref: String,
    pub events: i64,
    pub first_seen_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
}

/// Adds what a round of events named to the tenant's tally of customer
/// references.
#[tracing::instrument(skip(tx, seen), fields(references = seen.len()))]
pub async fn note_references(tx: &mut TenantTx, seen: &[ReferenceSeen]) -> Result<(), StoreError> {
    let refs: Vec<&str> = seen.iter().map(|s| s.external_ref.as_str()).collect();
    let events: Vec<i64> = seen.iter().map(|s| s.events).collect();
    let first: Vec<DateTime<Utc>> = seen.iter().map(|s| s.first_seen_at).collect();
    let last: Vec<DateTime<Utc>> = seen.iter().map(|s| s.last_seen_at).collect();
    sqlx::query(
        "INSERT INTO customer_references (tenant_id, external_ref, events, first_seen_at, last_seen_at) \
         SELECT $1, * FROM UNNEST($2::text[], $3::bigint[], $4::timestamptz[], $5::timestamptz[]) \
         ON CONFLICT (tenant_id, external_ref) DO UPDATE SET \
             events = customer_references.events + EXCLUDED.events, \
             first_seen_at = least(customer_references.first_seen_at, EXCLUDED.first_seen_at), \
             last_seen_at = greatest(customer_references.last_seen_at, EXCLUDED.last_seen_at)",
    )
    .bind(tx.tenant().uuid())
    .bind(&refs)
    .bind(&events)
    .bind(&first)
    .bind(&last)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A customer reference the tenant's events named that no customer of the
/// tenant has: traffic kept for a customer not registered yet.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnknownReference {
    pub external_ref: String,
    pub events: i64,
    pub first_seen_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
}

/// The references events named that no customer has, most events first,
/// at most `limit`; and how many there are in all.
pub async fn unknown_references(
    tx: &mut TenantTx,
    limit: i64,
) -> Result<(Vec<UnknownReference>, i64), StoreError> {
    #[derive(sqlx::FromRow)]
    struct Row {
        external_ref: String,
        events: i64,
        first_seen_at: DateTime<Utc>,
        last_seen_at: DateTime<Utc>,
        total: i64,
    }
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT r.external_ref, r.events, r.first_seen_at, r.last_seen_at, count(*) OVER () AS total \
         FROM customer_references r \
         WHERE r.tenant_id = $1 AND NOT EXISTS ( \
             SELECT 1 FROM customers c WHERE c.tenant_id = r.tenant_id AND c.external_ref = r.external_ref) \
         ORDER BY r.events DESC, r.external_ref LIMIT $2",
    )
    .bind(tx.tenant().uuid())
    .bind(limit)
    .fetch_all(&mut **tx)
    .await?;
    let total = rows.first().map_or(0, |r| r.total);
    let unknown = rows
        .into_iter()
        .map(|r| UnknownReference {
            external_ref: r.external_ref,
            events: r.events,
            first_seen_at: r.first_seen_at,
            last_seen_at: r.last_seen_at,
        })
        .collect();
    Ok((unknown, total))
}
