//! The batched path: a tenant's statements proven within one epoch are
//! anchored together, one attestation of their Merkle root when the epoch
//! ends, each statement's bundle carrying its inclusion proof.
//!
//! A member's job joins the epoch's open batch and is handed back until the
//! epoch ends. The first member job to run after that seals the batch (its
//! members and root fixed, under the batch's lock, so that no statement
//! joins a sealed batch: a late one goes to the next epoch's), anchors the
//! root once (a retry looks for the root already attested before sending),
//! and records every member anchored in the transaction that records the
//! root's anchor. The other members' jobs then find theirs anchored.

use std::time::Duration;

use alloy::primitives::B256;
use chrono::Utc;
use slaproof_chain::anchor::BatchRoot;
use slaproof_chain::attest;
use slaproof_chain::merkle::StandardTree;
use slaproof_store::attestation_batches::{self, Batch};
use slaproof_store::attestations::Attestation;
use slaproof_store::jobs::{self, ClaimedJob};

use crate::anchor::{Sender, record_anchored};
use crate::bundle::{Anchor, hex_word};
use crate::error::AttestationError;
use crate::worker::{Anchoring, Worker, claim_of, complete, store};

impl Worker {
    /// Anchors proven `row` with its epoch's batch; answers `false` when
    /// the epoch has not ended (the job is handed back until it does).
    pub(crate) async fn anchor_batched(
        &self,
        job: &ClaimedJob,
        anchoring: &Anchoring,
        row: &Attestation,
    ) -> Result<bool, AttestationError> {
        let (chain, deployment) = (anchoring.chain.as_ref(), &anchoring.deployment);
        let epoch = Duration::from_secs(self.settings.batch_epoch_secs);
        let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
        let batch = attestation_batches::join(&mut tx, row.id, epoch, Utc::now())
            .await
            .map_err(store)?;
        if batch.status == "open" {
            if batch.epoch_end > Utc::now() {
                if !jobs::defer(&mut tx, job, batch.epoch_end)
                    .await
                    .map_err(store)?
                {
                    return Err(AttestationError::Invalid(
                        "the job's lease was lost to another worker".into(),
                    ));
                }
                tx.commit().await.map_err(store)?;
                tracing::debug!(attestation = %row.id, batch = %batch.id, until = %batch.epoch_end, "waits for its batch's epoch to end");
                return Ok(false);
            }
            let members = attestation_batches::members(&mut tx, batch.id)
                .await
                .map_err(store)?;
            let ids = statement_ids(&members)?;
            let root = StandardTree::of(&ids).root();
            let texts: Vec<String> = ids.iter().map(ToString::to_string).collect();
            attestation_batches::seal(&mut tx, batch.id, &texts, &root.to_string())
                .await
                .map_err(store)?;
            tracing::info!(batch = %batch.id, members = ids.len(), %root, "sealed a batch");
        }
        tx.commit().await.map_err(store)?;

        let from_block = self
            .anchor_from(chain, Sender::Batch(batch.id), batch.anchor_from_block, job)
            .await?;
        let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
        let batch = attestation_batches::lock(&mut tx, batch.id)
            .await
            .map_err(store)?
            .ok_or_else(|| AttestationError::Invalid(format!("no batch {}", batch.id)))?;
        let (ids, root) = sealed(&batch)?;
        let batch_root = BatchRoot {
            root,
            epochStart: u64::try_from(batch.epoch_start.timestamp()).unwrap_or(0),
            epochEnd: u64::try_from(batch.epoch_end.timestamp()).unwrap_or(0),
            count: u32::try_from(ids.len()).unwrap_or(u32::MAX),
        };
        let anchor = match &batch.anchor {
            Some(anchor) => anchor.clone(),
            None => {
                let attested = match attest::find_batch_root(
                    chain,
                    deployment,
                    &batch_root,
                    from_block,
                )
                .await?
                {
                    Some(earlier) => {
                        tracing::info!(batch = %batch.id, uid = %earlier.uid, "found the batch root already anchored by an earlier attempt");
                        earlier
                    }
                    None => attest::attest_batch_root(chain, deployment, &batch_root).await?,
                };
                let anchor = serde_json::json!({
                    "path": "batched",
                    "chainId": chain.chain_id(),
                    "eas": deployment.eas.to_string(),
                    "uid": attested.uid.to_string(),
                    "transaction": attested.tx.to_string(),
                    "block": attested.block,
                    "batch": batch.id,
                    "root": root.to_string(),
                    "epochStart": batch.epoch_start,
                    "epochEnd": batch.epoch_end,
                    "count": ids.len(),
                });
                attestation_batches::record_anchor(&mut tx, batch.id, &anchor)
                    .await
                    .map_err(store)?;
                tracing::info!(batch = %batch.id, uid = %attested.uid, block = attested.block, members = ids.len(), "anchored a batch");
                anchor
            }
        };
        self.record_members(&mut tx, &batch, &ids, &anchor).await?;
        complete(&mut tx, job).await?;
        tx.commit().await.map_err(store)?;
        Ok(true)
    }

