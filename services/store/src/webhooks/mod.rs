//! Webhook endpoints, their deliveries (one per outbox message and
//! endpoint) and every attempt: the rows the webhook worker and the
//! application layer share.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use slaproof_domain::ids::{CustomerId, WebhookEndpointId};

use crate::{StoreError, TenantTx};

/// A tenant's endpoint as stored; the secret stays sealed.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredEndpoint {
    pub id: WebhookEndpointId,
    pub url: String,
    pub description: String,
    pub event_types: Vec<String>,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    /// Nonce, ciphertext and tag (see the migration): not a secret by
    /// itself, but left out of `Debug` all the same.
    pub secret_sealed: Vec<u8>,
    /// Until when deliveries are also signed with the secret before the
    /// last rotation.
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    /// The custom headers' names, each with an empty value (the values
    /// are in the sealed copy the worker opens); an endpoint written before
    /// headers were sealed holds its values here until it is re-sealed.
    /// `Debug` leaves them out.
    pub headers: BTreeMap<String, String>,
    pub flow: Flow,
    /// The external reference of `flow.customer`, read with the row.
    pub customer_ref: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Which facts reach an endpoint beyond their type, and how fast: the
/// claim and the fan-out apply these (see `20261201001200_webhooks_flow.sql`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flow {
    /// Only the facts about this customer.
    pub customer: Option<CustomerId>,
    /// At most this many attempts started per second.
    pub rate_limit_per_sec: Option<i32>,
    /// One message at a time, in the order written.
    pub ordered: bool,
}

impl std::fmt::Debug for StoredEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredEndpoint")
            .field("id", &self.id)
            .field("url", &self.url)
            .field("event_types", &self.event_types)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

type Row = (
    uuid::Uuid,
    String,
    String,
    Vec<String>,
    bool,
    Option<String>,
    Vec<u8>,
    Option<DateTime<Utc>>,
    DateTime<Utc>,
    DateTime<Utc>,
    sqlx::types::Json<BTreeMap<String, String>>,
    Option<uuid::Uuid>,
    Option<i32>,
    bool,
    Option<String>,
);

const COLUMNS: &str = "id, url, description, event_types, enabled, disabled_reason, secret_sealed, \
                       previous_secret_expires_at, created_at, updated_at, headers, customer_id, \
                       rate_limit_per_sec, ordered, \
                       (SELECT c.external_ref FROM customers c \
                        WHERE c.tenant_id = webhook_endpoints.tenant_id \
                          AND c.id = webhook_endpoints.customer_id)";

/// What a write returns: [`COLUMNS`] but the customer's reference, which
/// [`with_customer_ref`] reads after. Citus refuses a subquery in an
/// INSERT's RETURNING.
const WRITTEN: &str = "id, url, description, event_types, enabled, disabled_reason, secret_sealed, \
                       previous_secret_expires_at, created_at, updated_at, headers, customer_id, \
                       rate_limit_per_sec, ordered, CAST(NULL AS text)";

