//! The housekeeping service: keeps the daily partitions of the events table
//! created ahead and drops those past retention, deletes the API's
//! idempotency keys past their day, and thins evaluations older than
//! `evaluator.evaluations_full_days` to one an hour per objective, and
//! deletes webhook attempts past `webhooks.attempts_retention_days`. Replicas
//! may run it side by side; the schema serializes their DDL.

use std::time::Duration;

use slaproof_store::{Database, partitions};
use tokio_util::sync::CancellationToken;

use crate::config::EventsConfig;

/// Runs one round at start, then one every `upkeep_interval_secs`, until
/// cancelled.
pub(crate) async fn run(
    db: Database,
    config: EventsConfig,
    evaluations_full_days: u32,
    attempts_retention_days: u32,
    shutdown: CancellationToken,
) {
    let interval = Duration::from_secs(config.upkeep_interval_secs);
    loop {
        let today = chrono::Utc::now().date_naive();
        match partitions::upkeep(
            &db,
            today,
            config.partitions_ahead_days,
            config.retention_days,
        )
        .await
        {
            Ok(done) => {
                if done.created > 0 || !done.dropped.is_empty() {
                    tracing::info!(created = done.created, dropped = ?done.dropped, "event partitions maintained");
                }
            }
            // Retried next round; ingest keeps working on the partitions made
            // ahead, which is why they are made days ahead.
            Err(err) => tracing::error!(error = %err, "event partition upkeep failed"),
        }
        // Idempotency keys past their day: retried next round on failure.
        match slaproof_app::idempotency::expire_keys(&db).await {
            Ok(0) => {}
            Ok(deleted) => tracing::info!(deleted, "expired idempotency keys deleted"),
            Err(err) => tracing::error!(error = %err, "deleting expired idempotency keys failed"),
        }
        // Old evaluations thinned: retried next round on failure.
        match slaproof_evaluator::thinning::thin_all(&db, chrono::Utc::now(), evaluations_full_days)
            .await
        {
            Ok(done) if done.evaluations + done.composites > 0 => tracing::info!(
                evaluations = done.evaluations,
                composites = done.composites,
                "old evaluations thinned"
            ),
            Ok(_) => {}
            Err(err) => tracing::error!(error = %err, "thinning old evaluations failed"),
        }
        // Webhook attempts past retention: retried next round on failure.
        match slaproof_app::webhooks::expire_attempts(&db, attempts_retention_days).await {
            Ok(done) if done.attempts + done.deliveries > 0 => tracing::info!(
                attempts = done.attempts,
                deliveries = done.deliveries,
                "old webhook attempts deleted"
            ),
            Ok(_) => {}
            Err(err) => tracing::error!(error = %err, "deleting old webhook attempts failed"),
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
    }
}
