//! Attestations: each frozen period result's vector, proof and anchor, and
//! the `attest` jobs that carry them forward (pending → proven → anchored).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use slaproof_domain::anchoring::AnchorPath;
use slaproof_domain::ids::SlaId;
use slaproof_domain::period_vector::PeriodVector;

use crate::jobs::{self, NewJob};
use crate::{StoreError, TenantTx};

/// The kind of the attestation worker's job: one per attestation, payload
/// `{"attestation": id}`, deduplicated by it.
pub const ATTEST: &str = "attest";

/// An attest job's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttestRequest {
    pub attestation: uuid::Uuid,
}

/// What the evaluator asks to attest when it freezes a result.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAttestation {
    pub sla: SlaId,
    pub version: i32,
    pub objective: String,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub revision: i32,
    /// The vector to prove, or why there is none.
    pub vector: Result<PeriodVector, String>,
    /// Where the proof is to be anchored (the SLA version's choice).
    pub anchor_path: AnchorPath,
}

/// Records an attestation of a frozen result in `tx` and, when it is
/// provable, asks the attestation worker for it. Answers its id, and
/// `None` when the result already had one (a close run twice).
pub async fn request(
    tx: &mut TenantTx,
    new: &NewAttestation,
) -> Result<Option<uuid::Uuid>, StoreError> {
    let (status, vector, reason) = match &new.vector {
        Ok(v) => (
            "pending",
            Some(serde_json::to_value(v).expect("a vector serialises")),
            None,
        ),
        Err(why) => ("not_provable", None, Some(why.as_str())),
    };
    let id: Option<uuid::Uuid> = sqlx::query_scalar(
        "INSERT INTO attestations (tenant_id, id, sla_id, version, objective, period_start, period_end, \
             revision, status, reason, vector, anchor_path) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT ON CONSTRAINT attestations_once DO NOTHING RETURNING id",
    )
    .bind(tx.tenant().uuid())
    .bind(uuid::Uuid::now_v7())
    .bind(new.sla.uuid())
    .bind(new.version)
    .bind(&new.objective)
    .bind(new.period_start)
    .bind(new.period_end)
    .bind(new.revision)
    .bind(status)
    .bind(reason)
    .bind(vector)
    .bind(new.anchor_path.as_str())
    .fetch_optional(&mut **tx)
    .await?;
    if let (Some(id), Ok(_)) = (id, &new.vector) {
        enqueue(tx, id).await?;
    }
    Ok(id)
}

/// Asks the worker to carry attestation `id` forward (again).
pub async fn enqueue(tx: &mut TenantTx, id: uuid::Uuid) -> Result<(), StoreError> {
    jobs::enqueue(
        tx,
        &NewJob {
            kind: ATTEST.to_owned(),
            payload: serde_json::to_value(AttestRequest { attestation: id })
                .expect("a request serialises"),
            dedup_key: Some(id.to_string()),
            run_at: Utc::now(),
        },
    )
    .await?;
    Ok(())
}

/// An attestation as stored.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Attestation {
    #[schema(value_type = String)]
    pub id: uuid::Uuid,
    /// The SLA (its name is in the path that listed it).
    #[serde(skip)]
    pub sla_id: uuid::Uuid,
    pub version: i32,
    pub objective: String,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    /// The revision of the period result it proves.
    pub revision: i32,
    /// `pending`, `proven`, `anchored` or `not_provable`.
    pub status: String,
    /// Why it is not provable, or the last failed attempt's error.
    pub reason: Option<String>,
    /// The vector proven (field, unit, threshold, committed values, the
    /// proven fraction and the days' counts).
    #[schema(value_type = Option<Object>)]
    pub vector: Option<serde_json::Value>,
    pub slots: Option<i32>,
    /// The context hash and the commitment, decimal field elements.
    pub context: Option<String>,
    pub commitment: Option<String>,
    /// The proven fraction, parts per million.
    pub quota_ppm: Option<i32>,
    pub vk_sha256: Option<String>,
    #[serde(skip)]
    pub proof: Option<Vec<u8>>,
    pub proof_sha256: Option<String>,
    /// keccak-256 of the ABI-encoded statement, `0x…`.
    pub statement_id: Option<String>,
    pub proven_at: Option<DateTime<Utc>>,
    #[serde(skip)]
    pub anchor_from_block: Option<i64>,
    /// Where it is (to be) anchored: `hash-only`, `verified` or `batched`.
    pub anchor_path: String,
    /// The batch it is anchored in (batched path), once it has joined one.
    #[schema(value_type = Option<String>)]
    pub batch_id: Option<uuid::Uuid>,
    /// Path, chain id, EAS address, attestation UID, transaction and block
    /// (and for a batch: its root, epoch and the inclusion proof).
    #[schema(value_type = Option<Object>)]
    pub anchor: Option<serde_json::Value>,
    pub anchored_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// The circuit that proved it: `threshold` (a vector committed at the
    /// close) or `daily` (the period's daily commitments, anchored as it
    /// went, listed in `days`).
    pub circuit: String,
    /// For the daily circuit: each day's label, commitment and anchor.
    #[schema(value_type = Option<Object>)]
    pub days: Option<serde_json::Value>,
    /// Who set up the key it was proven with: `development` (one party's
    /// setup: whoever ran it can forge a proof) or `ceremony` (several
    /// parties': sound if one contributor of each phase was honest). Before it is proven, and for
    /// proofs made before this was recorded: `development`.
    pub key_setup: String,
}

