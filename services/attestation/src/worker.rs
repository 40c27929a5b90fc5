//! The attestation worker: claims `attest` jobs, proves each pending
//! attestation off the async runtime, and anchors each proven one on chain,
//! exactly once however often a job is retried.
//!
//! A job runs in two steps, each committed on its own, so that a chain
//! outage never costs a proof: *prove* (pending → proven: the vector from
//! the row, the salt derived from the platform's attestation secret and the
//! claim's context, the Groth16 proof on a blocking thread under a
//! concurrency limit) and *anchor* (proven → anchored: the statement
//! attested on chain, the `attestation.anchored` fact and the job's
//! completion in one transaction). Before its first send the worker notes
//! the chain's block height; a retry looks for an attestation of the same
//! statement id made since then before sending again, so a send whose
//! answer was lost is found, not repeated.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use slaproof_chain::{Chain, Deployment};
use slaproof_circuits::{Circuit, CircuitKeys, ContextHash, build_with_salt, derive_salt, prove};
use slaproof_domain::anchoring::ProofCircuit;
use slaproof_domain::period_vector::PeriodVector;
use slaproof_domain::settings::SettingsError;
use slaproof_store::attestations::{self, AttestRequest, Attestation, Proven};
use slaproof_store::jobs::{self, ClaimedJob};
use slaproof_store::{Database, TenantTx, platform_secrets, slas, tenants};
use tokio::sync::Semaphore;

use crate::bundle::{ClaimRecord, anchored_statement};
use crate::daily::{self, DailyPlan};
use crate::error::AttestationError;

/// The name of the platform secret salts are derived from.
pub const SALT_SECRET: &str = "attestation_salt";

/// How the attestation worker runs: the `[attestation]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Milliseconds between polls for attest jobs when the last found none.
    pub poll_interval_ms: u64,
    /// Seconds a claimed job is this worker's before another may take it:
    /// longer than a proof of the largest circuit takes.
    pub lease_secs: u64,
    /// Jobs run at once, each claimed under its own lease (a proof keeps a
    /// core busy while it runs; an anchor mostly waits for the chain).
    pub concurrency: usize,
    /// Circuit sizes (slots) to load keys for; a vector takes the smallest
    /// that holds it. A month is 62 slots (two per day): 64 holds weeks and
    /// months; quarters and years need 1024 too (its setup takes minutes).
    pub sizes: Vec<usize>,
    /// Day counts of the daily circuit to load keys for (empty: periods
    /// are never proven over their anchored daily commitments). A period
    /// takes the smallest that holds its days: 32 holds weeks and months,
    /// quarters and years need 512.
    pub daily_sizes: Vec<usize>,
    /// Where the proving keys are; `None`: `<embedded.data_dir>/keys`.
    pub key_dir: Option<PathBuf>,
    /// Generate the keys of a size that has none yet (a single-party setup,
    /// logged). Keys that exist are loaded, never made again.
    pub generate_keys: bool,
    /// Seconds per epoch of the batched path: a tenant's statements proven
    /// within one epoch are anchored together, under one root, when it ends.
    pub batch_epoch_secs: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            poll_interval_ms: 1000,
            lease_secs: 600,
            concurrency: 1,
            sizes: vec![64],
            daily_sizes: vec![32],
            key_dir: None,
            generate_keys: true,
            batch_epoch_secs: 3600,
        }
    }
}

impl Settings {
    /// Checks the bounds.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let check = slaproof_domain::settings::within;
        check(
            "attestation.poll_interval_ms",
            self.poll_interval_ms,
            10,
            60_000,
        )?;
        check("attestation.lease_secs", self.lease_secs, 30, 86_400)?;
        check("attestation.concurrency", self.concurrency as u64, 1, 64)?;
        check(
            "attestation.batch_epoch_secs",
            self.batch_epoch_secs,
            1,
            7 * 86_400,
        )?;
        if self.sizes.is_empty()
            || self
                .sizes
                .iter()
                .any(|s| !slaproof_circuits::statement::STANDARD_SIZES.contains(s))
        {
            return Err(SettingsError::new(
                "attestation.sizes",
                format!(
                    "must name at least one of the standard sizes {:?}, and only those",
                    slaproof_circuits::statement::STANDARD_SIZES
                ),
            ));
        }
        if self
            .daily_sizes
            .iter()
            .any(|s| !slaproof_circuits::daily::STANDARD_DAYS.contains(s))
        {
            return Err(SettingsError::new(
                "attestation.daily_sizes",
                format!(
                    "may only name the standard day counts {:?}",
                    slaproof_circuits::daily::STANDARD_DAYS
                ),
            ));
        }
        Ok(())
    }
}

