//! Deliveries: the fan-out from the outbox, replays, the claim under a lease, and the attempt log.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use slaproof_domain::ids::{OutboxMessageId, TenantId, WebhookEndpointId};

use crate::{Database, StoreError, TenantTx};

/// The filter's wildcard rule in SQL, so that one statement fans out or
/// recovers: `*` matches every type, `a.*` every type under `a.`,
/// anything else exactly (the application layer accepts no other pattern).
fn filter_matches(patterns: &str, event_type: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM unnest({patterns}) AS p (pattern) \
                 WHERE p.pattern = '*' OR p.pattern = {event_type} \
                    OR (right(p.pattern, 2) = '.*' AND starts_with({event_type}, left(p.pattern, -1))))"
    )
}

/// The customer filter's rule in SQL: an endpoint without one takes every
/// fact; one with a customer takes the facts that concern it (by the
/// customer or the SLAs the payload names; `slaproof_message_customers`).
fn customer_matches(customer: &str, payload: &str) -> String {
    format!(
        "({customer} IS NULL OR {customer} = ANY (slaproof_message_customers(slaproof_current_tenant(), {payload})))"
    )
}

/// One outbox message for [`fan_out`].
#[derive(Debug, Clone, PartialEq)]
pub struct Relayed {
    pub message: OutboxMessageId,
    pub event_type: String,
    pub payload: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

/// Writes, in one statement, a delivery of each of the tenant's `messages`
/// to every enabled endpoint whose filter matches its type (and whose
/// customer, if it has one, the message concerns) and that existed when the
/// message was written; a delivery already there is kept (a relay that
/// died after this and before its commit is simply repeated). Answers how
/// many were written. Marking the messages dispatched is the outbox's
/// (`outbox::mark_dispatched`), in the same transaction.
pub async fn fan_out(tx: &mut TenantTx, messages: &[Relayed]) -> Result<u64, StoreError> {
    if messages.is_empty() {
        return Ok(0);
    }
    let ids: Vec<uuid::Uuid> = messages.iter().map(|m| m.message.uuid()).collect();
    let types: Vec<&str> = messages.iter().map(|m| m.event_type.as_str()).collect();
    let payloads: Vec<&serde_json::Value> = messages.iter().map(|m| &m.payload).collect();
    let created: Vec<DateTime<Utc>> = messages.iter().map(|m| m.created_at).collect();
    let done = sqlx::query(&format!(
        "INSERT INTO webhook_deliveries (tenant_id, id, endpoint_id, message_id) \
         SELECT e.tenant_id, gen_random_uuid(), e.id, m.id \
         FROM unnest($2::uuid[], $3::text[], $4::jsonb[], $5::timestamptz[]) \
             AS m (id, event_type, payload, created_at) \
         JOIN webhook_endpoints e ON e.tenant_id = $1 AND e.enabled AND e.created_at <= m.created_at \
         WHERE {} AND {} \
         ON CONFLICT (tenant_id, endpoint_id, message_id) WHERE origin = 'fan_out' DO NOTHING",
        filter_matches("e.event_types", "m.event_type"),
        customer_matches("e.customer_id", "m.payload"),
    ))
    .bind(tx.tenant().uuid())
    .bind(&ids)
    .bind(&types)
    .bind(&payloads)
    .bind(&created)
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected())
}

/// The type of one of the tenant's outbox messages, if there is one.
pub async fn message_type(
    tx: &mut TenantTx,
    message: OutboxMessageId,
) -> Result<Option<String>, StoreError> {
    Ok(
        sqlx::query_scalar("SELECT event_type FROM outbox WHERE tenant_id = $1 AND id = $2")
            .bind(tx.tenant().uuid())
            .bind(message.uuid())
            .fetch_optional(&mut **tx)
            .await?,
    )
}

