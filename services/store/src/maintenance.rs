//! Maintenance windows, their acceptances by customers, and the time they
//! exclude from an SLA's measurement (judged by
//! `slaproof_domain::maintenance::judge`).

use chrono::{DateTime, Utc};
use slaproof_domain::ids::{CustomerId, MaintenanceWindowId, SlaId};
use slaproof_domain::maintenance::{Announced, Standing, judge, judged_span};
use slaproof_domain::sla::SlaDefinition;
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
    /// When it was announced: what its notice is judged from.
    pub created_at: DateTime<Utc>,
    /// Who announced it (the caller's subject).
    pub created_by: String,
    pub cancelled_at: Option<DateTime<Utc>>,
    pub cancelled_by: Option<String>,
}

/// A window to record.
#[derive(Debug, Clone)]
pub struct Announcement<'a> {
    /// `None`: every SLA of the tenant.
    pub sla: Option<SlaId>,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub description: &'a str,
    /// Who announces it: the caller's subject.
    pub by: &'a str,
    /// When: `None` for now (the database clock as it is recorded), which
    /// is what the application records; only imported history (and tests)
    /// name another instant. Either way the evaluator sees the window as
    /// changed now ([`settled`]).
    pub at: Option<DateTime<Utc>>,
}

/// A customer's acceptance of a window for one of its SLAs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Acceptance {
    pub sla: SlaId,
    pub accepted_at: DateTime<Utc>,
    /// The subject of the customer's user who accepted.
    pub accepted_by: String,
}

/// A window as it stands for one SLA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgedWindow {
    pub window: StoredMaintenanceWindow,
    /// The SLA's customer's acceptance, if given.
    pub acceptance: Option<Acceptance>,
    pub standing: Standing,
    /// What the SLA's measurement leaves out on its account.
    pub excluded: Vec<Period>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: uuid::Uuid,
    sla_id: Option<uuid::Uuid>,
    starts_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    description: String,
    created_at: DateTime<Utc>,
    created_by: String,
    cancelled_at: Option<DateTime<Utc>>,
    cancelled_by: Option<String>,
}

impl From<Row> for StoredMaintenanceWindow {
    fn from(r: Row) -> Self {
        StoredMaintenanceWindow {
            id: MaintenanceWindowId::from_uuid(r.id),
            sla: r.sla_id.map(SlaId::from_uuid),
            starts_at: r.starts_at,
            ends_at: r.ends_at,
            description: r.description,
            created_at: r.created_at,
            created_by: r.created_by,
            cancelled_at: r.cancelled_at,
            cancelled_by: r.cancelled_by,
        }
    }
}

const COLUMNS: &str = "id, sla_id, starts_at, ends_at, description, created_at, created_by, \
                       cancelled_at, cancelled_by";

/// Records a maintenance window, for one SLA or (with `None`) all of them.
#[tracing::instrument(skip(tx))]
pub async fn create(
    tx: &mut TenantTx,
    new: &Announcement<'_>,
) -> Result<StoredMaintenanceWindow, StoreError> {
    let changed = change_stamp(tx).await?;
    let row: Row = sqlx::query_as(&format!(
        "INSERT INTO maintenance_windows \
             (tenant_id, id, sla_id, starts_at, ends_at, description, created_by, created_at, changed_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING {COLUMNS}"
    ))
    .bind(tx.tenant().uuid())
    .bind(MaintenanceWindowId::new().uuid())
    .bind(new.sla.map(|s| s.uuid()))
    .bind(new.starts_at)
    .bind(new.ends_at)
    .bind(new.description)
    .bind(new.by)
    .bind(new.at.unwrap_or(changed))
    .bind(changed)
    .fetch_one(&mut **tx)
    .await?;
    Ok(row.into())
}

/// Stamps a change to the tenant's windows: takes the tenant's
/// maintenance lock, shared, until the transaction ends, and answers the
/// database clock after it. A reader that [`settled`] before this either
/// waited for the change to commit or answered an earlier instant.
async fn change_stamp(tx: &mut TenantTx) -> Result<DateTime<Utc>, StoreError> {
    Ok(sqlx::query_scalar("SELECT slaproof_maintenance_change($1)")
        .bind(tx.tenant().uuid())
        .fetch_one(&mut **tx)
        .await?)
}

/// The instant up to which every maintenance change of the tenant is
/// visible to the caller's next statements: waits for the changes in
/// flight to commit (an instant's exclusive hold of the lock
/// [`change_stamp`] shares), and answers the database clock then. Every
/// later change is stamped (`changed_at`) after it. The evaluator records
/// it as when it judged a day or a period, and judges it again when a
/// window over it has a later stamp: a change committed while a round
/// read is never missed, whatever the writer's transaction began.
#[tracing::instrument(skip(tx))]
pub async fn settled(tx: &mut TenantTx) -> Result<DateTime<Utc>, StoreError> {
    Ok(
        sqlx::query_scalar("SELECT slaproof_maintenance_settled($1)")
            .bind(tx.tenant().uuid())
            .fetch_one(&mut **tx)
            .await?,
    )
}

