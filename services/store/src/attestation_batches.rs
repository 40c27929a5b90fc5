//! Batches of the batched anchoring path: a tenant's proven statements of one
//! epoch, gathered while the epoch runs, sealed under a Merkle root once it
//! has ended, and anchored with one attestation (open → sealed → anchored).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::attestations::Attestation;
use crate::{StoreError, TenantTx};

/// A batch as stored.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct Batch {
    pub id: uuid::Uuid,
    pub epoch_start: DateTime<Utc>,
    pub epoch_end: DateTime<Utc>,
    /// `open`, `sealed` or `anchored`.
    pub status: String,
    /// The members' statement ids in leaf order, once sealed.
    pub statement_ids: Option<serde_json::Value>,
    pub root: Option<String>,
    pub anchor_from_block: Option<i64>,
    pub anchor: Option<serde_json::Value>,
    pub anchored_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "id, epoch_start, epoch_end, status, statement_ids, root, anchor_from_block, \
    anchor, anchored_at";

/// The epoch of length `epoch` holding `at`: epochs are aligned to the Unix
/// epoch, so every replica cuts time the same way.
pub fn epoch_of(at: DateTime<Utc>, epoch: Duration) -> (DateTime<Utc>, DateTime<Utc>) {
    let len = i64::try_from(epoch.as_secs().max(1)).unwrap_or(i64::MAX);
    let start = at.timestamp().div_euclid(len) * len;
    let from = DateTime::from_timestamp(start, 0).unwrap_or(at);
    (from, from + chrono::Duration::seconds(len))
}

/// Puts proven attestation `attestation` into the open batch of the epoch
/// holding `now` (made if there is none), or of a later epoch should that one
/// be sealed already (a replica whose clock runs ahead sealed it). Keeps the
/// batch it already has. Answers the batch.
pub async fn join(
    tx: &mut TenantTx,
    attestation: uuid::Uuid,
    epoch: Duration,
    now: DateTime<Utc>,
) -> Result<Batch, StoreError> {
    let tenant = tx.tenant().uuid();
    let current: Option<uuid::Uuid> = sqlx::query_scalar(
        // Not locked: rows are locked batch first, then attestation, here
        // as where a batch is anchored, so that the two cannot deadlock.
        "SELECT batch_id FROM attestations WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant)
    .bind(attestation)
    .fetch_optional(&mut **tx)
    .await?
    .flatten();
    if let Some(batch) = current {
        return lock(tx, batch).await?.ok_or_else(|| StoreError::NotFound {
            what: "attestation batch",
            key: batch.to_string(),
        });
    }
    let mut at = now;
    loop {
        let (start, end) = epoch_of(at, epoch);
        sqlx::query(
            "INSERT INTO attestation_batches (tenant_id, id, epoch_start, epoch_end, status) \
             VALUES ($1, $2, $3, $4, 'open') ON CONFLICT ON CONSTRAINT attestation_batches_once DO NOTHING",
        )
        .bind(tenant)
        .bind(uuid::Uuid::now_v7())
        .bind(start)
        .bind(end)
        .execute(&mut **tx)
        .await?;
        // Locked, so that a sealing replica either sees this member or has
        // sealed before it looks (and this one moves to the next epoch).
        let batch: Batch = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM attestation_batches WHERE tenant_id = $1 AND epoch_start = $2 FOR UPDATE"
        ))
        .bind(tenant)
        .bind(start)
        .fetch_one(&mut **tx)
        .await?;
        if batch.status == "open" {
            sqlx::query("UPDATE attestations SET batch_id = $3 WHERE tenant_id = $1 AND id = $2")
                .bind(tenant)
                .bind(attestation)
                .bind(batch.id)
                .execute(&mut **tx)
                .await?;
            return Ok(batch);
        }
        at = batch.epoch_end;
    }
}

/// Batch `id`, locked for the transaction.
pub async fn lock(tx: &mut TenantTx, id: uuid::Uuid) -> Result<Option<Batch>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attestation_batches WHERE tenant_id = $1 AND id = $2 FOR UPDATE"
    ))
    .bind(tx.tenant().uuid())
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?)
}

/// The attestations in batch `id`, by statement id.
pub async fn members(tx: &mut TenantTx, id: uuid::Uuid) -> Result<Vec<Attestation>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {} FROM attestations WHERE tenant_id = $1 AND batch_id = $2 ORDER BY statement_id",
        crate::attestations::COLUMNS
    ))
    .bind(tx.tenant().uuid())
    .bind(id)
    .fetch_all(&mut **tx)
    .await?)
}

/// Seals open batch `id` with its members' statement ids (leaf order) and
/// their root; `false` when it was not open.
pub async fn seal(
    tx: &mut TenantTx,
    id: uuid::Uuid,
    statement_ids: &[String],
    root: &str,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE attestation_batches SET status = 'sealed', statement_ids = $3, root = $4 \
         WHERE tenant_id = $1 AND id = $2 AND status = 'open'",
    )
    .bind(tx.tenant().uuid())
    .bind(id)
    .bind(serde_json::json!(statement_ids))
    .bind(root)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(done == 1)
}

/// Notes the block a batch's first send starts from (kept once set).
pub async fn note_anchor_from(
    tx: &mut TenantTx,
    id: uuid::Uuid,
    block: u64,
) -> Result<(), StoreError> {
    crate::attestations::note_anchor_from_in(tx, "attestation_batches", id, block).await
}

/// Records where sealed batch `id`'s root is anchored; `false` when it was
/// not sealed (anchored by another run).
pub async fn record_anchor(
    tx: &mut TenantTx,
    id: uuid::Uuid,
    anchor: &serde_json::Value,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE attestation_batches SET status = 'anchored', anchor = $3, anchored_at = now() \
         WHERE tenant_id = $1 AND id = $2 AND status = 'sealed'",
    )
    .bind(tx.tenant().uuid())
    .bind(id)
    .bind(anchor)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(done == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_are_aligned_and_hold_their_instant() {
        let at = DateTime::parse_from_rfc3339("2026-12-02T05:17:42Z")
            .unwrap()
            .to_utc();
        let (start, end) = epoch_of(at, Duration::from_secs(3600));
        assert_eq!(start.to_rfc3339(), "2026-12-02T05:00:00+00:00");
        assert_eq!(end.to_rfc3339(), "2026-12-02T06:00:00+00:00");
        let (start, end) = epoch_of(start, Duration::from_secs(3600));
        assert_eq!(
            (start.timestamp() % 3600, end - start),
            (0, chrono::Duration::hours(1))
        );
    }
}