/// Queues message `message` to endpoint `endpoint` again, due now, as a
/// delivery of its own (its attempts and schedule start over; its
/// `webhook-id` is the message's). Answers `false` when a replay of it to
/// that endpoint is already pending.
#[tracing::instrument(skip(tx))]
pub async fn resend(
    tx: &mut TenantTx,
    endpoint: WebhookEndpointId,
    message: OutboxMessageId,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "INSERT INTO webhook_deliveries (tenant_id, id, endpoint_id, message_id, origin) \
         VALUES ($1, gen_random_uuid(), $2, $3, 'resend') ON CONFLICT DO NOTHING",
    )
    .bind(tx.tenant().uuid())
    .bind(endpoint.uuid())
    .bind(message.uuid())
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Writes a `webhook.test` message for one endpoint and its delivery, due
/// now; the message is marked dispatched as it is written, so the relay
/// hands it to no other endpoint. Answers the message and the delivery.
#[tracing::instrument(skip(tx, payload))]
pub async fn enqueue_test(
    tx: &mut TenantTx,
    endpoint: WebhookEndpointId,
    payload: &serde_json::Value,
) -> Result<(OutboxMessageId, uuid::Uuid), StoreError> {
    let message = crate::outbox::enqueue_dispatched(tx, "webhook.test", payload).await?;
    let delivery: uuid::Uuid = sqlx::query_scalar(
        "INSERT INTO webhook_deliveries (tenant_id, id, endpoint_id, message_id, origin) \
         VALUES ($1, gen_random_uuid(), $2, $3, 'test') RETURNING id",
    )
    .bind(tx.tenant().uuid())
    .bind(endpoint.uuid())
    .bind(message.uuid())
    .fetch_one(&mut **tx)
    .await?;
    Ok((message, delivery))
}

/// The first recorded attempt of a delivery, once there is one.
pub async fn first_attempt(
    tx: &mut TenantTx,
    delivery: uuid::Uuid,
) -> Result<Option<Attempt>, StoreError> {
    type AttemptRow = (
        DateTime<Utc>,
        i32,
        Option<i32>,
        Option<String>,
        Option<String>,
    );
    let row: Option<AttemptRow> = sqlx::query_as(
        "SELECT started_at, duration_ms, status, response_excerpt, error FROM webhook_attempts \
         WHERE tenant_id = $1 AND delivery_id = $2 ORDER BY attempt LIMIT 1",
    )
    .bind(tx.tenant().uuid())
    .bind(delivery)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(
        |(started_at, duration_ms, status, response_excerpt, error)| Attempt {
            started_at,
            duration_ms,
            status,
            response_excerpt,
            error,
        },
    ))
}

/// What a recovery queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovered {
    /// Deliveries written (a message whose replay is already pending is
    /// not queued twice).
    pub queued: u64,
    /// The messages considered; `limit` of them means there may be more.
    pub considered: u64,
    /// When the last message considered was written.
    pub last_at: Option<DateTime<Utc>>,
}

/// Queues again, due now, every message written since `since` (at most
/// `limit`, oldest first) whose type the endpoint's filter takes, whether
/// or not it was delivered before (to an endpoint that was disabled it
/// never was). Messages the relay has not handed on yet are left to it.
#[tracing::instrument(skip(tx))]
pub async fn recover(
    tx: &mut TenantTx,
    endpoint: WebhookEndpointId,
    since: DateTime<Utc>,
    limit: i64,
) -> Result<Recovered, StoreError> {
    let (queued, considered, last_at): (i64, i64, Option<DateTime<Utc>>) =
        sqlx::query_as(&format!(
            "WITH candidates AS ( \
                 SELECT o.id, o.created_at FROM outbox o \
                 JOIN webhook_endpoints e ON e.tenant_id = o.tenant_id AND e.id = $2 \
                 WHERE o.tenant_id = $1 AND o.created_at >= $3 AND o.dispatched_at IS NOT NULL \
                   AND o.event_type <> 'webhook.test' AND {} AND {} \
                 ORDER BY o.created_at, o.id LIMIT $4 \
             ), queued AS ( \
                 INSERT INTO webhook_deliveries (tenant_id, id, endpoint_id, message_id, origin) \
                 SELECT $1, gen_random_uuid(), $2, c.id, 'recover' FROM candidates c \
                 ON CONFLICT DO NOTHING RETURNING 1 \
             ) \
             SELECT (SELECT count(*) FROM queued), (SELECT count(*) FROM candidates), \
                    (SELECT max(created_at) FROM candidates)",
            filter_matches("e.event_types", "o.event_type"),
            customer_matches("e.customer_id", "o.payload"),
        ))
        .bind(tx.tenant().uuid())
        .bind(endpoint.uuid())
        .bind(since)
        .bind(limit)
        .fetch_one(&mut **tx)
        .await?;
    Ok(Recovered {
        queued: u64::try_from(queued).unwrap_or(0),
        considered: u64::try_from(considered).unwrap_or(0),
        last_at,
    })
}

