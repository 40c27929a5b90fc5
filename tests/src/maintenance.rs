//! Maintenance windows as tests record them: agreed (announced well ahead of their start and accepted by the SLA's customer), or announced at a chosen instant.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::ids::SlaId;
use slaproof_store::maintenance::{self, Announcement, StoredMaintenanceWindow};
use slaproof_store::{StoreError, TenantTx};

/// Records a window of `sla` announced 30 days before it starts and
/// accepted by the SLA's customer: excluded whole, whatever the SLA's
/// schedule, notice (the longest allowed is 90 days) and cap.
pub async fn agreed(
    tx: &mut TenantTx,
    sla: SlaId,
    starts_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    description: &str,
) -> Result<StoredMaintenanceWindow, StoreError> {
    let at = starts_at - Duration::days(30);
    let window = announced(tx, Some(sla), starts_at, ends_at, description, at).await?;
    maintenance::accept(tx, window.id, sla, "customer").await?;
    Ok(window)
}

/// Records a window announced at `at` (by `test`).
pub async fn announced(
    tx: &mut TenantTx,
    sla: Option<SlaId>,
    starts_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    description: &str,
    at: DateTime<Utc>,
) -> Result<StoredMaintenanceWindow, StoreError> {
    maintenance::create(
        tx,
        &Announcement {
            sla,
            starts_at,
            ends_at,
            description,
            by: "test",
            at: Some(at),
        },
    )
    .await
}
