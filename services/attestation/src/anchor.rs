//! Anchoring a proven attestation on the path its SLA version asked for:
//! hash-only and verified with one attestation each, at once; batched with
//! its epoch's batch (see `batch`). Each path anchors once however often a
//! job is retried: the row (or batch) is locked from looking for an earlier
//! anchor to recording this one, and a retry after a send whose answer was
//! lost finds its own send rather than sending again.

use alloy::primitives::{B256, U256};
use alloy::providers::Provider;
use slaproof_chain::anchor::{PeriodAnchor, VerifiedAnchor};
use slaproof_chain::{Chain, attest, deploy};
use slaproof_circuits::export::solidity_proof;
use slaproof_circuits::{Circuit, SlaProof, Statement, StatementJson, VerifierKey};
use slaproof_store::attestation_batches;
use slaproof_store::attestations::{self, Attestation};
use slaproof_store::jobs::ClaimedJob;
use slaproof_store::{TenantTx, outbox};

use crate::bundle::{Anchor, ClaimRecord, StatementFile, anchored_statement, field_word, hex_word};
use crate::error::AttestationError;
use crate::worker::{Anchoring, Worker, complete, store};

/// What sends an anchor: an attestation of its own, or a batch.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sender {
    Attestation(uuid::Uuid),
    Batch(uuid::Uuid),
}

/// A proven attestation's parts, checked against each other and the keys
/// this worker holds before anything is sent: a proof made with keys the
/// worker does not hold must not be anchored without the files that let
/// anyone check it.
pub(crate) struct ProvenParts {
    pub verifier: VerifierKey,
    /// Who set the keys up, for the auditor's statement.
    pub provenance: slaproof_circuits::Provenance,
    pub statement: Statement,
    pub proof: SlaProof,
    pub anchored: slaproof_chain::anchor::Statement,
    pub statement_id: B256,
    pub vk_sha256: String,
    pub proof_sha256: String,
}

impl Worker {
    /// Anchors proven attestation `row` on its path; answers whether it is
    /// anchored now (a batched one waits for its epoch to end, its job
    /// handed back until then).
    pub(crate) async fn anchor(
        &self,
        job: &ClaimedJob,
        anchoring: &Anchoring,
        row: &Attestation,
        claim: &ClaimRecord,
    ) -> Result<bool, AttestationError> {
        let parts = self.proven_parts(row, claim)?;
        match row.anchor_path.as_str() {
            "hash-only" | "verified" => {
                self.anchor_one(job, anchoring, row, claim, &parts).await?;
                Ok(true)
            }
            "batched" => self.anchor_batched(job, anchoring, row).await,
            other => Err(AttestationError::Invalid(format!(
                "unknown anchoring path {other:?}"
            ))),
        }
    }

    /// The hash-only and verified paths: one attestation of the statement.
    async fn anchor_one(
        &self,
        job: &ClaimedJob,
        anchoring: &Anchoring,
        row: &Attestation,
        claim: &ClaimRecord,
        parts: &ProvenParts,
    ) -> Result<(), AttestationError> {
        let (chain, deployment) = (anchoring.chain.as_ref(), &anchoring.deployment);
        let verified = row.anchor_path == "verified";
        if verified
            && deploy::registered_verifier(chain, deployment, parts.anchored.vkHash)
                .await?
                .is_none()
        {
            return Err(AttestationError::NoVerifier {
                slots: parts.statement.slots(),
                vk_sha256: parts.vk_sha256.clone(),
            });
        }
        let from_block = self
            .anchor_from(
                chain,
                Sender::Attestation(row.id),
                row.anchor_from_block,
                job,
            )
            .await?;
        let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
        let locked = attestations::lock(&mut tx, row.id)
            .await
            .map_err(store)?
            .ok_or_else(|| AttestationError::Invalid(format!("no attestation {}", row.id)))?;
        if locked.status != "proven" {
            // Another worker anchored it while this one waited for the lock.
            complete(&mut tx, job).await?;
            tx.commit().await.map_err(store)?;
            return Ok(());
        }
        let proof_hash = hex_word(&parts.proof_sha256)?;
        let earlier = if verified {
            attest::find_verified(chain, deployment, parts.statement_id, from_block).await?
        } else {
            attest::find_period(chain, deployment, parts.statement_id, from_block).await?
        };
        let attested = match earlier {
            Some(earlier) => {
                tracing::info!(attestation = %row.id, uid = %earlier.uid, "found the statement already anchored by an earlier attempt");
                earlier
            }
            None if verified => {
                let anchor = VerifiedAnchor::new(
                    parts.anchored.clone(),
                    proof_hash,
                    solidity_words(&parts.proof)?,
                    parts
                        .statement
                        .public_inputs()
                        .map(|x| U256::from_be_bytes(field_word(x).0)),
                );
                attest::attest_verified(chain, deployment, &anchor).await?
            }
            None => {
                let anchor = PeriodAnchor::new(parts.anchored.clone(), proof_hash);
                attest::attest_period(chain, deployment, &anchor).await?
            }
        };
        let anchor = serde_json::json!({
            "path": row.anchor_path,
            "chainId": chain.chain_id(),
            "eas": deployment.eas.to_string(),
            "uid": attested.uid.to_string(),
            "transaction": attested.tx.to_string(),
            "block": attested.block,
        });
        let file_anchor = Anchor {
            path: row.anchor_path.clone(),
            chain_id: chain.chain_id(),
            eas: deployment.eas,
            uid: attested.uid,
            inclusion_proof: None,
        };
        record_anchored(&mut tx, row, claim, parts, anchor, file_anchor).await?;
        complete(&mut tx, job).await?;
        tx.commit().await.map_err(store)?;
        tracing::info!(attestation = %row.id, path = %row.anchor_path, uid = %attested.uid, block = attested.block, "anchored");
        Ok(())
    }

