//! The transactional outbox: facts for the outside world, written in the
//! same transaction as the change they describe and relayed at least once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use slaproof_domain::ids::{OutboxMessageId, TenantId};

use crate::{Database, StoreError, TenantTx};

/// A message claimed by a relay.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxMessage {
    pub tenant: TenantId,
    pub id: OutboxMessageId,
    pub seq: i64,
    pub event_type: String,
    pub payload: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

/// Adds a message (e.g. `sla.breached`) to the transaction's tenant outbox.
#[tracing::instrument(skip(tx, payload))]
pub async fn enqueue(
    tx: &mut TenantTx,
    event_type: &str,
    payload: &serde_json::Value,
) -> Result<OutboxMessageId, StoreError> {
    insert(tx, event_type, payload, false).await
}

/// Adds a message already marked dispatched: the relay hands it to no
/// endpoint, so its one delivery is the caller's to write (a webhook
/// test-send).
#[tracing::instrument(skip(tx, payload))]
pub async fn enqueue_dispatched(
    tx: &mut TenantTx,
    event_type: &str,
    payload: &serde_json::Value,
) -> Result<OutboxMessageId, StoreError> {
    insert(tx, event_type, payload, true).await
}

async fn insert(
    tx: &mut TenantTx,
    event_type: &str,
    payload: &serde_json::Value,
    dispatched: bool,
) -> Result<OutboxMessageId, StoreError> {
    let id = OutboxMessageId::new();
    sqlx::query(
        "INSERT INTO outbox (tenant_id, id, event_type, payload, dispatched_at) \
         VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN now() END)",
    )
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(event_type)
    .bind(payload)
    .bind(dispatched)
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

/// Claims pending messages, oldest first, across tenants, under a lease.
#[tracing::instrument(skip(db))]
pub async fn claim(
    db: &Database,
    worker: &str,
    limit: i32,
    lease: Duration,
) -> Result<Vec<OutboxMessage>, StoreError> {
    type Row = (
        uuid::Uuid,
        uuid::Uuid,
        i64,
        String,
        serde_json::Value,
        DateTime<Utc>,
    );
    let mut tx = db.platform_tx().await?;
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT tenant_id, id, seq, event_type, payload, created_at \
         FROM slaproof_claim_outbox($1, $2, make_interval(secs => $3))",
    )
    .bind(worker)
    .bind(limit)
    .bind(lease.as_secs_f64())
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows
        .into_iter()
        .map(
            |(tenant, id, seq, event_type, payload, created_at)| OutboxMessage {
                tenant: TenantId::from_uuid(tenant),
                id: OutboxMessageId::from_uuid(id),
                seq,
                event_type,
                payload,
                created_at,
            },
        )
        .collect())
}

/// Marks messages relayed, in the tenant transaction that handed them on.
pub async fn mark_dispatched(tx: &mut TenantTx, ids: &[OutboxMessageId]) -> Result<(), StoreError> {
    let ids: Vec<uuid::Uuid> = ids.iter().map(|id| id.uuid()).collect();
    sqlx::query(
        "UPDATE outbox SET dispatched_at = now(), locked_by = NULL, locked_until = NULL \
         WHERE tenant_id = $1 AND id = ANY ($2)",
    )
    .bind(tx.tenant().uuid())
    .bind(&ids)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