/// One window, cancelled or not.
pub async fn find(
    tx: &mut TenantTx,
    id: MaintenanceWindowId,
) -> Result<StoredMaintenanceWindow, StoreError> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM maintenance_windows WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .fetch_optional(&mut **tx)
    .await?;
    row.map(Into::into)
        .ok_or_else(|| StoreError::not_found("maintenance window", id))
}

/// The windows not cancelled that overlap `[from, to)` for an SLA (its own
/// and the tenant-wide ones), each judged for it under `definition`'s
/// maintenance policy (notice, cap per period, acceptance), by start.
#[tracing::instrument(skip(tx, definition))]
pub async fn judged(
    tx: &mut TenantTx,
    sla: SlaId,
    definition: &SlaDefinition,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<JudgedWindow>, StoreError> {
    #[derive(sqlx::FromRow)]
    struct Judging {
        #[sqlx(flatten)]
        window: Row,
        accepted_at: Option<DateTime<Utc>>,
        accepted_by: Option<String>,
    }
    let policy = &definition.policy.maintenance;
    // Under a cap, a window's share depends on the others in its periods.
    let span = judged_span(policy, &definition.window, from, to);
    let rows: Vec<Judging> = sqlx::query_as(
        "SELECT m.id, m.sla_id, m.starts_at, m.ends_at, m.description, m.created_at, m.created_by, \
                m.cancelled_at, m.cancelled_by, a.accepted_at, a.accepted_by \
         FROM maintenance_windows m \
         LEFT JOIN maintenance_acceptances a \
             ON a.tenant_id = m.tenant_id AND a.window_id = m.id AND a.sla_id = $2 \
            AND a.customer_id IS NOT DISTINCT FROM \
                (SELECT c.id FROM customers c WHERE c.tenant_id = $1 AND c.external_ref = $5) \
         WHERE m.tenant_id = $1 AND (m.sla_id = $2 OR m.sla_id IS NULL) AND m.cancelled_at IS NULL \
           AND m.starts_at < $4 AND m.ends_at > $3 ORDER BY m.created_at, m.id",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(span.start)
    .bind(span.end)
    // Only the acceptances of the customer `definition` is for count: an
    // SLA moved to another customer does not inherit what the first one
    // agreed to. A version naming no customer (or one not on file) counts
    // those recorded without one.
    .bind(definition.customer.as_deref())
    .fetch_all(&mut **tx)
    .await?;
    let windows: Vec<(StoredMaintenanceWindow, Option<Acceptance>)> = rows
        .into_iter()
        .map(|r| {
            let acceptance = match (r.accepted_at, r.accepted_by) {
                (Some(accepted_at), Some(accepted_by)) => Some(Acceptance {
                    sla,
                    accepted_at,
                    accepted_by,
                }),
                _ => None,
            };
            (StoredMaintenanceWindow::from(r.window), acceptance)
        })
        .collect();
    let announced: Vec<Announced<usize>> = windows
        .iter()
        .enumerate()
        .map(|(i, (w, acceptance))| Announced {
            key: i,
            period: Period {
                start: w.starts_at,
                end: w.ends_at,
            },
            announced_at: w.created_at,
            accepted: acceptance.is_some(),
            cancelled: w.cancelled_at.is_some(),
        })
        .collect();
    let judgements = judge(&announced, policy, &definition.window);
    let mut out: Vec<JudgedWindow> = windows
        .into_iter()
        .zip(judgements)
        .filter(|((w, _), _)| w.starts_at < to && w.ends_at > from)
        .map(|((window, acceptance), j)| JudgedWindow {
            window,
            acceptance,
            standing: j.standing,
            excluded: j.excluded,
        })
        .collect();
    out.sort_by_key(|j| (j.window.starts_at, j.window.id));
    Ok(out)
}

/// The time an SLA's measurement leaves out within `[from, to)` (pieces
/// may reach past it): the excluded parts of its windows and the
/// tenant-wide ones, judged under `definition`'s maintenance policy (see
/// [`judged`]), merged into disjoint, sorted periods. What the evaluator
/// leaves out and the dashboard marks.
#[tracing::instrument(skip(tx, definition))]
pub async fn periods(
    tx: &mut TenantTx,
    sla: SlaId,
    definition: &SlaDefinition,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<Period>, StoreError> {
    let judged = judged(tx, sla, definition, from, to).await?;
    Ok(merge_periods(
        judged
            .iter()
            .flat_map(|j| j.excluded.iter().copied())
            .collect(),
    ))
}

/// Cancels a window, recording who did; the row stays so past
/// evaluations stay explainable. Cancelling again changes nothing.
#[tracing::instrument(skip(tx))]
pub async fn cancel(
    tx: &mut TenantTx,
    id: MaintenanceWindowId,
    by: &str,
) -> Result<StoredMaintenanceWindow, StoreError> {
    let changed = change_stamp(tx).await?;
    let row: Option<Row> = sqlx::query_as(&format!(
        "UPDATE maintenance_windows SET cancelled_at = coalesce(cancelled_at, $4), \
             cancelled_by = CASE WHEN cancelled_at IS NULL THEN $3 ELSE cancelled_by END, \
             changed_at = CASE WHEN cancelled_at IS NULL THEN $4 ELSE changed_at END \
         WHERE tenant_id = $1 AND id = $2 RETURNING {COLUMNS}"
    ))
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(by)
    // Bound, not now(): Citus refuses now() inside COALESCE in an UPDATE.
    .bind(changed)
    .fetch_optional(&mut **tx)
    .await?;
    row.map(Into::into)
        .ok_or_else(|| StoreError::not_found("maintenance window", id))
}

/// Records that `customer`, whose SLA `sla` is, accepted the window `id`
/// for it (`by`: the subject of its user), and when on the window, so
/// that the evaluator judges the periods it covers again. The acceptance
/// counts for the periods judged under a version of `sla` for `customer`
/// only. `None` only for an SLA without a customer (imported history,
/// tests): the API always names the customer that accepts. Accepting
/// again keeps the first acceptance.
#[tracing::instrument(skip(tx))]
pub async fn accept(
    tx: &mut TenantTx,
    id: MaintenanceWindowId,
    sla: SlaId,
    customer: Option<CustomerId>,
    by: &str,
) -> Result<Acceptance, StoreError> {
    let changed = change_stamp(tx).await?;
    let inserted: Option<DateTime<Utc>> = sqlx::query_scalar(
        "INSERT INTO maintenance_acceptances (tenant_id, window_id, sla_id, customer_id, accepted_by, accepted_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING accepted_at",
    )
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(sla.uuid())
    .bind(customer.map(|c| c.uuid()))
    .bind(by)
    .bind(changed)
    .fetch_optional(&mut **tx)
    .await?;
    if let Some(at) = inserted {
        sqlx::query(
            "UPDATE maintenance_windows SET accepted_at = $3, changed_at = $3 \
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tx.tenant().uuid())
        .bind(id.uuid())
        .bind(at)
        .execute(&mut **tx)
        .await?;
    }
    let (accepted_at, accepted_by): (DateTime<Utc>, String) = sqlx::query_as(
        "SELECT accepted_at, accepted_by FROM maintenance_acceptances \
         WHERE tenant_id = $1 AND window_id = $2 AND sla_id = $3 \
           AND customer_id IS NOT DISTINCT FROM $4",
    )
    .bind(tx.tenant().uuid())
    .bind(id.uuid())
    .bind(sla.uuid())
    .bind(customer.map(|c| c.uuid()))
    .fetch_one(&mut **tx)
    .await?;
    Ok(Acceptance {
        sla,
        accepted_at,
        accepted_by,
    })
}

/// A change to what excludes maintenance from an SLA's period: a window
/// announced, cancelled, or accepted by the customer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub window: MaintenanceWindowId,
    /// `announced`, `cancelled` or `accepted`.
    pub change: &'static str,
    pub at: DateTime<Utc>,
    /// Who made it (a subject).
    pub by: String,
}

/// The changes since `since` to the windows of `sla` (its own and the
/// tenant-wide ones) overlapping `period`, oldest first: what a correction
/// of the period's result names as its cause.
#[tracing::instrument(skip(tx))]
pub async fn changes_since(
    tx: &mut TenantTx,
    sla: SlaId,
    period: Period,
    since: DateTime<Utc>,
) -> Result<Vec<Change>, StoreError> {
    let rows: Vec<(uuid::Uuid, String, DateTime<Utc>, String)> = sqlx::query_as(
        "SELECT id, change, at, by FROM ( \
             SELECT m.id, 'announced' AS change, m.created_at AS at, m.created_by AS by \
             FROM maintenance_windows m \
             WHERE m.tenant_id = $1 AND (m.sla_id = $2 OR m.sla_id IS NULL) \
               AND m.starts_at < $4 AND m.ends_at > $3 AND m.created_at > $5 \
             UNION ALL \
             SELECT m.id, 'cancelled', m.cancelled_at, m.cancelled_by \
             FROM maintenance_windows m \
             WHERE m.tenant_id = $1 AND (m.sla_id = $2 OR m.sla_id IS NULL) \
               AND m.starts_at < $4 AND m.ends_at > $3 AND m.cancelled_at > $5 \
             UNION ALL \
             SELECT m.id, 'accepted', a.accepted_at, a.accepted_by \
             FROM maintenance_windows m \
             JOIN maintenance_acceptances a \
                 ON a.tenant_id = m.tenant_id AND a.window_id = m.id AND a.sla_id = $2 \
             WHERE m.tenant_id = $1 AND m.starts_at < $4 AND m.ends_at > $3 AND a.accepted_at > $5 \
         ) c ORDER BY at, id",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(period.start)
    .bind(period.end)
    .bind(since)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, change, at, by)| Change {
            window: MaintenanceWindowId::from_uuid(id),
            change: match change.as_str() {
                "announced" => "announced",
                "cancelled" => "cancelled",
                _ => "accepted",
            },
            at,
            by,
        })
        .collect())
}
