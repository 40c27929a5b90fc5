//! Anchoring: attestations on each path, reading them back, and checking a
//! statement's inclusion in a batch.

use alloy::primitives::{Address, B256, Bytes, TxKind};
use alloy::providers::Provider;
use alloy::rpc::types::{Filter, TransactionReceipt};
use alloy::sol_types::{SolCall, SolEvent};

use crate::anchor::{BatchRoot, PeriodAnchor, VerifiedAnchor};
use crate::client::Chain;
use crate::contracts::{BatchCheck, EAS};
use crate::deploy::Deployment;
use crate::error::{ChainError, Result};

/// An attestation made: its UID and the transaction that made it.
#[derive(Debug, Clone)]
pub struct Attested {
    pub uid: B256,
    pub tx: B256,
    pub block: u64,
    pub gas_used: u64,
}

/// An attestation as EAS holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attestation {
    pub uid: B256,
    pub schema: B256,
    /// Seconds since the epoch, the block's time.
    pub time: u64,
    pub attester: Address,
    pub revocable: bool,
    pub revoked: bool,
    pub data: Bytes,
}

/// Attests a period statement on the hash-only path.
pub async fn attest_period(
    chain: &Chain,
    deployment: &Deployment,
    anchor: &PeriodAnchor,
) -> Result<Attested> {
    attest(
        chain,
        deployment,
        deployment.schemas.period,
        anchor.data(),
        "attesting a period statement",
    )
    .await
}

/// Attests a period statement on the verified path: the resolver runs the
/// verifier registered for the statement's key, and EAS refuses the
/// attestation if the proof does not verify.
pub async fn attest_verified(
    chain: &Chain,
    deployment: &Deployment,
    anchor: &VerifiedAnchor,
) -> Result<Attested> {
    attest(
        chain,
        deployment,
        deployment.schemas.verified,
        anchor.data(),
        "attesting a verified period statement",
    )
    .await
}

/// Attests one epoch's batch root.
pub async fn attest_batch_root(
    chain: &Chain,
    deployment: &Deployment,
    root: &BatchRoot,
) -> Result<Attested> {
    attest(
        chain,
        deployment,
        deployment.schemas.batch_root,
        root.data(),
        "attesting a batch root",
    )
    .await
}

async fn attest(
    chain: &Chain,
    deployment: &Deployment,
    schema: B256,
    data: Vec<u8>,
    doing: &str,
) -> Result<Attested> {
    let call = EAS::attestCall {
        request: EAS::AttestationRequest {
            schema,
            data: EAS::AttestationRequestData {
                recipient: Address::ZERO,
                expirationTime: 0,
                revocable: false,
                refUID: B256::ZERO,
                data: data.into(),
                value: Default::default(),
            },
        },
    };
    let receipt = chain
        .send(
            TxKind::Call(deployment.eas),
            call.abi_encode().into(),
            doing,
        )
        .await?;
    let uid = attested_uid(&receipt, deployment.eas, schema)?;
    Ok(Attested {
        uid,
        tx: receipt.transaction_hash,
        block: receipt.block_number.unwrap_or_default(),
        gas_used: receipt.gas_used,
    })
}

/// The UID from EAS's `Attested` log in `receipt`.
fn attested_uid(receipt: &TransactionReceipt, eas: Address, schema: B256) -> Result<B256> {
    receipt
        .inner
        .logs()
        .iter()
        .filter(|log| log.address() == eas)
        .find_map(|log| EAS::Attested::decode_log_data(log.data()).ok())
        .filter(|event| event.schemaUID == schema)
        .map(|event| event.uid)
        .ok_or_else(|| ChainError::Unexpected("no Attested log for the schema".into()))
}

/// Reads an attestation back by its UID (`None` if EAS has none).
pub async fn attestation(
    chain: &Chain,
    deployment: &Deployment,
    uid: B256,
) -> Result<Option<Attestation>> {
    attestation_at(chain, deployment.eas, uid).await
}

