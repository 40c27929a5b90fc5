//! What each SLA version's rollups cover: the events from `covers_from` on, and while a backfill runs, how far it has read the events received before the version was first seen.

use chrono::{DateTime, Utc};
use slaproof_domain::ids::SlaId;

use crate::{StoreError, TenantTx};

/// One version's coverage as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    pub sla: SlaId,
    pub version: i32,
    /// Its rollups count every event that occurred at or after this.
    pub covers_from: DateTime<Utc>,
    /// While a backfill runs: the events received before this are still
    /// being read, from `cursor` (occurred at, id) on.
    pub backfill_before: Option<DateTime<Utc>>,
    pub cursor: Option<(DateTime<Utc>, uuid::Uuid)>,
}

/// A version first seen: covered from `covers_from`, with a backfill of
/// the events received before `backfill_before` when set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewCoverage {
    pub sla: SlaId,
    pub version: i32,
    pub covers_from: DateTime<Utc>,
    pub backfill_before: Option<DateTime<Utc>>,
}

/// Every version's coverage of the tenant.
#[tracing::instrument(skip(tx))]
pub async fn all(tx: &mut TenantTx) -> Result<Vec<Coverage>, StoreError> {
    type Row = (
        uuid::Uuid,
        i32,
        DateTime<Utc>,
        Option<DateTime<Utc>>,
        Option<DateTime<Utc>>,
        Option<uuid::Uuid>,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT sla_id, version, covers_from, backfill_before, backfill_occurred_at, backfill_id \
         FROM evaluator_coverage WHERE tenant_id = $1",
    )
    .bind(tx.tenant().uuid())
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(sla, version, covers_from, before, occurred, id)| Coverage {
                sla: SlaId::from_uuid(sla),
                version,
                covers_from,
                backfill_before: before,
                cursor: occurred.zip(id),
            },
        )
        .collect())
}

/// Records the coverage of versions first seen, in one statement: a
/// provider's first round with thousands of customer SLAs records
/// thousands at once.
#[tracing::instrument(skip(tx, new), fields(versions = new.len()))]
pub async fn record_new(tx: &mut TenantTx, new: &[NewCoverage]) -> Result<(), StoreError> {
    if new.is_empty() {
        return Ok(());
    }
    let slas: Vec<uuid::Uuid> = new.iter().map(|c| c.sla.uuid()).collect();
    let versions: Vec<i32> = new.iter().map(|c| c.version).collect();
    let from: Vec<DateTime<Utc>> = new.iter().map(|c| c.covers_from).collect();
    let before: Vec<Option<DateTime<Utc>>> = new.iter().map(|c| c.backfill_before).collect();
    sqlx::query(
        "INSERT INTO evaluator_coverage (tenant_id, sla_id, version, covers_from, backfill_before) \
         SELECT $1, u.sla, u.version, u.covers_from, u.before \
         FROM unnest($2::uuid[], $3::int4[], $4::timestamptz[], $5::timestamptz[]) \
             AS u(sla, version, covers_from, before)",
    )
    .bind(tx.tenant().uuid())
    .bind(&slas)
    .bind(&versions)
    .bind(&from)
    .bind(&before)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Moves a version's backfill on to `cursor`, or ends it when `done`.
#[tracing::instrument(skip(tx))]
pub async fn move_backfill(
    tx: &mut TenantTx,
    sla: SlaId,
    version: i32,
    done: bool,
    cursor: Option<(DateTime<Utc>, uuid::Uuid)>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE evaluator_coverage SET backfill_before = CASE WHEN $4 THEN NULL ELSE backfill_before END, \
             backfill_occurred_at = $5, backfill_id = $6 \
         WHERE tenant_id = $1 AND sla_id = $2 AND version = $3",
    )
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(version)
    .bind(done)
    .bind(cursor.map(|c| c.0))
    .bind(cursor.map(|c| c.1))
    .execute(&mut **tx)
    .await?;
    Ok(())
}