/// The proving keys by size, and the limit on proofs at once.
#[derive(Clone)]
pub struct Prover {
    keys: BTreeMap<usize, Arc<CircuitKeys>>,
    /// The daily circuit's keys, by day count.
    daily: BTreeMap<usize, Arc<CircuitKeys>>,
    limit: Arc<Semaphore>,
    /// The platform's salt secret, read from the database once.
    pub(crate) salt_secret: Arc<tokio::sync::OnceCell<[u8; 32]>>,
}

impl Prover {
    /// A prover with `keys`, making at most `concurrency` proofs at once.
    pub fn new(keys: Vec<CircuitKeys>, concurrency: usize) -> Self {
        let (daily, keys): (Vec<CircuitKeys>, Vec<CircuitKeys>) = keys
            .into_iter()
            .partition(|k| k.circuit() == Circuit::Daily);
        Self {
            keys: keys.into_iter().map(|k| (k.slots(), Arc::new(k))).collect(),
            daily: daily
                .into_iter()
                .map(|k| (k.slots(), Arc::new(k)))
                .collect(),
            limit: Arc::new(Semaphore::new(concurrency.max(1))),
            salt_secret: Arc::default(),
        }
    }

    /// Loads the keys of each size from `dir`, generating those missing
    /// when `generate` (never replacing keys that exist: a key that does
    /// not load is an error, not a reason to make another).
    pub fn load(
        dir: &std::path::Path,
        sizes: &[usize],
        daily_sizes: &[usize],
        generate: bool,
        concurrency: usize,
    ) -> Result<Self, AttestationError> {
        let mut keys = Vec::new();
        let wanted = sizes
            .iter()
            .map(|s| (Circuit::Threshold, *s))
            .chain(daily_sizes.iter().map(|s| (Circuit::Daily, *s)));
        for (circuit, size) in wanted {
            let (manifest, _, _) = slaproof_circuits::keys::circuit_key_paths(dir, circuit, size);
            let flag = match circuit {
                Circuit::Threshold => "--slots",
                Circuit::Daily => "--days",
            };
            if !manifest.exists() {
                if !generate {
                    return Err(AttestationError::Invalid(format!(
                        "no {} proving keys of size {size} in {} (run `slaproof keys generate {flag} {size}`, or set attestation.generate_keys)",
                        circuit.name(),
                        dir.display()
                    )));
                }
                tracing::warn!(circuit = circuit.name(), size, dir = %dir.display(), "no proving keys of this size: generating them (a single-party setup)");
                slaproof_circuits::keys::generate_circuit_keys(dir, circuit, size, &mut |_| {})?;
            }
            keys.push(slaproof_circuits::keys::load_circuit_keys(
                dir, circuit, size,
            )?);
        }
        Ok(Self::new(keys, concurrency))
    }

    /// The smallest keys holding `pairs` slots.
    fn keys_for(&self, pairs: usize) -> Result<Arc<CircuitKeys>, AttestationError> {
        self.keys
            .range(pairs.max(1)..)
            .next()
            .map(|(_, k)| k.clone())
            .ok_or_else(|| {
                AttestationError::Invalid(format!(
                    "no circuit of at least {pairs} slots is loaded: add the next standard size to attestation.sizes"
                ))
            })
    }

    /// The smallest daily keys holding `days` days, if any is loaded.
    pub(crate) fn daily_keys_for(&self, days: usize) -> Option<Arc<CircuitKeys>> {
        self.daily
            .range(days.max(1)..)
            .next()
            .map(|(_, k)| k.clone())
    }

