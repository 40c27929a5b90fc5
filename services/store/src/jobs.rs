//! The job queue: work rows any replica can claim with `FOR UPDATE SKIP
//! LOCKED`, under a lease, finished in the same tenant transaction as the
//! work they stand for.

use std::time::Duration;

use chrono::{DateTime, Utc};
use slaproof_domain::ids::{JobId, TenantId};

use crate::{Database, StoreError, TenantTx};

/// Work to enqueue.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub kind: String,
    pub payload: serde_json::Value,
    /// Jobs with the same kind and key are one job while pending: asking
    /// again moves it earlier, or, while a worker holds it, runs it once
    /// more afterwards.
    pub dedup_key: Option<String>,
    pub run_at: DateTime<Utc>,
}

/// A job a worker holds under a lease.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedJob {
    pub tenant: TenantId,
    pub id: JobId,
    pub kind: String,
    pub payload: serde_json::Value,
    /// Including this one.
    pub attempts: i32,
    pub worker: String,
}

/// Enqueues a job for the transaction's tenant; it becomes visible to
/// workers when the transaction commits. Returns the id of the job that
/// will do the work (an existing one when deduplicated).
#[tracing::instrument(skip(tx, job), fields(kind = %job.kind))]
pub async fn enqueue(tx: &mut TenantTx, job: &NewJob) -> Result<JobId, StoreError> {
    let id: uuid::Uuid = sqlx::query_scalar(
        "INSERT INTO jobs (tenant_id, id, kind, payload, dedup_key, run_at) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (tenant_id, kind, dedup_key) WHERE dedup_key IS NOT NULL DO UPDATE \
         SET run_at = least(jobs.run_at, EXCLUDED.run_at), \
             requeued = jobs.requeued OR (jobs.locked_until IS NOT NULL AND jobs.locked_until > now()) \
         RETURNING id",
    )
    .bind(tx.tenant().uuid())
    .bind(JobId::new().uuid())
    .bind(&job.kind)
    .bind(&job.payload)
    .bind(&job.dedup_key)
    .bind(job.run_at)
    .fetch_one(&mut **tx)
    .await?;
    Ok(JobId::from_uuid(id))
}

/// Claims up to `limit` due jobs of `kind` for `worker`, across tenants.
#[tracing::instrument(skip(db))]
pub async fn claim(
    db: &Database,
    kind: &str,
    worker: &str,
    limit: i32,
    lease: Duration,
) -> Result<Vec<ClaimedJob>, StoreError> {
    let rows: Vec<(uuid::Uuid, uuid::Uuid, String, serde_json::Value, i32)> = sqlx::query_as(
        "SELECT tenant_id, id, kind, payload, attempts FROM slaproof_claim_jobs($1, $2, $3, make_interval(secs => $4))",
    )
    .bind(kind)
    .bind(worker)
    .bind(limit)
    .bind(lease.as_secs_f64())
    .fetch_all(db.pool())
    .await?;
    Ok(rows
        .into_iter()
        .map(|(tenant, id, kind, payload, attempts)| ClaimedJob {
            tenant: TenantId::from_uuid(tenant),
            id: JobId::from_uuid(id),
            kind,
            payload,
            attempts,
            worker: worker.to_owned(),
        })
        .collect())
}

/// Finishes a job inside the tenant transaction that did its work, so the
/// work and its completion commit together. Returns `false` when the lease
/// was lost (another worker has the job now): the caller must roll back.
pub async fn complete(tx: &mut TenantTx, job: &ClaimedJob) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "WITH finished AS ( \
           DELETE FROM jobs WHERE tenant_id = $1 AND id = $2 AND locked_by = $3 AND NOT requeued RETURNING 1 \
         ), again AS ( \
           UPDATE jobs SET requeued = false, locked_by = NULL, locked_until = NULL, attempts = 0, run_at = now() \
           WHERE tenant_id = $1 AND id = $2 AND locked_by = $3 AND requeued RETURNING 1 \
         ) SELECT (SELECT count(*) FROM finished) + (SELECT count(*) FROM again)",
    )
    .bind(tx.tenant().uuid())
    .bind(job.id.uuid())
    .bind(&job.worker)
    .fetch_one(&mut **tx)
    .await
    .map(|row| sqlx::Row::get::<i64, _>(&row, 0))?;
    Ok(done == 1)
}

/// Records a failed attempt: the job is retried after `retry_in`, or marked
/// failed for good once it has used all its attempts.
pub async fn fail(
    db: &Database,
    job: &ClaimedJob,
    error: &str,
    retry_in: Duration,
) -> Result<(), StoreError> {
    let mut tx = db.tenant_tx(job.tenant).await?;
    sqlx::query(
        "UPDATE jobs SET locked_by = NULL, locked_until = NULL, last_error = $4, \
             run_at = now() + make_interval(secs => $5), \
             failed_at = CASE WHEN attempts >= max_attempts THEN now() END \
         WHERE tenant_id = $1 AND id = $2 AND locked_by = $3",
    )
    .bind(job.tenant.uuid())
    .bind(job.id.uuid())
    .bind(&job.worker)
    .bind(error)
    .bind(retry_in.as_secs_f64())
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}