/// A delivery a worker claimed: what sending it needs.
#[derive(Clone)]
pub struct ClaimedDelivery {
    pub tenant: TenantId,
    pub id: uuid::Uuid,
    pub endpoint: WebhookEndpointId,
    pub url: String,
    pub secret_sealed: Vec<u8>,
    /// The secret before the last rotation, while its overlap lasts.
    pub previous_secret_sealed: Option<Vec<u8>>,
    pub message: OutboxMessageId,
    pub event_type: String,
    pub payload: serde_json::Value,
    pub message_created_at: DateTime<Utc>,
    /// This attempt's number, from 1.
    pub attempt: i32,
    /// The endpoint's custom headers as stored: names only once sealed,
    /// names and values on a row written before headers were sealed.
    pub headers: BTreeMap<String, String>,
    /// The custom headers, names and values, sealed; `None` on a row
    /// written before headers were sealed.
    pub headers_sealed: Option<Vec<u8>>,
}

impl std::fmt::Debug for ClaimedDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaimedDelivery")
            .field("tenant", &self.tenant)
            .field("endpoint", &self.endpoint)
            .field("message", &self.message)
            .field("event_type", &self.event_type)
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

/// How much one claim may hand out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimLimits {
    /// Deliveries in this claim.
    pub batch: i32,
    /// Deliveries in flight to one endpoint, across workers.
    pub per_endpoint: i32,
    /// Deliveries of one tenant the claiming worker holds at once.
    pub per_tenant: i32,
}

/// Claims due deliveries to enabled endpoints across tenants, under a
/// lease; each claim counts as an attempt. Per endpoint: in the order the
/// messages were written, at most `per_endpoint` in flight (one for an
/// ordered endpoint), within its rate limit. Per tenant: at most
/// `per_tenant` held by this worker, the tenants taking turns.
#[tracing::instrument(skip(db))]
pub async fn claim(
    db: &Database,
    worker: &str,
    lease: Duration,
    limits: ClaimLimits,
) -> Result<Vec<ClaimedDelivery>, StoreError> {
    type Claimed = (
        uuid::Uuid,
        uuid::Uuid,
        uuid::Uuid,
        String,
        Vec<u8>,
        Option<Vec<u8>>,
        uuid::Uuid,
        String,
        serde_json::Value,
        DateTime<Utc>,
        i32,
        sqlx::types::Json<BTreeMap<String, String>>,
        Option<Vec<u8>>,
    );
    let mut tx = db.platform_tx().await?;
    let rows: Vec<Claimed> = sqlx::query_as(
        "SELECT tenant_id, id, endpoint_id, url, secret_sealed, previous_secret_sealed, message_id, \
                event_type, payload, \
                message_created_at, attempt, headers, headers_sealed \
         FROM slaproof_claim_webhook_deliveries($1, $2, make_interval(secs => $3), $4, $5)",
    )
    .bind(worker)
    .bind(limits.batch)
    .bind(lease.as_secs_f64())
    .bind(limits.per_endpoint)
    .bind(limits.per_tenant)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows
        .into_iter()
        .map(
            |(
                tenant,
                id,
                endpoint,
                url,
                secret_sealed,
                previous_secret_sealed,
                message,
                event_type,
                payload,
                created,
                attempt,
                headers,
                headers_sealed,
            )| {
                ClaimedDelivery {
                    tenant: TenantId::from_uuid(tenant),
                    id,
                    endpoint: WebhookEndpointId::from_uuid(endpoint),
                    url,
                    secret_sealed,
                    previous_secret_sealed,
                    message: OutboxMessageId::from_uuid(message),
                    event_type,
                    payload,
                    message_created_at: created,
                    attempt,
                    headers: headers.0,
                    headers_sealed,
                }
            },
        )
        .collect())
}

