//! Planned maintenance windows, excluded from every SLI they cover.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::{MaintenanceWindowId, SlaId};
use slaproof_domain::window::{Period, merge_periods};

use crate::{StoreError, TenantTx};

/// A maintenance window as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredMaintenanceWindow {
    pub id: MaintenanceWindowId,
    /// `None`: the window covers every SLA of the tenant.
    pub sla: Option<SlaId>,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub description: String,
    pub cancelled_at: Option<DateTime<Utc>>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: uuid::Uuid,
    sla_id: Option<uuid::Uuid>,
    starts_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    description: String,
    cancelled_at: Option<DateTime<Utc>>,
}

impl From<Row> for StoredMaintenanceWindow {
    fn from(r: Row) -> Self {
        StoredMaintenanceWindow {
            id: MaintenanceWindowId::from_uuid(r.id),
            sla: r.sla_id.map(SlaId::from_uuid),
            starts_at: r.starts_at,
            ends_at: r.ends_at,
            description: r.description,
            cancelled_at: r.cancelled_at,
        }
    }
}

const COLUMNS: &str = "id, sla_id, starts_at, ends_at, description, cancelled_at";

/// Records a maintenance window, for one SLA or (with `None`) all of them.
#[tracing::instrument(skip(tx))]
pub async fn create(
    tx: &mut TenantTx,
    sla: Option<SlaId>,
    starts_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    description: &str,
) -> Result<StoredMaintenanceWindow, StoreError> {
    let row: Row = sqlx::query_as(&format!(
        "INSERT INTO maintenance_windows (tenant_id, id, sla_id, starts_at, ends_at, description) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING {COLUMNS}"
    ))
    .bind(tx.tenant().uuid())
    .bind(MaintenanceWindowId::new().uuid())
    .bind(sla.map(|s| s.uuid()))
    .bind(starts_at)
    .bind(ends_at)
    .bind(description)
    .fetch_one(&mut **tx)
    .await?;
    Ok(row.into())
}

/// The windows not cancelled that overlap `[from, to)` for an SLA, including
/// the tenant-wide ones.
pub async fn overlapping(
    tx: &mut TenantTx,
    sla: SlaId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<StoredMaintenanceWindow>, StoreError> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM maintenance_windows \
         WHERE tenant_id = $1 AND (sla_id = $2 OR sla_id IS NULL) AND cancelled_at IS NULL \
           AND starts_at < $4 AND ends_at > $3 ORDER BY starts_at"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(from)
    .bind(to)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// The time under maintenance for an SLA within `[from, to)`: its windows
/// (and the tenant-wide ones) not cancelled, merged into disjoint, sorted
/// periods. What the evaluator leaves out and the dashboard marks.
#[tracing::instrument(skip(tx))]
pub async fn periods(
    tx: &mut TenantTx,
    sla: SlaId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<Period>, StoreError> {
    let windows = overlapping(tx, sla, from, to).await?;
    Ok(merge_periods(
        windows
            .into_iter()
            .map(|w| Period {
                start: w.starts_at,
                end: w.ends_at,
            })
            .collect(),
    ))
}

/// Cancels a window; the row stays so past evaluations stay explainable.
pub async fn cancel(
    tx: &mut TenantTx,
    id: MaintenanceWindowId,
) -> Result<StoredMaintenanceWindow, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "UPDATE maintenance_windows SET cancelled_at = coalesce(cancelled_at, now()) \
         WHERE tenant_id = $1 AND id = $2 RETURNING {COLUMNS}"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .fetch_optional(&mut **tx)
    .await?;
    row.map(Into::into)
        .ok_or_else(|| StoreError::not_found("maintenance window", id))
}