pub(crate) const COLUMNS: &str = "id, sla_id, version, objective, period_start, period_end, revision, \
    status, reason, vector, slots, context, commitment, quota_ppm, vk_sha256, proof, proof_sha256, \
    statement_id, proven_at, anchor_from_block, anchor_path, batch_id, anchor, anchored_at, created_at, \
    circuit, days, key_setup";

/// The attestation `id` of the transaction's tenant.
pub async fn get(tx: &mut TenantTx, id: uuid::Uuid) -> Result<Option<Attestation>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attestations WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tx.tenant().uuid())
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?)
}

/// [`get`], locked for the transaction: the worker holding its job is
/// the only writer, but a second replica must wait rather than race.
pub async fn lock(tx: &mut TenantTx, id: uuid::Uuid) -> Result<Option<Attestation>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attestations WHERE tenant_id = $1 AND id = $2 FOR UPDATE"
    ))
    .bind(tx.tenant().uuid())
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?)
}

/// An SLA's attestations, newest period first, each objective's revisions
/// newest first; of one period only when `period_start` is given.
pub async fn list(
    tx: &mut TenantTx,
    sla: SlaId,
    period_start: Option<DateTime<Utc>>,
) -> Result<Vec<Attestation>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attestations WHERE tenant_id = $1 AND sla_id = $2 \
           AND ($3::timestamptz IS NULL OR period_start = $3) \
         ORDER BY period_start DESC, objective, revision DESC"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(period_start)
    .fetch_all(&mut **tx)
    .await?)
}

/// The key a page of [`page`] continues after: the last row's period,
/// objective and revision, in the list's order.
pub fn page_key(a: &Attestation) -> String {
    serde_json::json!([a.period_start, a.objective, a.revision]).to_string()
}

/// A page of an SLA's attestations in [`list`]'s order (newest period
/// first, then objective, newest revision first), after `keyset.after` (a
/// [`page_key`]); only those of `versions` when given (what a customer's
/// user may read).
pub async fn page(
    tx: &mut TenantTx,
    sla: SlaId,
    period_start: Option<DateTime<Utc>>,
    versions: Option<&[i32]>,
    keyset: &crate::Keyset,
) -> Result<Vec<Attestation>, StoreError> {
    let after: Option<(DateTime<Utc>, String, i32)> = match &keyset.after {
        None => None,
        Some(key) => Some(
            serde_json::from_str(key).map_err(|_| StoreError::InvalidQuery {
                field: "cursor",
                reason: "is not a cursor this API gave".into(),
            })?,
        ),
    };
    let (after_start, after_objective, after_revision) = match after {
        Some((s, o, r)) => (Some(s), Some(o), Some(r)),
        None => (None, None, None),
    };
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM attestations WHERE tenant_id = $1 AND sla_id = $2 \
           AND ($3::timestamptz IS NULL OR period_start = $3) \
           AND ($4::int[] IS NULL OR version = ANY($4)) \
           AND ($5::timestamptz IS NULL OR period_start < $5 \
                OR (period_start = $5 AND (objective > $6 OR (objective = $6 AND revision < $7)))) \
         ORDER BY period_start DESC, objective, revision DESC LIMIT $8"
    ))
    .bind(tx.tenant().uuid())
    .bind(sla.uuid())
    .bind(period_start)
    .bind(versions)
    .bind(after_start)
    .bind(after_objective)
    .bind(after_revision)
    .bind(keyset.fetch())
    .fetch_all(&mut **tx)
    .await?)
}

