//! Maintenance windows as tests record them: agreed (announced well ahead of their start and accepted by the SLA's customer), or announced at a chosen instant.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::ids::{MaintenanceWindowId, SlaId};
use slaproof_store::maintenance::{self, Announcement, StoredMaintenanceWindow};
use slaproof_store::{StoreError, TenantTx, customers, slas};

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
    customer_accepts(tx, window.id, sla).await?;
    Ok(window)
}

/// Records that the customer the SLA's version in force names accepted
/// the window `id` for it, putting that customer on file first when a
/// test's tenant does not have it; for an SLA without a customer, an
/// acceptance naming none (as imported history has them).
pub async fn customer_accepts(
    tx: &mut TenantTx,
    id: MaintenanceWindowId,
    sla: SlaId,
) -> Result<(), StoreError> {
    let name = slas::name_of(tx, sla).await?;
    let stored = slas::find(tx, &name, None).await?;
    let customer = match stored.definition.customer {
        None => None,
        Some(reference) => Some(match customers::find_by_ref(tx, &reference).await? {
            Some(c) => c.id,
            None => customers::create(tx, &reference, &reference).await?.id,
        }),
    };
    maintenance::accept(tx, id, sla, customer, "customer").await?;
    Ok(())
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