    /// The keys of `circuit` of exactly that size, if loaded.
    pub(crate) fn keys_of(&self, circuit: Circuit, size: usize) -> Option<&Arc<CircuitKeys>> {
        match circuit {
            Circuit::Threshold => self.keys.get(&size),
            Circuit::Daily => self.daily.get(&size),
        }
    }

    fn all(&self) -> impl Iterator<Item = &Arc<CircuitKeys>> {
        self.keys.values().chain(self.daily.values())
    }

    /// Each loaded verifying key, with its size (slots, or days).
    pub fn verifiers(&self) -> Vec<(usize, slaproof_circuits::VerifierKey)> {
        self.all()
            .map(|k| (k.slots(), k.verifier().clone()))
            .collect()
    }

    /// The sha256 of each loaded verifying key, with its size.
    pub fn verifying_keys(&self) -> Result<Vec<(usize, String)>, AttestationError> {
        self.all()
            .map(|k| Ok((k.slots(), k.verifier().sha256()?)))
            .collect()
    }
}

/// Where proven statements are anchored.
#[derive(Clone)]
pub struct Anchoring {
    /// Shared: one nonce sequence per account and process.
    pub chain: Arc<Chain>,
    pub deployment: Deployment,
}

/// One attestation worker.
#[derive(Clone)]
pub struct Worker {
    pub db: Database,
    pub settings: Settings,
    pub prover: Prover,
    /// `None`: prove only; proven attestations wait for a chain.
    pub anchoring: Option<Anchoring>,
    /// Names this worker's leases.
    pub name: String,
}

impl std::fmt::Debug for Prover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Proving keys are megabytes of curve points: their sizes say enough.
        f.debug_struct("Prover")
            .field("sizes", &self.keys.keys().collect::<Vec<_>>())
            .field("daily_sizes", &self.daily.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Anchoring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anchoring")
            .field("chain_id", &self.chain.chain_id())
            .field("attester", &self.chain.address())
            .field("eas", &self.deployment.eas)
            .finish()
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("name", &self.name)
            .field("settings", &self.settings)
            .field("prover", &self.prover)
            .field("anchoring", &self.anchoring)
            .finish_non_exhaustive()
    }
}

/// What one job did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub proved: bool,
    pub anchored: bool,
}

impl Worker {
    /// Claims and runs due attest jobs until none is left; answers how many
    /// ran (failed ones are retried later with a growing delay).
    ///
    /// At most `concurrency` jobs are claimed per round, and run at once: a
    /// job claimed is worked on at once, so its lease never runs out
    /// while it waits behind others.
    pub async fn work_due(&self) -> Result<usize, AttestationError> {
        // Transparency log days first: each is one small attestation.
        let mut ran = self.anchor_logs_due().await?;
        loop {
            let lease = Duration::from_secs(self.settings.lease_secs);
            let claimed = jobs::claim(
                &self.db,
                attestations::ATTEST,
                &self.name,
                i32::try_from(self.settings.concurrency.max(1)).unwrap_or(1),
                lease,
            )
            .await
            .map_err(store)?;
            if claimed.is_empty() {
                return Ok(ran);
            }
            ran += claimed.len();
            let mut running = tokio::task::JoinSet::new();
            for job in claimed {
                let worker = self.clone();
                running.spawn(async move {
                    if let Err(err) = worker.run_job(&job).await {
                        worker.after_failure(&job, &err).await;
                    }
                });
            }
            while let Some(done) = running.join_next().await {
                if let Err(err) = done {
                    tracing::error!(error = %err, "an attest job's task failed");
                }
            }
        }
    }

    /// Records a failed attempt: the job retried after its delay (a proven
    /// attestation with no chain to anchor on waits the longest delay), and
    /// a reason fit for the attestation's readers on the row.
    async fn after_failure(&self, job: &ClaimedJob, err: &AttestationError) {
        let retry = match err {
            AttestationError::NoChain => jobs::RETRY_CAP,
            _ => jobs::retry_delay(job.attempts),
        };
        if matches!(err, AttestationError::NoChain) {
            tracing::info!(tenant = %job.tenant, "proven; no chain to anchor on yet");
        } else {
            tracing::error!(tenant = %job.tenant, error = %err, attempts = job.attempts, "attest job failed; will retry");
        }
        if let Err(fail) = self
            .note_failure(job, &err.to_string(), &reason(err), retry)
            .await
        {
            tracing::error!(tenant = %job.tenant, error = %fail, "could not record the failure");
        }
    }

