//! Anchoring each tenant's transparency log a day at a time: when a day is
//! built, its head's id (`slaproof_chain::anchor::log_head_id`) is attested
//! on chain as the first member of a batch-root attestation over the day
//! (`log_day_batch`), with the commitment of every daily measurement
//! recorded since the last anchor as the other members, so the data a
//! period is later proven over is fixed on chain before the period's
//! outcome is known (`docs/TRANSPARENCY.md`).

use std::time::Duration;

use chrono::NaiveDate;
use slaproof_chain::anchor::{log_day_batch, log_head_id};
use slaproof_chain::attest;
use slaproof_store::jobs::{self, ClaimedJob};
use slaproof_store::measurements::{self, NewCommitment, Unanchored};
use slaproof_store::transparency;

use crate::bundle::ClaimRecord;
use crate::error::AttestationError;
use crate::worker::{Worker, complete, salt_secret, store};

/// Most measurements one day's anchor carries; more wait for the next.
const MEMBERS_PER_DAY: i64 = 100_000;

#[derive(serde::Deserialize)]
struct LogAnchorRequest {
    day: NaiveDate,
}

impl Worker {
    /// Claims and runs due log-anchor jobs until none is left; answers how
    /// many ran. Without a chain none is claimed: the days stay due, for
    /// this worker once its chain is there (`up` finds its anvil a moment
    /// after the worker starts) or for a replica that has one.
    pub async fn anchor_logs_due(&self) -> Result<usize, AttestationError> {
        if self.anchoring.is_none() {
            return Ok(0);
        }
        let mut ran = 0;
        loop {
            let claimed = jobs::claim(
                &self.db,
                jobs::LOG_ANCHOR,
                &self.name,
                i32::try_from(self.settings.concurrency.max(1)).unwrap_or(1),
                Duration::from_secs(self.settings.lease_secs),
            )
            .await
            .map_err(store)?;
            if claimed.is_empty() {
                return Ok(ran);
            }
            ran += claimed.len();
            for job in claimed {
                if let Err(err) = self.anchor_log_day(&job).await {
                    let retry = match err {
                        // The chain went away mid-run.
                        AttestationError::NoChain => jobs::RETRY_CAP,
                        _ => jobs::retry_delay(job.attempts),
                    };
                    tracing::warn!(tenant = %job.tenant, error = %err, "a log day is not anchored yet; will retry");
                    jobs::fail(&self.db, &job, &err.to_string(), retry)
                        .await
                        .map_err(store)?;
                }
            }
        }
    }

    /// Anchors the head of the job's day, once.
    #[tracing::instrument(skip(self, job), fields(tenant = %job.tenant))]
    async fn anchor_log_day(&self, job: &ClaimedJob) -> Result<(), AttestationError> {
        let request: LogAnchorRequest = serde_json::from_value(job.payload.clone())
            .map_err(|e| AttestationError::Invalid(format!("a log anchor job's payload: {e}")))?;
        let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
        let head = transparency::head(&mut tx, request.day)
            .await
            .map_err(store)?
            .ok_or_else(|| AttestationError::Invalid(format!("no log head for {}", request.day)))?;
        if head.anchor.is_some() {
            complete(&mut tx, job).await?;
            tx.commit().await.map_err(store)?;
            return Ok(());
        }
        let pending = measurements::unanchored(&mut tx, MEMBERS_PER_DAY)
            .await
            .map_err(store)?;
        tx.commit().await.map_err(store)?;
        let anchoring = self.anchoring.as_ref().ok_or(AttestationError::NoChain)?;
        // The key's name is the log's origin (`<origin>+<id>+<key>`).
        let origin = head
            .verifier_key
            .split('+')
            .next()
            .unwrap_or_default()
            .to_owned();
        let root: [u8; 32] = head
            .root
            .as_slice()
            .try_into()
            .map_err(|_| AttestationError::Invalid("a log root is not 32 bytes".into()))?;
        let day_start = request
            .day
            .and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc().timestamp())
            .and_then(|t| u64::try_from(t).ok())
            .unwrap_or_default();
        let head_id = log_head_id(&origin, day_start, head.size as u64, root);
        let secret = *self
            .prover
            .salt_secret
            .get_or_try_init(|| salt_secret(&self.db))
            .await?;
        let committed = pending
            .iter()
            .map(|u| commit(u, &secret))
            .collect::<Result<Vec<_>, _>>()?;
        let members: Vec<_> = committed.iter().map(|c| c.1).collect();
        let (batch_root, tree) = log_day_batch(head_id, &members, day_start);
        // A retry after a send whose record was lost sends again: a second
        // attestation of the same root, which costs gas and changes nothing
        // a verifier reads.
        let attested =
            attest::attest_batch_root(&anchoring.chain, &anchoring.deployment, &batch_root).await?;
        let anchor = serde_json::json!({
            "path": "batched",
            "chainId": anchoring.chain.chain_id(),
            "eas": anchoring.deployment.eas.to_string(),
            "uid": attested.uid.to_string(),
            "transaction": attested.tx.to_string(),
            "block": attested.block,
            "headId": head_id.to_string(),
            "root": batch_root.root.to_string(),
            "epochStart": batch_root.epochStart,
            "epochEnd": batch_root.epochEnd,
            "members": members.len(),
            "headProof": tree.proof(0).iter().map(ToString::to_string).collect::<Vec<_>>(),
        });
        let commitments: Vec<NewCommitment<'_>> = pending
            .iter()
            .zip(&committed)
            .enumerate()
            .map(|(i, (u, (commitment, member)))| NewCommitment {
                measurement: &u.measurement,
                commitment: commitment.clone(),
                member_id: member.to_string(),
                proof: tree.proof(i + 1).iter().map(ToString::to_string).collect(),
            })
            .collect();
        let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
        transparency::record_anchor(&mut tx, request.day, &head_id.to_string(), &anchor)
            .await
            .map_err(store)?;
        measurements::record_commitments(&mut tx, request.day, &commitments)
            .await
            .map_err(store)?;
        complete(&mut tx, job).await?;
        tx.commit().await.map_err(store)?;
        tracing::info!(day = %request.day, uid = %attested.uid, gas = attested.gas_used, measurements = commitments.len(), "anchored a log day");
        Ok(())
    }
}

/// A measurement's commitment (decimal) and batch member: its salt derived
/// from the platform's secret and its label, as a period's proof will
/// derive it to open the day.
fn commit(
    u: &Unanchored,
    secret: &[u8; 32],
) -> Result<(String, alloy::primitives::B256), AttestationError> {
    let m = &u.measurement;
    let claim = ClaimRecord {
        tenant: u.tenant_name.clone(),
        sla: u.sla_name.clone(),
        sla_version: u32::try_from(m.sla_version).unwrap_or(0),
        objective: m.objective.clone(),
        field: m.field.clone(),
        unit: m.unit.clone(),
        operator: slaproof_domain::provable::OPERATOR.to_owned(),
        threshold: u64::try_from(m.threshold).unwrap_or(0),
        period_start: m.day_start.timestamp(),
        period_end: m.day_end.timestamp(),
        revision: u32::try_from(m.revision).unwrap_or(0),
    };
    let commitment = crate::daily::open_day(&claim, m, secret).commitment()?;
    let member = crate::daily::member_id(
        &claim,
        claim.period_start,
        claim.period_end,
        claim.revision,
        commitment,
    );
    Ok((commitment.to_string(), member))
}
