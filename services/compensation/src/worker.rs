//! The compensation worker: claims `credit` jobs and runs each in one tenant transaction with its completion.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use slaproof_domain::ids::SlaId;
use slaproof_store::Database;
use slaproof_store::jobs::{self, ClaimedJob};
use tokio_util::sync::CancellationToken;

use crate::credit::{CompensationError, Credited, credit_period};

/// How the compensation worker runs: the `[compensation]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Milliseconds between polls for credit jobs when the last found none.
    pub poll_interval_ms: u64,
    /// Jobs claimed per round.
    pub batch: i32,
    /// Seconds a claimed job is this worker's before another may take it.
    pub lease_secs: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            poll_interval_ms: 1000,
            batch: 50,
            lease_secs: 120,
        }
    }
}

/// A credit job's payload, as the evaluator writes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreditJob {
    sla: SlaId,
    period_start: DateTime<Utc>,
}

/// Runs one claimed job: the period's credit and the job's completion in
/// one transaction. A lease lost to another worker rolls it all back.
#[tracing::instrument(skip(db, job), fields(tenant = %job.tenant))]
pub async fn run_job(db: &Database, job: &ClaimedJob) -> Result<Credited, CompensationError> {
    let payload: CreditJob = serde_json::from_value(job.payload.clone())
        .map_err(|e| CompensationError::Payload(e.to_string()))?;
    let mut tx = db.tenant_tx(job.tenant).await?;
    let credited = credit_period(&mut tx, payload.sla, payload.period_start).await?;
    if !jobs::complete(&mut tx, job).await? {
        tx.rollback().await?;
        return Err(CompensationError::LeaseLost);
    }
    tx.commit().await?;
    Ok(credited)
}

/// Claims and runs due credit jobs until none is left; answers how many
/// ran (failed ones are retried later with a growing delay).
pub async fn work_due(
    db: &Database,
    settings: &Settings,
    worker: &str,
) -> Result<usize, CompensationError> {
    let mut ran = 0;
    loop {
        let lease = Duration::from_secs(settings.lease_secs);
        let claimed = jobs::claim(db, jobs::CREDIT, worker, settings.batch, lease).await?;
        if claimed.is_empty() {
            return Ok(ran);
        }
        for job in &claimed {
            ran += 1;
            if let Err(err) = run_job(db, job).await {
                let retry = jobs::retry_delay(job.attempts);
                tracing::error!(tenant = %job.tenant, error = %err, attempts = job.attempts, "credit job failed; will retry");
                if let Err(fail) = jobs::fail(db, job, &err.to_string(), retry).await {
                    tracing::error!(tenant = %job.tenant, error = %fail, "could not record the failure");
                }
            }
        }
    }
}

/// Runs rounds until `shutdown`.
pub async fn run(db: Database, settings: Settings, worker: String, shutdown: CancellationToken) {
    let poll = Duration::from_millis(settings.poll_interval_ms);
    loop {
        if let Err(err) = work_due(&db, &settings, &worker).await {
            tracing::error!(error = %err, "credit round failed; retrying");
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(poll) => {}
        }
    }
}