/// `endpoint` with its customer's external reference, when it has a
/// customer.
async fn with_customer_ref(
    tx: &mut TenantTx,
    mut endpoint: StoredEndpoint,
) -> Result<StoredEndpoint, StoreError> {
    if let Some(customer) = endpoint.flow.customer {
        endpoint.customer_ref = sqlx::query_scalar(
            "SELECT external_ref FROM customers WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tx.tenant().uuid())
        .bind(customer.uuid())
        .fetch_optional(&mut **tx)
        .await?;
    }
    Ok(endpoint)
}

/// [`with_customer_ref`] of a written row, if one was.
async fn written(
    tx: &mut TenantTx,
    row: Option<Row>,
) -> Result<Option<StoredEndpoint>, StoreError> {
    match row {
        Some(row) => Ok(Some(with_customer_ref(tx, endpoint(row)).await?)),
        None => Ok(None),
    }
}

fn endpoint(row: Row) -> StoredEndpoint {
    let (
        id,
        url,
        description,
        event_types,
        enabled,
        disabled_reason,
        secret_sealed,
        previous_secret_expires_at,
        created_at,
        updated_at,
        headers,
        customer,
        rate_limit_per_sec,
        ordered,
        customer_ref,
    ) = row;
    StoredEndpoint {
        id: WebhookEndpointId::from_uuid(id),
        url,
        description,
        event_types,
        enabled,
        disabled_reason,
        secret_sealed,
        previous_secret_expires_at,
        headers: headers.0,
        flow: Flow {
            customer: customer.map(CustomerId::from_uuid),
            rate_limit_per_sec,
            ordered,
        },
        customer_ref,
        created_at,
        updated_at,
    }
}

/// An endpoint's custom headers as kept: their names in the clear, for
/// listing, and names and values sealed (see the migration
/// `20261205000800_webhook_sealed_headers.sql`).
/// The default is no custom headers, nothing sealed (stored as NULL).
#[derive(Debug, Clone, Default)]
pub struct SealedHeaders {
    pub names: Vec<String>,
    pub sealed: Option<Vec<u8>>,
}

impl SealedHeaders {
    /// The `headers` column: each name with an empty value.
    fn names_only(&self) -> BTreeMap<&str, &str> {
        self.names.iter().map(|n| (n.as_str(), "")).collect()
    }
}

/// What a new endpoint is made of, its secret and headers already sealed.
#[derive(Clone)]
pub struct NewEndpoint {
    pub id: WebhookEndpointId,
    pub url: String,
    pub description: String,
    pub event_types: Vec<String>,
    pub enabled: bool,
    pub secret_sealed: Vec<u8>,
    pub headers: SealedHeaders,
    pub flow: Flow,
}

impl std::fmt::Debug for NewEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewEndpoint")
            .field("id", &self.id)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// How many endpoints the tenant has, under a per-tenant lock held to the
/// end of the transaction (so a cap checked with it holds).
pub async fn count_locked(tx: &mut TenantTx) -> Result<i64, StoreError> {
    sqlx::query(
        "SELECT pg_advisory_xact_lock(hashtextextended('slaproof.webhook_endpoints:' || $1::text, 0))",
    )
    .bind(tx.tenant().uuid())
    .execute(&mut **tx)
    .await?;
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM webhook_endpoints WHERE tenant_id = $1")
            .bind(tx.tenant().uuid())
            .fetch_one(&mut **tx)
            .await?,
    )
}

#[tracing::instrument(skip(tx, new), fields(id = %new.id))]
pub async fn create(tx: &mut TenantTx, new: &NewEndpoint) -> Result<StoredEndpoint, StoreError> {
    let row: Row = sqlx::query_as(&format!(
        "INSERT INTO webhook_endpoints (tenant_id, id, url, description, event_types, enabled, secret_sealed, \
                                        headers, customer_id, rate_limit_per_sec, ordered, headers_sealed) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING {WRITTEN}"
    ))
    .bind(tx.tenant().uuid())
    .bind(new.id.uuid())
    .bind(&new.url)
    .bind(&new.description)
    .bind(&new.event_types)
    .bind(new.enabled)
    .bind(&new.secret_sealed)
    .bind(sqlx::types::Json(new.headers.names_only()))
    .bind(new.flow.customer.map(|c| c.uuid()))
    .bind(new.flow.rate_limit_per_sec)
    .bind(new.flow.ordered)
    .bind(new.headers.sealed.as_deref())
    .fetch_one(&mut **tx)
    .await?;
    with_customer_ref(tx, endpoint(row)).await
}

/// Every endpoint of the tenant, oldest first.
pub async fn list(tx: &mut TenantTx) -> Result<Vec<StoredEndpoint>, StoreError> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM webhook_endpoints WHERE tenant_id = $1 ORDER BY id"
    ))
    .bind(tx.tenant().uuid())
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(endpoint).collect())
}

pub async fn find(tx: &mut TenantTx, id: WebhookEndpointId) -> Result<StoredEndpoint, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .fetch_optional(&mut **tx)
    .await?;
    row.map(endpoint)
        .ok_or_else(|| StoreError::not_found("webhook endpoint", id))
}

/// Enables or disables an endpoint; `reason` says why the platform did.
#[tracing::instrument(skip(tx))]
pub async fn set_enabled(
    tx: &mut TenantTx,
    id: WebhookEndpointId,
    enabled: bool,
    reason: Option<&str>,
) -> Result<StoredEndpoint, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "UPDATE webhook_endpoints SET enabled = $3, disabled_reason = $4, updated_at = now() \
         WHERE tenant_id = $1 AND id = $2 RETURNING {WRITTEN}"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(enabled)
    .bind(if enabled { None } else { reason })
    .fetch_optional(&mut **tx)
    .await?;
    written(tx, row)
        .await?
        .ok_or_else(|| StoreError::not_found("webhook endpoint", id))
}