    /// Records each member of an anchored batch not recorded yet as
    /// anchored, with its inclusion proof.
    async fn record_members(
        &self,
        tx: &mut slaproof_store::TenantTx,
        batch: &Batch,
        ids: &[B256],
        anchor: &serde_json::Value,
    ) -> Result<(), AttestationError> {
        let tree = StandardTree::of(ids);
        let uid = anchor
            .get("uid")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| AttestationError::Invalid("a batch anchor has no uid".into()))
            .and_then(hex_word)?;
        let chain_id = anchor
            .get("chainId")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or_default();
        let eas = anchor
            .get("eas")
            .and_then(serde_json::Value::as_str)
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| AttestationError::Invalid("a batch anchor has no EAS address".into()))?;
        for member in attestation_batches::members(tx, batch.id)
            .await
            .map_err(store)?
            .into_iter()
            .filter(|m| m.status == "proven")
        {
            let claim = claim_of(tx, &member).await?;
            let parts = self.proven_parts(&member, &claim)?;
            let index = ids
                .iter()
                .position(|id| *id == parts.statement_id)
                .ok_or_else(|| {
                    AttestationError::Invalid(format!(
                        "attestation {} is in batch {} but its statement is not under the sealed root",
                        member.id, batch.id
                    ))
                })?;
            let proof = tree.proof(index);
            let mut member_anchor = anchor.clone();
            member_anchor["inclusionProof"] =
                serde_json::json!(proof.iter().map(ToString::to_string).collect::<Vec<_>>());
            let file_anchor = Anchor {
                path: "batched".into(),
                chain_id,
                eas,
                uid,
                inclusion_proof: Some(proof),
            };
            record_anchored(tx, &member, &claim, &parts, member_anchor, file_anchor).await?;
        }
        Ok(())
    }
}

/// The members' statement ids, in the order they are sealed in.
fn statement_ids(members: &[Attestation]) -> Result<Vec<B256>, AttestationError> {
    members
        .iter()
        .map(|m| {
            m.statement_id
                .as_deref()
                .ok_or_else(|| {
                    AttestationError::Invalid(format!(
                        "attestation {} joined a batch unproven",
                        m.id
                    ))
                })
                .and_then(hex_word)
        })
        .collect()
}

/// A sealed (or anchored) batch's statement ids and root.
fn sealed(batch: &Batch) -> Result<(Vec<B256>, B256), AttestationError> {
    let bad = || AttestationError::Invalid(format!("batch {} is not sealed", batch.id));
    let ids: Vec<String> = batch
        .statement_ids
        .clone()
        .and_then(|v| serde_json::from_value(v).ok())
        .ok_or_else(bad)?;
    let ids = ids
        .iter()
        .map(|s| hex_word(s))
        .collect::<Result<Vec<_>, _>>()?;
    let root = hex_word(batch.root.as_deref().ok_or_else(bad)?)?;
    if ids.is_empty() || StandardTree::of(&ids).root() != root {
        return Err(AttestationError::Invalid(format!(
            "batch {}'s root is not the root of its statement ids",
            batch.id
        )));
    }
    Ok((ids, root))
}