    async fn note_failure(
        &self,
        job: &ClaimedJob,
        error: &str,
        reason: &str,
        retry: Duration,
    ) -> Result<(), AttestationError> {
        if let Ok(request) = serde_json::from_value::<AttestRequest>(job.payload.clone()) {
            let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
            attestations::record_error(&mut tx, request.attestation, reason)
                .await
                .map_err(store)?;
            tx.commit().await.map_err(store)?;
        }
        jobs::fail(&self.db, job, error, retry).await.map_err(store)
    }

    /// Carries one attestation as far as it goes: proves it if pending,
    /// anchors it if proven and a chain is configured; completes the job
    /// when nothing is left to do here.
    #[tracing::instrument(skip(self, job), fields(tenant = %job.tenant))]
    pub async fn run_job(&self, job: &ClaimedJob) -> Result<Step, AttestationError> {
        let request: AttestRequest = serde_json::from_value(job.payload.clone())
            .map_err(|e| AttestationError::Invalid(format!("an attest job's payload: {e}")))?;
        let id = request.attestation;
        let mut step = Step {
            proved: false,
            anchored: false,
        };
        let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
        let Some(row) = attestations::get(&mut tx, id).await.map_err(store)? else {
            return Err(AttestationError::Invalid(format!("no attestation {id}")));
        };
        let claim = claim_of(&mut tx, &row).await?;
        drop(tx);
        let row = if row.status == "pending" {
            let Some(proven) = self.prove(job, &row, &claim).await? else {
                // Handed back until the period's days are anchored.
                return Ok(step);
            };
            let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
            attestations::record_proof(&mut tx, id, &proven)
                .await
                .map_err(store)?;
            let row = attestations::get(&mut tx, id)
                .await
                .map_err(store)?
                .ok_or_else(|| AttestationError::Invalid(format!("no attestation {id}")))?;
            tx.commit().await.map_err(store)?;
            step.proved = true;
            row
        } else {
            row
        };
        match (&self.anchoring, row.status.as_str()) {
            (Some(anchoring), "proven") => {
                // Completes the job with the anchor, or hands it back until
                // its batch's epoch ends.
                step.anchored = self.anchor(job, anchoring, &row, &claim).await?;
            }
            // Kept, retried at the longest delay: anchored once this
            // process has a chain (the service keeps looking for one). A job
            // waiting this way is marked stuck after ten tries, which is
            // what an operator who forgot the chain should see.
            (None, "proven") => return Err(AttestationError::NoChain),
            // Anchored already, or not provable.
            _ => {
                let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
                complete(&mut tx, job).await?;
                tx.commit().await.map_err(store)?;
            }
        }
        Ok(step)
    }