/// A proof made for a pending attestation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proven {
    pub slots: i32,
    pub context: String,
    pub commitment: String,
    pub quota_ppm: i32,
    pub vk_sha256: String,
    pub proof: Vec<u8>,
    pub proof_sha256: String,
    pub statement_id: String,
    /// `threshold` or `daily`.
    pub circuit: String,
    /// The daily commitments opened, with their anchors (daily circuit).
    pub days: Option<serde_json::Value>,
    /// `development` or `ceremony`.
    pub key_setup: String,
}

/// Records the proof of a pending attestation; `false` when it was not
/// pending any more.
pub async fn record_proof(
    tx: &mut TenantTx,
    id: uuid::Uuid,
    p: &Proven,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE attestations SET status = 'proven', reason = NULL, slots = $3, context = $4, \
             commitment = $5, quota_ppm = $6, vk_sha256 = $7, proof = $8, proof_sha256 = $9, \
             statement_id = $10, circuit = $11, days = $12, key_setup = $13, proven_at = now() \
         WHERE tenant_id = $1 AND id = $2 AND status = 'pending'",
    )
    .bind(tx.tenant().uuid())
    .bind(id)
    .bind(p.slots)
    .bind(&p.context)
    .bind(&p.commitment)
    .bind(p.quota_ppm)
    .bind(&p.vk_sha256)
    .bind(&p.proof)
    .bind(&p.proof_sha256)
    .bind(&p.statement_id)
    .bind(&p.circuit)
    .bind(&p.days)
    .bind(&p.key_setup)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(done == 1)
}

/// Notes the block a first send starts from (kept once set).
pub async fn note_anchor_from(
    tx: &mut TenantTx,
    id: uuid::Uuid,
    block: u64,
) -> Result<(), StoreError> {
    note_anchor_from_in(tx, "attestations", id, block).await
}

/// [`note_anchor_from`] for a row of `table` (attestations, or their
/// batches): the block is kept once set.
pub(crate) async fn note_anchor_from_in(
    tx: &mut TenantTx,
    table: &'static str,
    id: uuid::Uuid,
    block: u64,
) -> Result<(), StoreError> {
    sqlx::query(&format!(
        "UPDATE {table} SET anchor_from_block = coalesce(anchor_from_block, $3) \
         WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tx.tenant().uuid())
    .bind(id)
    .bind(i64::try_from(block).unwrap_or(i64::MAX))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Records where a proven attestation is anchored, with the auditor's
/// bundle; `false` when it was not
/// proven (already anchored by another run).
pub async fn record_anchor(
    tx: &mut TenantTx,
    id: uuid::Uuid,
    anchor: &serde_json::Value,
    bundle: &serde_json::Value,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE attestations SET status = 'anchored', reason = NULL, anchor = $3, bundle = $4, \
             anchored_at = now() \
         WHERE tenant_id = $1 AND id = $2 AND status = 'proven'",
    )
    .bind(tx.tenant().uuid())
    .bind(id)
    .bind(anchor)
    .bind(bundle)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(done == 1)
}

/// Keeps the error of a failed attempt with the attestation, for whoever
/// reads it (the job keeps it too, for the operator).
pub async fn record_error(
    tx: &mut TenantTx,
    id: uuid::Uuid,
    error: &str,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE attestations SET reason = $3 WHERE tenant_id = $1 AND id = $2 \
           AND status IN ('pending', 'proven')",
    )
    .bind(tx.tenant().uuid())
    .bind(id)
    .bind(jobs::error_text(error))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The auditor's bundle of an anchored attestation (file name → content).
pub async fn bundle(
    tx: &mut TenantTx,
    id: uuid::Uuid,
) -> Result<Option<serde_json::Value>, StoreError> {
    Ok(sqlx::query_scalar::<_, Option<serde_json::Value>>(
        "SELECT bundle FROM attestations WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tx.tenant().uuid())
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?
    .flatten())
}
