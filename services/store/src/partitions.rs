//! Daily partitions of the events table: created ahead, dropped after the
//! retention period. The DDL runs in SECURITY DEFINER functions of the
//! schema, since the service role owns no table.

use chrono::NaiveDate;

use crate::{Database, StoreError};

/// Creates the missing daily partitions for `[from, to]`; returns how many.
#[tracing::instrument(skip(db))]
pub async fn ensure(db: &Database, from: NaiveDate, to: NaiveDate) -> Result<i32, StoreError> {
    let mut tx = db.platform_tx().await?;
    let created: i32 = sqlx::query_scalar("SELECT slaproof_ensure_event_partitions($1, $2)")
        .bind(from)
        .bind(to)
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(created)
}

/// Drops the partitions holding only days before `before`; returns their
/// names.
#[tracing::instrument(skip(db))]
pub async fn drop_before(db: &Database, before: NaiveDate) -> Result<Vec<String>, StoreError> {
    let mut tx = db.platform_tx().await?;
    let dropped: Vec<String> =
        sqlx::query_scalar("SELECT * FROM slaproof_drop_event_partitions($1)")
            .bind(before)
            .fetch_all(&mut *tx)
            .await?;
    tx.commit().await?;
    Ok(dropped)
}

/// The days that have a partition, in order.
pub async fn days(db: &Database) -> Result<Vec<NaiveDate>, StoreError> {
    let mut tx = db.platform_tx().await?;
    let days: Vec<NaiveDate> = sqlx::query_scalar("SELECT * FROM slaproof_event_partition_days()")
        .fetch_all(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(days)
}

/// What one round of partition upkeep did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Upkeep {
    pub created: i32,
    pub dropped: Vec<String>,
}

/// One round of upkeep for `today`: partitions from yesterday (events that
/// arrive just after midnight) to `ahead_days` ahead exist, and none older
/// than `retention_days` remains.
pub async fn upkeep(
    db: &Database,
    today: NaiveDate,
    ahead_days: u32,
    retention_days: u32,
) -> Result<Upkeep, StoreError> {
    let created = ensure(
        db,
        today - chrono::Days::new(1),
        today + chrono::Days::new(u64::from(ahead_days)),
    )
    .await?;
    let dropped = drop_before(db, today - chrono::Days::new(u64::from(retention_days))).await?;
    Ok(Upkeep { created, dropped })
}