/// Disables an endpoint the platform gave up on, unless it is disabled
/// already (answers `None` then: whoever disabled it told of it).
#[tracing::instrument(skip(tx))]
pub async fn disable_if_enabled(
    tx: &mut TenantTx,
    id: WebhookEndpointId,
    reason: &str,
) -> Result<Option<StoredEndpoint>, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "UPDATE webhook_endpoints SET enabled = false, disabled_reason = $3, updated_at = now() \
         WHERE tenant_id = $1 AND id = $2 AND enabled RETURNING {WRITTEN}"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(reason)
    .fetch_optional(&mut **tx)
    .await?;
    written(tx, row).await
}

/// When the endpoint's run of failed attempts began, if every attempt to
/// it since then failed and that is at least `longer_than` ago. The run
/// counts from the last 2xx answer, and from the endpoint's last change
/// (an endpoint enabled again starts afresh).
pub async fn failing_since(
    tx: &mut TenantTx,
    id: WebhookEndpointId,
    longer_than: Duration,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    let since: Option<DateTime<Utc>> = sqlx::query_scalar(
        "WITH attempts AS ( \
             SELECT a.started_at, coalesce(a.status BETWEEN 200 AND 299, false) AS ok \
             FROM webhook_attempts a \
             JOIN webhook_deliveries d ON d.tenant_id = a.tenant_id AND d.id = a.delivery_id \
             WHERE a.tenant_id = $1 AND d.endpoint_id = $2 \
               AND a.started_at >= (SELECT updated_at FROM webhook_endpoints \
                                    WHERE tenant_id = $1 AND id = $2) \
         ), run AS ( \
             SELECT min(started_at) AS began FROM attempts \
             WHERE NOT ok AND started_at > coalesce((SELECT max(started_at) FROM attempts WHERE ok), \
                                                    '-infinity') \
         ) \
         SELECT began FROM run WHERE began <= now() - make_interval(secs => $3)",
    )
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(longer_than.as_secs_f64())
    .fetch_optional(&mut **tx)
    .await?
    .flatten();
    Ok(since)
}

/// Replaces an endpoint's sealed secret; the one it replaces still signs
/// deliveries, beside the new one, until `overlap_until`.
#[tracing::instrument(skip(tx, sealed))]
pub async fn set_secret(
    tx: &mut TenantTx,
    id: WebhookEndpointId,
    sealed: &[u8],
    overlap_until: DateTime<Utc>,
) -> Result<StoredEndpoint, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "UPDATE webhook_endpoints SET previous_secret_sealed = secret_sealed, \
             previous_secret_expires_at = $4, secret_sealed = $3, updated_at = now() \
         WHERE tenant_id = $1 AND id = $2 RETURNING {WRITTEN}"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(sealed)
    .bind(overlap_until)
    .fetch_optional(&mut **tx)
    .await?;
    written(tx, row)
        .await?
        .ok_or_else(|| StoreError::not_found("webhook endpoint", id))
}

/// What an update changes; `None` leaves a field as it is (for the
/// nullable ones, `Some(None)` clears it).
#[derive(Clone, Default)]
pub struct EndpointChange {
    pub url: Option<String>,
    pub description: Option<String>,
    pub event_types: Option<Vec<String>>,
    pub headers: Option<SealedHeaders>,
    pub customer: Option<Option<CustomerId>>,
    pub rate_limit_per_sec: Option<Option<i32>>,
    pub ordered: Option<bool>,
}

impl std::fmt::Debug for EndpointChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointChange")
            .field("url", &self.url)
            .field("event_types", &self.event_types)
            .field("customer", &self.customer)
            .field("rate_limit_per_sec", &self.rate_limit_per_sec)
            .field("ordered", &self.ordered)
            .finish_non_exhaustive()
    }
}

