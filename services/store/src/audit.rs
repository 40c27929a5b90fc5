//! The verdict audit trail: every action that can change an SLA's verdict (a maintenance window announced, cancelled or accepted, a version applied), who did it and when.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::{AuditRecordId, CustomerId, SlaId};

use crate::{Keyset, StoreError, TenantTx};

/// Who acted: the caller's subject, and the customer when a customer's
/// user acted for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor<'a> {
    pub subject: &'a str,
    pub customer: Option<CustomerId>,
}

/// One record as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    pub id: AuditRecordId,
    pub at: DateTime<Utc>,
    pub sla: SlaId,
    /// `maintenance.created`, `maintenance.cancelled`,
    /// `maintenance.accepted`, `sla.applied`.
    pub action: String,
    pub actor: String,
    pub actor_customer: Option<CustomerId>,
    pub details: serde_json::Value,
}

/// Records that `actor` did `action` to what `sla`'s verdict rests on.
#[tracing::instrument(skip(tx, details))]
pub async fn record(
    tx: &mut TenantTx,
    sla: SlaId,
    action: &str,
    actor: &Actor<'_>,
    details: &serde_json::Value,
) -> Result<AuditRecordId, StoreError> {
    let id = AuditRecordId::new();
    sqlx::query(
        "INSERT INTO verdict_audit (tenant_id, id, sla_id, action, actor, actor_customer_id, details) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(sla.uuid())
    .bind(action)
    .bind(actor.subject)
    .bind(actor.customer.map(|c| c.uuid()))
    .bind(details)
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

/// A page of an SLA's records, oldest first, paged by id (`aud_…`, time
/// ordered). With `for_customer` (a customer's id and reference), only the
/// records that are not another customer's: none acted on by another
/// customer's user, none naming another customer in its details (a fee),
/// so an SLA moved between customers keeps each one's records from the
/// other.
#[tracing::instrument(skip(tx))]
pub async fn page(
    tx: &mut TenantTx,
    sla: SlaId,
    for_customer: Option<(CustomerId, &str)>,
    page: &Keyset,
) -> Result<Vec<AuditRecord>, StoreError> {
    #[derive(sqlx::FromRow)]
    struct Row {
        id: uuid::Uuid,
        at: DateTime<Utc>,
        action: String,
        actor: String,
        actor_customer_id: Option<uuid::Uuid>,
        details: serde_json::Value,
    }
    let after = match page.after.as_deref() {
        None => None,
        Some(key) => Some(
            key.parse::<AuditRecordId>()
                .map_err(|e| StoreError::InvalidQuery {
                    field: "cursor",
                    reason: e.to_string(),
                })?
                .uuid(),
        ),
    };
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT id, at, action, actor, actor_customer_id, details FROM verdict_audit \
         WHERE tenant_id = $1 AND sla_id = $2 AND ($3::uuid IS NULL OR id > $3) \
           AND ($5::uuid IS NULL OR ( \
                (actor_customer_id IS NULL OR actor_customer_id = $5) \
                AND (details ->> 'customer' IS NULL OR details ->> 'customer' = $6))) \
         ORDER BY id LIMIT $4",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(after)
    .bind(page.fetch())
    .bind(for_customer.map(|(id, _)| id.uuid()))
    .bind(for_customer.map(|(_, reference)| reference))
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| AuditRecord {
            id: AuditRecordId::from_uuid(r.id),
            at: r.at,
            sla,
            action: r.action,
            actor: r.actor,
            actor_customer: r.actor_customer_id.map(CustomerId::from_uuid),
            details: r.details,
        })
        .collect())
}
