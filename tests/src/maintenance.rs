//! Maintenance windows as tests record them: planned (announced well ahead of their start), or announced at a chosen instant.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::ids::SlaId;
use slaproof_store::maintenance::{self, Announcement, StoredMaintenanceWindow};
use slaproof_store::{StoreError, TenantTx};

/// Records a window announced 30 days before it starts: planned under
/// any notice a test's SLA asks (the longest allowed is 90 days, the
/// default 72 hours).
pub async fn planned(
    tx: &mut TenantTx,
    sla: Option<SlaId>,
    starts_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    description: &str,
) -> Result<StoredMaintenanceWindow, StoreError> {
    let at = starts_at - Duration::days(30);
    announced(tx, sla, starts_at, ends_at, description, at).await
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