/// Changes an endpoint's settings (not its secret, nor whether it is
/// enabled: those have operations of their own).
#[tracing::instrument(skip(tx))]
pub async fn update(
    tx: &mut TenantTx,
    id: WebhookEndpointId,
    change: &EndpointChange,
) -> Result<StoredEndpoint, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "UPDATE webhook_endpoints SET url = coalesce($3, url), description = coalesce($4, description), \
             event_types = coalesce($5, event_types), headers = coalesce($6, headers), \
             customer_id = CASE WHEN $7 THEN $8 ELSE customer_id END, \
             rate_limit_per_sec = CASE WHEN $9 THEN $10 ELSE rate_limit_per_sec END, \
             ordered = coalesce($11, ordered), \
             headers_sealed = CASE WHEN $6 IS NULL THEN headers_sealed ELSE $12 END, updated_at = now() \
         WHERE tenant_id = $1 AND id = $2 RETURNING {WRITTEN}"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(&change.url)
    .bind(&change.description)
    .bind(&change.event_types)
    .bind(
        change
            .headers
            .as_ref()
            .map(|h| sqlx::types::Json(h.names_only())),
    )
    .bind(change.customer.is_some())
    .bind(change.customer.flatten().map(|c| c.uuid()))
    .bind(change.rate_limit_per_sec.is_some())
    .bind(change.rate_limit_per_sec.flatten())
    .bind(change.ordered)
    .bind(change.headers.as_ref().and_then(|h| h.sealed.as_deref()))
    .fetch_optional(&mut **tx)
    .await?;
    written(tx, row)
        .await?
        .ok_or_else(|| StoreError::not_found("webhook endpoint", id))
}

/// One endpoint's sealed secrets and headers, for a re-seal under a new key.
pub struct SealedSecrets {
    pub id: WebhookEndpointId,
    pub current: Vec<u8>,
    pub previous: Option<Vec<u8>>,
    /// The `headers` column: names only once sealed, names and values in
    /// the clear on a row written before headers were sealed.
    pub headers: BTreeMap<String, String>,
    /// `None` on a row written before headers were sealed.
    pub headers_sealed: Option<Vec<u8>>,
}

impl std::fmt::Debug for SealedSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedSecrets")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Every endpoint's sealed secrets, locked to the end of the transaction
/// (a rotation meanwhile waits rather than being overwritten).
pub async fn sealed_secrets(tx: &mut TenantTx) -> Result<Vec<SealedSecrets>, StoreError> {
    type Sealed = (
        uuid::Uuid,
        Vec<u8>,
        Option<Vec<u8>>,
        sqlx::types::Json<BTreeMap<String, String>>,
        Option<Vec<u8>>,
    );
    let rows: Vec<Sealed> = sqlx::query_as(
        "SELECT id, secret_sealed, previous_secret_sealed, headers, headers_sealed FROM webhook_endpoints \
         WHERE tenant_id = $1 ORDER BY id FOR UPDATE",
    )
    .bind(tx.tenant().uuid())
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(id, current, previous, headers, headers_sealed)| SealedSecrets {
                id: WebhookEndpointId::from_uuid(id),
                current,
                previous,
                headers: headers.0,
                headers_sealed,
            },
        )
        .collect())
}

/// Replaces an endpoint's sealed secrets with the same secrets sealed
/// under another key, and its headers with `headers` (sealed; the names
/// left in the clear). `updated_at` stays: nothing the provider set
/// changed (and the five-day failing rule counts from it).
pub async fn reseal(
    tx: &mut TenantTx,
    sealed: &SealedSecrets,
    headers: &SealedHeaders,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE webhook_endpoints SET secret_sealed = $3, previous_secret_sealed = $4, \
             headers = $5, headers_sealed = $6 \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tx.tenant().uuid())
    .bind(sealed.id.uuid())
    .bind(&sealed.current)
    .bind(&sealed.previous)
    .bind(sqlx::types::Json(headers.names_only()))
    .bind(headers.sealed.as_deref())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Deletes an endpoint with its deliveries and their attempts.
#[tracing::instrument(skip(tx))]
pub async fn delete(tx: &mut TenantTx, id: WebhookEndpointId) -> Result<(), StoreError> {
    let done = sqlx::query("DELETE FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2")
        .bind(tx.tenant().uuid())
        .bind(id.uuid())
        .execute(&mut **tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::not_found("webhook endpoint", id));
    }
    Ok(())
}

mod deliveries;

pub use deliveries::*;