    /// The proof of a pending attestation, made on a blocking thread: over
    /// the period's daily commitments when every day was anchored as the
    /// period went, else over the vector committed now. `None` when it
    /// waits for its last days' anchors.
    async fn prove(
        &self,
        job: &ClaimedJob,
        row: &Attestation,
        claim: &ClaimRecord,
    ) -> Result<Option<Proven>, AttestationError> {
        let vector: PeriodVector = serde_json::from_value(row.vector.clone().ok_or_else(|| {
            AttestationError::Invalid("a pending attestation has no vector".into())
        })?)
        .map_err(|e| AttestationError::Invalid(format!("the stored vector: {e}")))?;
        let secret = *self
            .prover
            .salt_secret
            .get_or_try_init(|| salt_secret(&self.db))
            .await?;
        let context = ContextHash::of(&claim.claim());
        let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
        // The terms the period was judged by say which circuit may prove
        // it, and with which key.
        let policy = slas::find_version(
            &mut tx,
            slaproof_domain::ids::SlaId::from_uuid(row.sla_id),
            row.version,
        )
        .await
        .map_err(store)?
        .definition
        .attestation;
        let circuit = policy.circuit;
        let plan = daily::plan(
            &mut tx,
            self.prover.daily_keys_for(vector.days.len()),
            self.anchoring.is_some(),
            row,
            claim,
            &vector,
            &secret,
        )
        .await?;
        drop(tx);
        let (keys, statement, days, proving) = match plan {
            DailyPlan::Waiting(why) => {
                tracing::info!(attestation = %row.id, %why, "waits for its days' anchors");
                let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
                attestations::record_error(
                    &mut tx,
                    row.id,
                    &format!("waiting for the period's daily commitments to be anchored: {why}"),
                )
                .await
                .map_err(store)?;
                let again = chrono::Utc::now() + chrono::Duration::minutes(10);
                if !jobs::defer(&mut tx, job, again).await.map_err(store)? {
                    return Err(AttestationError::Invalid(
                        "the job's lease was lost to another worker".into(),
                    ));
                }
                tx.commit().await.map_err(store)?;
                return Ok(None);
            }
            DailyPlan::Ready {
                keys,
                openings,
                days,
            } => {
                let statement = slaproof_circuits::period_statement(
                    keys.slots(),
                    context,
                    vector.threshold,
                    vector.quota_ppm,
                    &openings,
                )?;
                (keys, statement, Some(days), Proving::Daily(openings))
            }
            DailyPlan::Unavailable(why) if circuit == ProofCircuit::Daily => {
                // Never a silent downgrade: not proven, told, retried.
                let refused = AttestationError::DailyRequired(why);
                if job.attempts <= 1 {
                    let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
                    daily::tell_refused(&mut tx, row, claim, &refused.to_string()).await?;
                    tx.commit().await.map_err(store)?;
                }
                return Err(refused);
            }
            DailyPlan::Unavailable(why) => {
                tracing::info!(attestation = %row.id, %why, "proven over a vector committed at the close, as the SLA allows (spec.attestation.circuit: threshold)");
                let pairs = vector.pairs();
                let keys = self.prover.keys_for(pairs.len())?;
                let (statement, opening) = build_with_salt(
                    keys.slots(),
                    &pairs,
                    vector.threshold,
                    vector.quota_ppm,
                    context,
                    derive_salt(&secret, context),
                )?;
                (keys, statement, None, Proving::Vector(opening))
            }
        };
        let vk_sha256 = keys.verifier().sha256()?;
        if let Some(agreed) = policy.verifying_key.filter(|k| k.to_string() != vk_sha256) {
            // Never proven with a key the parties did not agree to.
            let refused = AttestationError::KeyNotAgreed {
                agreed: agreed.to_string(),
                loaded: vk_sha256,
                circuit: keys.circuit().name(),
            };
            if job.attempts <= 1 {
                let mut tx = self.db.tenant_tx(job.tenant).await.map_err(store)?;
                daily::tell_refused(&mut tx, row, claim, &refused.to_string()).await?;
                tx.commit().await.map_err(store)?;
            }
            return Err(refused);
        }
        let circuit = keys.circuit();
        let key_setup = match keys.provenance() {
            slaproof_circuits::Provenance::Development => "development",
            slaproof_circuits::Provenance::Ceremony(_) => "ceremony",
        };
        let permit = self
            .prover
            .limit
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| AttestationError::Invalid("the prover is shut down".into()))?;
        let started = std::time::Instant::now();
        let (proof, statement) = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            match proving {
                Proving::Vector(opening) => prove(&keys, &statement, &opening),
                Proving::Daily(openings) => {
                    slaproof_circuits::prove_period(&keys, &statement, &openings)
                }
            }
            .map(|p| (p, statement))
        })
        .await
        .map_err(|e| AttestationError::Invalid(format!("the proving thread failed: {e}")))??;
        let proof_sha256 = proof.sha256()?;
        let statement_id = anchored_statement(
            claim,
            statement.quota_ppm(),
            statement.commitment(),
            &vk_sha256,
        )?
        .id();
        tracing::info!(tenant = %job.tenant, attestation = %row.id, circuit = circuit.name(), size = statement.slots(), millis = started.elapsed().as_millis() as u64, %statement_id, "proved");
        Ok(Some(Proven {
            slots: i32::try_from(statement.slots()).unwrap_or(i32::MAX),
            context: context.as_field().to_string(),
            commitment: statement.commitment().to_string(),
            quota_ppm: i32::try_from(statement.quota_ppm()).unwrap_or(i32::MAX),
            vk_sha256,
            proof: proof.to_bytes()?,
            proof_sha256,
            statement_id: statement_id.to_string(),
            circuit: circuit.name().to_owned(),
            days: days.map(|d| serde_json::json!(d)),
            key_setup: key_setup.to_owned(),
        }))
    }
}

