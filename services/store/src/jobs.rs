//! The job queue: work rows any replica can claim with `FOR UPDATE SKIP
//! LOCKED`, under a lease, finished in the same tenant transaction as the
//! work they stand for. A failed attempt is retried after a delay that
//! grows with the failures in a row ([`retry_delay`]); a job is never given
//! up on, only marked stuck after `max_attempts` (10) and retried at the
//! longest delay, and a success or an explicit [`enqueue`] clears that.
//!
//! The SLAs an evaluate job keeps failing on, while it evaluates the
//! tenant's others, are in [`crate::evaluation_failures`].

use std::time::Duration;

use chrono::{DateTime, Utc};
use slaproof_domain::ids::{JobId, TenantId};

use crate::{Database, StoreError, TenantTx};

/// The kind of the evaluator's job: one per tenant, evaluating all its SLAs.
pub const EVALUATE: &str = "evaluate";

/// The kind of compensation's job: one per SLA and period, computing its
/// credit from the results in force. The evaluator enqueues it in the
/// transaction that freezes a period's result (payload `sla`,
/// `periodStart`, `periodEnd`; deduplicated by SLA and period).
pub const CREDIT: &str = "credit";
/// The kind of a transparency log day's anchor job: one per tenant and
/// day, enqueued with the day's head, run by the attestation worker.
pub const LOG_ANCHOR: &str = "log_anchor";

/// The longest delay before a failed job is tried again, and the delay of
/// a stuck one.
pub const RETRY_CAP: Duration = Duration::from_secs(600);

/// The largest share of a retry delay taken off at random, so that jobs
/// that failed together (a database restart) do not all come back together.
pub const RETRY_JITTER: f64 = 0.25;

/// The longest error text kept: enough to say what went wrong.
const MAX_ERROR_CHARS: usize = 2000;

/// Work to enqueue.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub kind: String,
    pub payload: serde_json::Value,
    /// Jobs with the same kind and key are one job, kept after it
    /// succeeds: asking again makes it due (or earlier), or, while a worker
    /// holds it, runs it once more afterwards.
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
    /// Attempts since its last success, including this one.
    pub attempts: i32,
    pub worker: String,
}

/// Enqueues a job for the transaction's tenant; it becomes visible to
/// workers when the transaction commits. Returns the id of the job that
/// will do the work (an existing one when deduplicated).
///
/// Asking explicitly for work that is failing starts it afresh: due at
/// `run_at`, its failure state (attempts, error, stuck) cleared. Work asked
/// for over and over as a routine goes through [`enqueue_routine`].
#[tracing::instrument(skip(tx, job), fields(kind = %job.kind))]
pub async fn enqueue(tx: &mut TenantTx, job: &NewJob) -> Result<JobId, StoreError> {
    insert(
        tx,
        job,
        "run_at = least(jobs.run_at, EXCLUDED.run_at), attempts = 0, last_error = NULL, \
         failing_since = NULL, last_failed_at = NULL, stuck_since = NULL",
    )
    .await
}

/// [`enqueue`] for work a worker asks for again and again (the evaluator
/// asks for every tenant's evaluation every round): a job that is failing
/// keeps its retry time and failure state, or the routine request would
/// undo the growing delay between attempts.
#[tracing::instrument(skip(tx, job), fields(kind = %job.kind))]
pub async fn enqueue_routine(tx: &mut TenantTx, job: &NewJob) -> Result<JobId, StoreError> {
    insert(
        tx,
        job,
        "run_at = CASE WHEN jobs.failing_since IS NULL THEN least(jobs.run_at, EXCLUDED.run_at) \
                       ELSE jobs.run_at END",
    )
    .await
}

