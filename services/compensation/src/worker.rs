//! The compensation worker: claims `credit` jobs and runs each in one tenant transaction with its completion.

use std::time::Duration;

use serde::Deserialize;
use slaproof_domain::settings::SettingsError;
use slaproof_store::credits::CreditRequest;
use slaproof_store::jobs::{self, ClaimedJob};
use slaproof_store::{Database, StoreError, TenantTx};
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

impl Settings {
    /// Checks the bounds.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let check = slaproof_domain::settings::within;
        check(
            "compensation.poll_interval_ms",
            self.poll_interval_ms,
            10,
            60_000,
        )?;
        check(
            "compensation.batch",
            u64::try_from(self.batch).unwrap_or(0),
            1,
            1000,
        )?;
        check("compensation.lease_secs", self.lease_secs, 10, 3600)
    }
}

/// Runs one claimed job: the period's credit and the job's completion in
/// one transaction. A lease lost to another worker rolls it all back.
#[tracing::instrument(skip(db, job), fields(tenant = %job.tenant))]
pub async fn run_job(db: &Database, job: &ClaimedJob) -> Result<Credited, CompensationError> {
    let mut tx = db.tenant_tx(job.tenant).await?;
    let credited = credit_and_complete(&mut tx, job).await?;
    tx.commit().await?;
    Ok(credited)
}

/// Claims and runs due credit jobs until none is left; answers how many
/// ran (failed ones are retried later with a growing delay).
///
/// The jobs of one tenant claimed together share one transaction, each in
/// a savepoint of its own (`run_together`): a commit waits for the
/// disk, and one commit per credit cost more than the credit itself.
pub async fn work_due(
    db: &Database,
    settings: &Settings,
    worker: &str,
) -> Result<usize, CompensationError> {
    let mut ran = 0;
    loop {
        let lease = Duration::from_secs(settings.lease_secs);
        let mut claimed = jobs::claim(db, jobs::CREDIT, worker, settings.batch, lease).await?;
        if claimed.is_empty() {
            return Ok(ran);
        }
        ran += claimed.len();
        claimed.sort_by_key(|job| job.tenant.uuid());
        for tenant_jobs in claimed.chunk_by(|a, b| a.tenant == b.tenant) {
            let failed = match run_together(db, tenant_jobs).await {
                Ok(failed) => failed,
                Err(err) => {
                    // The shared transaction is gone and took nothing with
                    // it: each job alone, so that one cannot hold back the
                    // others.
                    tracing::warn!(error = %err, jobs = tenant_jobs.len(), "credit batch failed; running its jobs one by one");
                    let mut failed = Vec::new();
                    for job in tenant_jobs {
                        if let Err(err) = run_job(db, job).await {
                            failed.push((job, err));
                        }
                    }
                    failed
                }
            };
            for (job, err) in failed {
                let retry = jobs::retry_delay(job.attempts);
                tracing::error!(tenant = %job.tenant, error = %err, attempts = job.attempts, "credit job failed; will retry");
                if let Err(fail) = jobs::fail(db, job, &err.to_string(), retry).await {
                    tracing::error!(tenant = %job.tenant, error = %fail, "could not record the failure");
                }
            }
        }
    }
}

/// Runs claimed jobs of one tenant in one transaction, each job's credit
/// and completion in a savepoint: a job that fails is rolled back to its
/// savepoint and answered with its error, the others commit together. A
/// worker that dies before the commit leaves nothing of any of them.
#[tracing::instrument(skip_all, fields(jobs = jobs.len()))]
async fn run_together<'a>(
    db: &Database,
    jobs: &'a [ClaimedJob],
) -> Result<Vec<(&'a ClaimedJob, CompensationError)>, CompensationError> {
    let Some(first) = jobs.first() else {
        return Ok(Vec::new());
    };
    let mut tx = db.tenant_tx(first.tenant).await?;
    let mut failed = Vec::new();
    for job in jobs {
        savepoint(&mut tx, "SAVEPOINT slaproof_credit").await?;
        match credit_and_complete(&mut tx, job).await {
            Ok(_) => savepoint(&mut tx, "RELEASE SAVEPOINT slaproof_credit").await?,
            Err(err) => {
                savepoint(&mut tx, "ROLLBACK TO SAVEPOINT slaproof_credit").await?;
                savepoint(&mut tx, "RELEASE SAVEPOINT slaproof_credit").await?;
                failed.push((job, err));
            }
        }
    }
    tx.commit().await?;
    Ok(failed)
}

async fn savepoint(tx: &mut TenantTx, statement: &str) -> Result<(), CompensationError> {
    sqlx::query(statement)
        .execute(&mut **tx)
        .await
        .map_err(StoreError::from)?;
    Ok(())
}

/// One job's credit and its completion, in `tx`.
async fn credit_and_complete(
    tx: &mut TenantTx,
    job: &ClaimedJob,
) -> Result<Credited, CompensationError> {
    let payload: CreditRequest = serde_json::from_value(job.payload.clone())
        .map_err(|e| CompensationError::Payload(e.to_string()))?;
    let credited = credit_period(tx, payload.sla, payload.period_start).await?;
    if !jobs::complete(tx, job).await? {
        return Err(CompensationError::LeaseLost);
    }
    Ok(credited)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_a_setting_out_of_bounds_is_named() {
        assert_eq!(Settings::default().validate(), Ok(()));
        let zero = Settings {
            batch: 0,
            ..Settings::default()
        };
        let err = zero.validate().unwrap_err();
        assert_eq!(err.key, "compensation.batch");
        assert!(err.rule.contains("between 1 and 1000"), "{}", err.rule);
    }
}