/// One attempt as it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub started_at: DateTime<Utc>,
    pub duration_ms: i32,
    pub status: Option<i32>,
    pub response_excerpt: Option<String>,
    pub error: Option<String>,
}

/// What becomes of the delivery after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Delivered,
    RetryAt(DateTime<Utc>),
    /// The schedule is exhausted, or the endpoint is gone.
    Failed,
}

/// One attempt to record with [`record_attempts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    pub delivery: uuid::Uuid,
    /// The attempt's number, as claimed.
    pub attempt: i32,
    pub outcome: Attempt,
    pub next: Next,
}

/// Records each attempt and what follows it (delivered, a retry time, or
/// given up), for many deliveries of the transaction's tenant in one
/// statement: each is recorded unless the worker's lease on it was lost to
/// another (that worker's record stands). Answers the deliveries recorded.
#[tracing::instrument(skip(tx, records), fields(records = records.len()))]
pub async fn record_attempts(
    tx: &mut TenantTx,
    worker: &str,
    records: &[AttemptRecord],
) -> Result<Vec<uuid::Uuid>, StoreError> {
    if records.is_empty() {
        return Ok(Vec::new());
    }
    let mut ids = Vec::with_capacity(records.len());
    let mut attempts = Vec::with_capacity(records.len());
    let mut delivered = Vec::with_capacity(records.len());
    let mut failed = Vec::with_capacity(records.len());
    let mut retry_at = Vec::with_capacity(records.len());
    let mut started_at = Vec::with_capacity(records.len());
    let mut duration_ms = Vec::with_capacity(records.len());
    let mut status = Vec::with_capacity(records.len());
    let mut excerpt = Vec::with_capacity(records.len());
    let mut error = Vec::with_capacity(records.len());
    for r in records {
        let (d, f, at) = match r.next {
            Next::Delivered => (true, false, None),
            Next::Failed => (false, true, None),
            Next::RetryAt(at) => (false, false, Some(at)),
        };
        ids.push(r.delivery);
        attempts.push(r.attempt);
        delivered.push(d);
        failed.push(f);
        retry_at.push(at);
        started_at.push(r.outcome.started_at);
        duration_ms.push(r.outcome.duration_ms);
        status.push(r.outcome.status);
        excerpt.push(r.outcome.response_excerpt.clone());
        error.push(r.outcome.error.clone());
    }
    // The lease check, then the attempt row: only the deliveries the
    // update matched get their attempt written.
    let recorded: Vec<uuid::Uuid> = sqlx::query_scalar(
        "WITH input AS ( \
             SELECT * FROM unnest($3::uuid[], $4::int[], $5::bool[], $6::bool[], $7::timestamptz[], \
                                  $8::timestamptz[], $9::int[], $10::int[], $11::text[], $12::text[]) \
                 AS t (id, attempt, delivered, failed, retry_at, started_at, duration_ms, status, \
                       response_excerpt, error) \
         ), updated AS ( \
             UPDATE webhook_deliveries d SET locked_by = NULL, locked_until = NULL, \
                 delivered_at = CASE WHEN i.delivered THEN $13::timestamptz END, \
                 failed_at = CASE WHEN i.failed THEN $13::timestamptz END, \
                 next_attempt_at = coalesce(i.retry_at, d.next_attempt_at) \
             FROM input i \
             WHERE d.tenant_id = $1 AND d.id = i.id AND d.locked_by = $2 AND d.attempts = i.attempt \
             RETURNING d.id \
         ), logged AS ( \
             INSERT INTO webhook_attempts (tenant_id, delivery_id, attempt, started_at, duration_ms, \
                                           status, response_excerpt, error) \
             SELECT $1, i.id, i.attempt, i.started_at, i.duration_ms, i.status, i.response_excerpt, i.error \
             FROM input i JOIN updated u ON u.id = i.id \
             ON CONFLICT DO NOTHING \
         ) \
         SELECT id FROM updated",
    )
    .bind(tx.tenant().uuid())
    .bind(worker)
    .bind(&ids)
    .bind(&attempts)
    .bind(&delivered)
    .bind(&failed)
    .bind(&retry_at)
    .bind(&started_at)
    .bind(&duration_ms)
    .bind(&status)
    .bind(&excerpt)
    .bind(&error)
    // Bound, not now(): Citus refuses now() inside CASE in an UPDATE.
    .bind(Utc::now())
    .fetch_all(&mut **tx)
    .await?;
    Ok(recorded)
}