    /// The block a retry looks for an earlier anchor from: the one noted
    /// before the first send, or the chain's height now, noted and
    /// committed before anything is sent.
    pub(crate) async fn anchor_from(
        &self,
        chain: &Chain,
        sender: Sender,
        noted: Option<i64>,
        job: &ClaimedJob,
    ) -> Result<u64, AttestationError> {
        if let Some(block) = noted {
            return Ok(u64::try_from(block).unwrap_or(0));
        }
        let block = chain
            .patiently("reading the block height", || async move {
                chain.provider().get_block_number().await
            })
            .await?;
        let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
        match sender {
            Sender::Attestation(id) => attestations::note_anchor_from(&mut tx, id, block).await,
            Sender::Batch(id) => attestation_batches::note_anchor_from(&mut tx, id, block).await,
        }
        .map_err(store)?;
        tx.commit().await.map_err(store)?;
        Ok(block)
    }

    /// The verifying key, statement and proof of a proven attestation, with
    /// the key checked against the hash recorded with the proof and the
    /// statement id recomputed.
    pub(crate) fn proven_parts(
        &self,
        row: &Attestation,
        claim: &ClaimRecord,
    ) -> Result<ProvenParts, AttestationError> {
        let missing =
            |what: &str| AttestationError::Invalid(format!("a proven attestation has no {what}"));
        let slots = usize::try_from(row.slots.ok_or_else(|| missing("size"))?)
            .map_err(|_| missing("valid size"))?;
        let circuit = match row.circuit.as_str() {
            "daily" => Circuit::Daily,
            _ => Circuit::Threshold,
        };
        let keys = self.prover.keys_of(circuit, slots).ok_or_else(|| {
            AttestationError::Invalid(format!(
                "its proof is for the {} circuit of size {slots} and this worker has no keys of that size (attestation.sizes, attestation.daily_sizes)",
                circuit.name()
            ))
        })?;
        let vk_sha256 = keys.verifier().sha256()?;
        if row.vk_sha256.as_deref() != Some(vk_sha256.as_str()) {
            return Err(AttestationError::Invalid(format!(
                "the proof was made with the verifying key {}, this worker holds {vk_sha256} for {slots} slots: give every replica the same keys",
                row.vk_sha256.as_deref().unwrap_or("?")
            )));
        }
        let statement = Statement::from_json(&StatementJson {
            slots,
            commitment: row
                .commitment
                .clone()
                .ok_or_else(|| missing("commitment"))?,
            threshold: u32::try_from(claim.threshold).map_err(|_| missing("32-bit threshold"))?,
            quota_ppm: u32::try_from(row.quota_ppm.ok_or_else(|| missing("fraction"))?)
                .map_err(|_| missing("valid fraction"))?,
            context: row.context.clone().ok_or_else(|| missing("context"))?,
        })?;
        let proof = SlaProof::from_bytes(row.proof.as_deref().ok_or_else(|| missing("proof"))?)?;
        let anchored = anchored_statement(
            claim,
            statement.quota_ppm(),
            statement.commitment(),
            &vk_sha256,
        )?;
        let statement_id = anchored.id();
        if row.statement_id.as_deref() != Some(statement_id.to_string().as_str()) {
            return Err(AttestationError::Invalid(format!(
                "the statement id recomputed ({statement_id}) is not the one recorded with the proof"
            )));
        }
        let proof_sha256 = row
            .proof_sha256
            .clone()
            .ok_or_else(|| missing("proof hash"))?;
        Ok(ProvenParts {
            verifier: keys.verifier().clone(),
            provenance: keys.provenance().clone(),
            statement,
            proof,
            anchored,
            statement_id,
            vk_sha256,
            proof_sha256,
        })
    }
}

/// Records that `row` is anchored at `anchor`: the auditor's bundle, the
/// row, and the `attestation.anchored` fact (once: a row anchored already
/// is left as it is).
pub(crate) async fn record_anchored(
    tx: &mut TenantTx,
    row: &Attestation,
    claim: &ClaimRecord,
    parts: &ProvenParts,
    anchor: serde_json::Value,
    file_anchor: Anchor,
) -> Result<(), AttestationError> {
    let file = StatementFile::new(
        claim.clone(),
        &parts.statement,
        parts.vk_sha256.clone(),
        parts.proof_sha256.clone(),
        file_anchor,
    )?
    .with_key_setup(parts.provenance.clone());
    let file = match &row.days {
        Some(days) => file.with_days(
            serde_json::from_value(days.clone())
                .map_err(|e| AttestationError::Invalid(format!("the stored days: {e}")))?,
        ),
        None => file,
    };
    let bundle = crate::export::bundle(&parts.verifier, &parts.statement, &parts.proof, &file);
    if attestations::record_anchor(tx, row.id, &anchor, &bundle)
        .await
        .map_err(store)?
    {
        outbox::enqueue(
            tx,
            "attestation.anchored",
            &crate::facts::about(
                row,
                claim,
                serde_json::json!({
                    "statementId": parts.statement_id.to_string(),
                    "fractionPpm": parts.statement.quota_ppm(),
                    "anchor": anchor,
                }),
            ),
        )
        .await
        .map_err(store)?;
    }
    Ok(())
}

/// The proof as the generated Solidity verifier takes it.
fn solidity_words(proof: &SlaProof) -> Result<[U256; 8], AttestationError> {
    let words = solidity_proof(proof);
    let mut out = [U256::ZERO; 8];
    for (slot, word) in out.iter_mut().zip(words.iter()) {
        *slot = word
            .parse()
            .map_err(|e| AttestationError::Invalid(format!("a proof word is not a number: {e}")))?;
    }
    Ok(out)
}