/// Reads an attestation back from the EAS at `eas`, knowing nothing else of
/// the deployment (what an auditor has).
pub async fn attestation_at(chain: &Chain, eas: Address, uid: B256) -> Result<Option<Attestation>> {
    let eas = &EAS::new(eas, chain.provider());
    let found = chain
        .read("reading an attestation", || async move {
            eas.getAttestation(uid).call().await
        })
        .await?;
    if found.uid == B256::ZERO {
        return Ok(None);
    }
    Ok(Some(Attestation {
        uid: found.uid,
        schema: found.schema,
        time: found.time,
        attester: found.attester,
        revocable: found.revocable,
        revoked: found.revocationTime != 0,
        data: found.data,
    }))
}

/// Whether `proof` includes `statement_id` under `root`, asked of the
/// deployed `BatchCheck` (OpenZeppelin's `MerkleProof`).
pub async fn batch_includes(
    chain: &Chain,
    deployment: &Deployment,
    root: B256,
    statement_id: B256,
    proof: &[B256],
) -> Result<bool> {
    let check = &BatchCheck::new(deployment.batch_check, chain.provider());
    chain
        .read("checking an inclusion proof", || async move {
            check
                .verify(proof.to_vec(), root, statement_id)
                .call()
                .await
        })
        .await
}

/// The hash-only period attestation of `statement_id` made by this chain
/// client's account since `from_block`, if there is one: what a retry asks
/// before sending again, so that a send whose answer was lost (the node
/// went away, the receipt came too late) is not made twice.
pub async fn find_period(
    chain: &Chain,
    deployment: &Deployment,
    statement_id: B256,
    from_block: u64,
) -> Result<Option<Attested>> {
    find_attested(
        chain,
        deployment,
        deployment.schemas.period,
        from_block,
        |data| PeriodAnchor::from_data(data).is_ok_and(|a| a.statementId == statement_id),
    )
    .await
}

/// [`find_period`] for the verified path.
pub async fn find_verified(
    chain: &Chain,
    deployment: &Deployment,
    statement_id: B256,
    from_block: u64,
) -> Result<Option<Attested>> {
    find_attested(
        chain,
        deployment,
        deployment.schemas.verified,
        from_block,
        |data| VerifiedAnchor::from_data(data).is_ok_and(|a| a.statementId == statement_id),
    )
    .await
}

/// [`find_period`] for a batch's root.
pub async fn find_batch_root(
    chain: &Chain,
    deployment: &Deployment,
    root: &BatchRoot,
    from_block: u64,
) -> Result<Option<Attested>> {
    find_attested(
        chain,
        deployment,
        deployment.schemas.batch_root,
        from_block,
        |data| BatchRoot::from_data(data).is_ok_and(|r| &r == root),
    )
    .await
}

/// The first attestation under `schema` made by this chain client's
/// account since `from_block` whose data `is_it`.
async fn find_attested(
    chain: &Chain,
    deployment: &Deployment,
    schema: B256,
    from_block: u64,
    is_it: impl Fn(&[u8]) -> bool,
) -> Result<Option<Attested>> {
    // In stretches of blocks: providers cap the range of one `eth_getLogs`.
    const STRETCH: u64 = 10_000;
    let head = chain
        .patiently("reading the block height", || async move {
            chain.provider().get_block_number().await
        })
        .await?;
    let mut from = from_block;
    while from <= head {
        let to = head.min(from + STRETCH - 1);
        let filter = Filter::new()
            .address(deployment.eas)
            .event_signature(EAS::Attested::SIGNATURE_HASH)
            .topic2(chain.address().into_word())
            .topic3(schema)
            .from_block(from)
            .to_block(to);
        let logs = chain
            .patiently("looking for an earlier attestation", || async {
                chain.provider().get_logs(&filter).await
            })
            .await?;
        // A log of a block reorged out is not an anchor.
        for log in logs.into_iter().filter(|log| !log.removed) {
            let Ok(event) = EAS::Attested::decode_log_data(log.data()) else {
                continue;
            };
            let Some(found) = attestation(chain, deployment, event.uid).await? else {
                continue;
            };
            if is_it(&found.data) {
                let hash = log.transaction_hash.unwrap_or_default();
                let receipt = chain
                    .patiently("reading the earlier attestation's receipt", || async move {
                        chain.provider().get_transaction_receipt(hash).await
                    })
                    .await?;
                return Ok(Some(Attested {
                    uid: event.uid,
                    tx: hash,
                    block: log.block_number.unwrap_or_default(),
                    gas_used: receipt.map_or(0, |r| r.gas_used),
                }));
            }
        }
        from = to + 1;
    }
    Ok(None)
}