/// An attempt as the provider reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAttempt {
    pub message: OutboxMessageId,
    pub event_type: String,
    pub attempt: i32,
    pub started_at: DateTime<Utc>,
    pub duration_ms: i32,
    pub status: Option<i32>,
    pub response_excerpt: Option<String>,
    pub error: Option<String>,
}

/// The latest attempts to deliver to an endpoint, newest first.
pub async fn attempts(
    tx: &mut TenantTx,
    endpoint: WebhookEndpointId,
    limit: i64,
) -> Result<Vec<StoredAttempt>, StoreError> {
    type AttemptRow = (
        uuid::Uuid,
        String,
        i32,
        DateTime<Utc>,
        i32,
        Option<i32>,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<AttemptRow> = sqlx::query_as(
        "SELECT d.message_id, o.event_type, a.attempt, a.started_at, a.duration_ms, a.status, \
                a.response_excerpt, a.error \
         FROM webhook_attempts a \
         JOIN webhook_deliveries d ON d.tenant_id = a.tenant_id AND d.id = a.delivery_id \
         JOIN outbox o ON o.tenant_id = d.tenant_id AND o.id = d.message_id \
         WHERE a.tenant_id = $1 AND d.endpoint_id = $2 \
         ORDER BY a.started_at DESC, a.attempt DESC LIMIT $3",
    )
    .bind(tx.tenant().uuid())
    .bind(endpoint.uuid())
    .bind(limit)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(message, event_type, attempt, started_at, duration_ms, status, excerpt, error)| {
                StoredAttempt {
                    message: OutboxMessageId::from_uuid(message),
                    event_type,
                    attempt,
                    started_at,
                    duration_ms,
                    status,
                    response_excerpt: excerpt,
                    error,
                }
            },
        )
        .collect())
}

/// What one retention round deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expired {
    pub attempts: u64,
    pub deliveries: u64,
}

/// Deletes every tenant's attempts started more than `keep_days` ago, then
/// the finished deliveries (delivered or failed) that long ago that have no
/// attempt left. Pending deliveries stay whatever their age: the worker
/// still owes them. Each tenant in its own transaction, under row-level
/// security like everything else.
#[tracing::instrument(skip(db))]
pub async fn expire(db: &Database, keep_days: u32) -> Result<Expired, StoreError> {
    let mut expired = Expired::default();
    for tenant in crate::tenants::list(db).await? {
        let mut tx = db.tenant_tx(tenant.id).await?;
        expired.attempts += sqlx::query(
            "DELETE FROM webhook_attempts \
             WHERE tenant_id = $1 AND started_at < now() - make_interval(days => $2)",
        )
        .bind(tenant.id.uuid())
        .bind(i32::try_from(keep_days).unwrap_or(i32::MAX))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        expired.deliveries += sqlx::query(
            "DELETE FROM webhook_deliveries d \
             WHERE d.tenant_id = $1 \
               AND coalesce(d.delivered_at, d.failed_at) < now() - make_interval(days => $2) \
               AND NOT EXISTS (SELECT 1 FROM webhook_attempts a \
                               WHERE a.tenant_id = d.tenant_id AND a.delivery_id = d.id)",
        )
        .bind(tenant.id.uuid())
        .bind(i32::try_from(keep_days).unwrap_or(i32::MAX))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
    }
    Ok(expired)
}
