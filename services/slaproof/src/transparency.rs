//! The transparency log builder, run by the housekeeping service: every
//! `transparency.interval_secs` it appends each tenant's days that are past
//! their grace. Replicas may run it side by side: a tenant's log is built
//! under its row lock, by whichever replica takes it.

use std::time::Duration;

use slaproof_app::App;
use slaproof_app::transparency::TransparencySettings;
use tokio_util::sync::CancellationToken;

/// Runs one round at start, then one every interval, until cancelled.
pub(crate) async fn run(app: App, settings: TransparencySettings, shutdown: CancellationToken) {
    let interval = Duration::from_secs(settings.interval_secs);
    loop {
        match app
            .build_transparency_logs(&settings, chrono::Utc::now())
            .await
        {
            Ok(built) if !built.is_empty() => {
                tracing::info!(days = built.len(), "transparency log days built")
            }
            Ok(_) => {}
            // Retried next round: a day is built whole or not at all.
            Err(err) => tracing::error!(error = %err, "building transparency logs failed"),
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
    }
}