/// Inserts a job, or updates the pending one with the same dedup key with
/// `update` (and makes a job a worker holds run once more afterwards).
async fn insert(tx: &mut TenantTx, job: &NewJob, update: &str) -> Result<JobId, StoreError> {
    let id: uuid::Uuid = sqlx::query_scalar(&format!(
        "INSERT INTO jobs (tenant_id, id, kind, payload, dedup_key, run_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, now()) \
         ON CONFLICT (tenant_id, kind, dedup_key) WHERE dedup_key IS NOT NULL DO UPDATE \
         SET {update}, \
             requeued = jobs.requeued OR (jobs.locked_until IS NOT NULL \
                 AND jobs.locked_until > EXCLUDED.created_at) \
         RETURNING id",
    ))
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
    let mut tx = db.platform_tx().await?;
    let rows: Vec<(uuid::Uuid, uuid::Uuid, String, serde_json::Value, i32)> = sqlx::query_as(
        "SELECT tenant_id, id, kind, payload, attempts FROM slaproof_claim_jobs($1, $2, $3, make_interval(secs => $4))",
    )
    .bind(kind)
    .bind(worker)
    .bind(limit)
    .bind(lease.as_secs_f64())
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
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
/// work and its completion commit together, and clears its failure state.
/// A job with a dedup key is kept, not due until its work is asked for
/// again (due at once when it was asked for while it ran), so that it says
/// when it last succeeded. Returns `false` when the lease was lost (another
/// worker has the job now): the caller must roll back.
pub async fn complete(tx: &mut TenantTx, job: &ClaimedJob) -> Result<bool, StoreError> {
    // The time is bound, not `now()`: Citus refuses a non-immutable
    // function inside CASE or COALESCE of an UPDATE (docs/OPERATIONS.md,
    // "Citus"); so in every UPDATE below.
    let done = sqlx::query(
        "WITH finished AS ( \
           DELETE FROM jobs WHERE tenant_id = $1 AND id = $2 AND locked_by = $3 \
             AND dedup_key IS NULL AND NOT requeued RETURNING 1 \
         ), kept AS ( \
           UPDATE jobs SET run_at = CASE WHEN requeued THEN $4::timestamptz END, requeued = false, \
               locked_by = NULL, locked_until = NULL, attempts = 0, last_error = NULL, \
               failing_since = NULL, last_failed_at = NULL, stuck_since = NULL, succeeded_at = $4 \
           WHERE tenant_id = $1 AND id = $2 AND locked_by = $3 AND (dedup_key IS NOT NULL OR requeued) \
           RETURNING 1 \
         ) SELECT (SELECT count(*) FROM finished) + (SELECT count(*) FROM kept)",
    )
    .bind(tx.tenant().uuid())
    .bind(job.id.uuid())
    .bind(&job.worker)
    .bind(Utc::now())
    .fetch_one(&mut **tx)
    .await
    .map(|row| sqlx::Row::get::<i64, _>(&row, 0))?;
    Ok(done == 1)
}

/// Hands a job back to be run again at `run_at`, in the transaction that
/// did its work so far: not a failure (its attempts start again), but work
/// that waits for a time, such as a batch's epoch to end. Returns `false`
/// when the lease was lost: the caller must roll back.
pub async fn defer(
    tx: &mut TenantTx,
    job: &ClaimedJob,
    run_at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE jobs SET locked_by = NULL, locked_until = NULL, \
             run_at = CASE WHEN requeued THEN least($5::timestamptz, $4) ELSE $4 END, requeued = false, \
             attempts = 0, last_error = NULL, failing_since = NULL, last_failed_at = NULL, \
             stuck_since = NULL \
         WHERE tenant_id = $1 AND id = $2 AND locked_by = $3",
    )
    .bind(tx.tenant().uuid())
    .bind(job.id.uuid())
    .bind(&job.worker)
    .bind(run_at)
    .bind(Utc::now())
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(done == 1)
}

