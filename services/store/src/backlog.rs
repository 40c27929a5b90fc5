//! How much work waits in one tenant's queues, for the operators' alerts:
//! due jobs by kind, undispatched outbox facts, undelivered webhooks and
//! unfinished attestations, each with the age of its oldest item.

use crate::{StoreError, TenantTx};

/// One queue of the transaction's tenant.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Queue {
    /// `jobs:<kind>`, `outbox`, `webhook_deliveries` or `attestations`.
    pub queue: String,
    /// Items due now and not done.
    pub waiting: i64,
    /// Seconds since the oldest waiting item became due; `None` when none
    /// waits.
    pub oldest_secs: Option<f64>,
    /// Items given up on, or stuck: jobs that failed their attempts in a
    /// row (still retried at the longest delay), deliveries whose schedule
    /// ran out or whose endpoint answered 410, periods not provable.
    pub failed: i64,
}

/// Every queue of the transaction's tenant that holds anything.
#[tracing::instrument(skip(tx))]
pub async fn queues(tx: &mut TenantTx) -> Result<Vec<Queue>, StoreError> {
    // Each arm reads one table of one tenant through an index on its
    // pending rows, or a table that stays small (jobs are deleted when
    // done; deliveries after `webhooks.attempts_retention_days`).
    sqlx::query_as(
        "SELECT 'jobs:' || kind AS queue, \
             count(*) FILTER (WHERE run_at <= now()) AS waiting, \
             extract(epoch FROM now() - min(run_at) FILTER (WHERE run_at <= now()))::float8 AS oldest_secs, \
             count(*) FILTER (WHERE stuck_since IS NOT NULL) AS failed \
         FROM jobs WHERE tenant_id = $1 GROUP BY kind \
         UNION ALL \
         SELECT 'outbox', count(*), extract(epoch FROM now() - min(created_at))::float8, 0 \
         FROM outbox WHERE tenant_id = $1 AND dispatched_at IS NULL \
         UNION ALL \
         SELECT 'webhook_deliveries', \
             count(*) FILTER (WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()), \
             extract(epoch FROM now() - min(next_attempt_at) FILTER (WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()))::float8, \
             count(*) FILTER (WHERE failed_at IS NOT NULL) \
         FROM webhook_deliveries WHERE tenant_id = $1 \
         UNION ALL \
         SELECT 'attestations', \
             count(*) FILTER (WHERE status IN ('pending', 'proven')), \
             extract(epoch FROM now() - min(created_at) FILTER (WHERE status IN ('pending', 'proven')))::float8, \
             count(*) FILTER (WHERE status = 'not_provable') \
         FROM attestations WHERE tenant_id = $1 \
         ORDER BY queue",
    )
    .bind(tx.tenant().uuid())
    .fetch_all(&mut **tx)
    .await
    .map_err(StoreError::from)
}