/// What a proof opens: a vector committed at the close, or anchored days.
enum Proving {
    Vector(slaproof_circuits::Opening),
    Daily(Vec<slaproof_circuits::daily::DayOpening>),
}

/// What the readers of an attestation are told of a failed attempt: the
/// error when it is about the attestation, a summary when it is about the
/// platform (chain and database errors can carry addresses and details
/// that are the operator's; the job keeps the full error).
fn reason(err: &AttestationError) -> String {
    match err {
        AttestationError::Chain(e) if e.is_transient() => "anchoring waits for the chain (unreachable, fees above the cap, the spending limit, or a transaction not final yet); retrying".into(),
        AttestationError::Chain(_) => "the chain refused the anchor; retrying (the operator's logs say why)".into(),
        AttestationError::Store(_) | AttestationError::Io { .. } => "a platform error; retrying".into(),
        other => other.to_string(),
    }
}

/// The claim an attestation states: the tenant's and SLA's names, the
/// vector's comparison, the period and the result's revision.
pub async fn claim_of(
    tx: &mut TenantTx,
    row: &Attestation,
) -> Result<ClaimRecord, AttestationError> {
    let tenant = tenants::current(tx).await.map_err(store)?;
    let sla = slas::name_of(tx, slaproof_domain::ids::SlaId::from_uuid(row.sla_id))
        .await
        .map_err(store)?;
    let (field, unit, operator, threshold) = match &row.vector {
        Some(v) => {
            let v: PeriodVector = serde_json::from_value(v.clone())
                .map_err(|e| AttestationError::Invalid(format!("the stored vector: {e}")))?;
            (v.field, v.unit, v.operator, u64::from(v.threshold))
        }
        None => Default::default(),
    };
    Ok(ClaimRecord {
        tenant: tenant.name,
        sla,
        sla_version: u32::try_from(row.version).unwrap_or(0),
        objective: row.objective.clone(),
        field,
        unit,
        operator,
        threshold,
        period_start: row.period_start.timestamp(),
        period_end: row.period_end.timestamp(),
        revision: u32::try_from(row.revision).unwrap_or(0),
    })
}

/// The platform's secret salts are derived from: made once, shared by all
/// replicas, so a retried proof commits with the same salt.
pub(crate) async fn salt_secret(db: &Database) -> Result<[u8; 32], AttestationError> {
    let fresh: [u8; 32] = rand::random();
    let kept = platform_secrets::get_or_create(db, SALT_SECRET, &fresh)
        .await
        .map_err(store)?;
    kept.try_into().map_err(|_| {
        AttestationError::Invalid("the attestation salt secret is not 32 bytes".into())
    })
}

pub(crate) async fn complete(tx: &mut TenantTx, job: &ClaimedJob) -> Result<(), AttestationError> {
    if jobs::complete(tx, job).await.map_err(store)? {
        Ok(())
    } else {
        Err(AttestationError::Invalid(
            "the job's lease was lost to another worker".into(),
        ))
    }
}

pub(crate) fn store(e: slaproof_store::StoreError) -> AttestationError {
    AttestationError::Store(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_a_size_that_is_not_standard_is_named() {
        assert_eq!(Settings::default().validate(), Ok(()));
        let odd = Settings {
            sizes: vec![100],
            ..Settings::default()
        };
        assert_eq!(odd.validate().unwrap_err().key, "attestation.sizes");
    }
}