/// Records a failed attempt: the job is retried after `retry_in` (see
/// [`retry_delay`]), and marked stuck — still retried — once its attempts
/// in a row reach its `max_attempts`.
pub async fn fail(
    db: &Database,
    job: &ClaimedJob,
    error: &str,
    retry_in: Duration,
) -> Result<(), StoreError> {
    let mut tx = db.tenant_tx(job.tenant).await?;
    sqlx::query(
        "UPDATE jobs SET locked_by = NULL, locked_until = NULL, requeued = false, last_error = $4, \
             run_at = $6::timestamptz + make_interval(secs => $5), \
             failing_since = coalesce(failing_since, $6), last_failed_at = $6, \
             stuck_since = CASE WHEN attempts >= max_attempts THEN coalesce(stuck_since, $6) END \
         WHERE tenant_id = $1 AND id = $2 AND locked_by = $3",
    )
    .bind(job.tenant.uuid())
    .bind(job.id.uuid())
    .bind(&job.worker)
    .bind(error_text(error))
    .bind(retry_in.as_secs_f64())
    .bind(Utc::now())
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// How long a job waits after failing its `attempts`-th attempt in a row:
/// 2^attempts seconds, at most [`RETRY_CAP`], less up to [`RETRY_JITTER`]
/// of it at random. So 1.5–2 s after the first failure, 3–4 s after the
/// second, … 7.5–10 minutes from the tenth on.
pub fn retry_delay(attempts: i32) -> Duration {
    let full = 2f64
        .powi(attempts.clamp(0, 30))
        .min(RETRY_CAP.as_secs_f64());
    Duration::from_secs_f64(full * (1.0 - RETRY_JITTER * rand::random::<f64>()))
}

/// An error as kept: its first [`MAX_ERROR_CHARS`] characters.
pub fn error_text(error: &str) -> &str {
    match error.char_indices().nth(MAX_ERROR_CHARS) {
        Some((end, _)) => &error[..end],
        None => error,
    }
}

/// A tenant's job as it stands.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct JobState {
    /// Attempts since the last success (failed ones, and a running one).
    pub attempts: i32,
    /// Attempts in a row after which the job counts as stuck.
    pub max_attempts: i32,
    /// When it is due; `None` when done and not asked for again yet.
    pub run_at: Option<DateTime<Utc>>,
    /// A worker holds it now.
    pub running: bool,
    /// When the last successful run started (jobs kept after success).
    pub succeeded_at: Option<DateTime<Utc>>,
    /// The first failure since the last success; `None` when not failing.
    pub failing_since: Option<DateTime<Utc>>,
    pub last_failed_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    /// When its failures in a row reached `max_attempts`.
    pub stuck_since: Option<DateTime<Utc>>,
}

/// The transaction's tenant's job of `kind` (the latest made, should there
/// be several), if it has one.
#[tracing::instrument(skip(tx))]
pub async fn state(tx: &mut TenantTx, kind: &str) -> Result<Option<JobState>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT attempts, max_attempts, run_at, coalesce(locked_until > now(), false) AS running, \
                succeeded_at, failing_since, last_failed_at, last_error, stuck_since \
         FROM jobs WHERE tenant_id = $1 AND kind = $2 ORDER BY created_at DESC LIMIT 1",
    )
    .bind(tx.tenant().uuid())
    .bind(kind)
    .fetch_optional(&mut **tx)
    .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_double_up_to_the_cap_less_at_most_a_quarter() {
        for attempts in 0..40 {
            let full = 2f64.powi(attempts.min(30)).min(600.0);
            for _ in 0..50 {
                let delay = retry_delay(attempts).as_secs_f64();
                assert!(
                    delay <= full && delay >= full * 0.75 - 1e-9,
                    "{attempts}: {delay} s"
                );
            }
        }
        // Each delay exceeds the one before until the cap, jitter or not.
        assert!(retry_delay(3) > retry_delay(2));
        assert!(retry_delay(-1) <= Duration::from_secs(1));
        assert!(retry_delay(10) >= Duration::from_secs(450));
    }

    #[test]
    fn error_texts_are_cut_on_a_character_boundary() {
        assert_eq!(error_text("boom"), "boom");
        let long = "é".repeat(MAX_ERROR_CHARS + 5);
        assert_eq!(error_text(&long).chars().count(), MAX_ERROR_CHARS);
    }
}
