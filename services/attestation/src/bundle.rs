//! The attestation bundle: what an auditor is handed for one proven period,
//! as files anyone can check with tools we did not write.
//!
//! A folder with snarkjs's `verification_key.json`, `proof.json` and
//! `public.json`, and `statement.json`: the claim in words and fields, each
//! public input explained, the hashes of key and proof, the statement id and
//! where the anchor is.

use std::path::Path;

use alloy::primitives::{Address, B256, keccak256};
use serde::{Deserialize, Serialize};
use slaproof_chain::anchor::Statement as AnchoredStatement;
use slaproof_circuits::{Claim, Fr, Provenance, Statement};

use crate::error::AttestationError;

/// `statement.json`'s format tag.
pub const FORMAT: &str = "slaproof-attestation/1";

/// The claim, owned (`slaproof_circuits::Claim` borrows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRecord {
    pub tenant: String,
    pub sla: String,
    pub sla_version: u32,
    pub objective: String,
    pub field: String,
    pub unit: String,
    pub operator: String,
    pub threshold: u64,
    pub period_start: i64,
    pub period_end: i64,
    pub revision: u32,
}

impl ClaimRecord {
    /// The claim with the fraction `quota_ppm` proven, in one sentence:
    /// what the worker writes as a bundle's summary and what an auditor
    /// shows once the claim and the fraction are checked (the page has
    /// the same sentence in `frontend/src/audit/checks.ts`).
    pub fn sentence(&self, quota_ppm: u32) -> String {
        format!(
            "At least {}% of the weighted {} values of objective {} of SLA {} v{} (tenant {}) \
             from {} to {} (Unix seconds, result revision {}) are {} {} {}.",
            f64::from(quota_ppm) / 10_000.0,
            self.field,
            self.objective,
            self.sla,
            self.sla_version,
            self.tenant,
            self.period_start,
            self.period_end,
            self.revision,
            self.operator,
            self.threshold,
            self.unit,
        )
    }

    /// The circuit's view of the claim.
    pub fn claim(&self) -> Claim<'_> {
        Claim {
            tenant: &self.tenant,
            sla: &self.sla,
            sla_version: self.sla_version,
            objective: &self.objective,
            field: &self.field,
            unit: &self.unit,
            operator: &self.operator,
            threshold: self.threshold,
            period_start: self.period_start,
            period_end: self.period_end,
            revision: self.revision,
        }
    }
}

/// One public input, with what it means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicInput {
    pub name: String,
    /// Decimal, as in `public.json`.
    pub value: String,
    pub meaning: String,
}

/// Where the statement is anchored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    /// `hash-only`, `verified` or `batched`.
    pub path: String,
    pub chain_id: u64,
    pub eas: Address,
    /// The attestation's UID (for `batched`, the batch root's).
    pub uid: B256,
    /// For `batched`: the inclusion proof of the statement id under the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inclusion_proof: Option<Vec<B256>>,
}

/// One day a period's proof opens: its label (beyond the claim's fields),
/// its commitment and where that is anchored. Kept on the attestation and
/// written in the bundle's `statement.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DayAnchor {
    /// The day's bounds, Unix seconds (start inclusive).
    pub day_start: i64,
    pub day_end: i64,
    /// The measurement's revision (a day re-measured after late events).
    pub revision: u32,
    /// `Poseidon(tag_d, salt, good + 2⁴⁰·bad)`, decimal.
    pub commitment: String,
    /// `keccak256(abi.encode(dayContext, commitment))`, the batch member.
    pub member_id: String,
    /// The log day whose anchor carries it.
    pub log_day: String,
    /// The member's inclusion proof in the batch root.
    pub proof: Vec<String>,
    pub chain_id: u64,
    pub eas: String,
    pub uid: String,
    pub root: String,
    pub block: u64,
}

/// `statement.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatementFile {
    pub format: String,
    /// The claim in one sentence.
    pub summary: String,
    pub claim: ClaimRecord,
    /// The circuit's size (slots of the committed vector).
    pub slots: usize,
    pub quota_ppm: u32,
    pub public_inputs: Vec<PublicInput>,
    /// sha256 of the compressed verifying key, hex.
    pub verifying_key_sha256: String,
    /// sha256 of the compressed proof, hex.
    pub proof_sha256: String,
    /// keccak-256 of the ABI-encoded anchored statement.
    pub statement_id: B256,
    pub anchor: Anchor,
    /// `threshold` (a vector committed at the close) or `daily` (the
    /// period's daily commitments, anchored as it went).
    #[serde(default = "threshold_circuit")]
    pub circuit: String,
    /// For the daily circuit: the days the proof opens, each with its
    /// anchor, in order; the commitment input is their aggregate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<Vec<DayAnchor>>,
    /// Who set the proving key up, as the prover's keys record it: a
    /// single-party development setup (whoever ran it can forge), or a
    /// ceremony with its r1cs and contributions. Absent in files written
    /// before ceremonies: all of those were development keys. A claim of
    /// the prover's, checked by `slaproof verify --ceremony`.
    #[serde(default)]
    pub key_setup: Provenance,
}

fn threshold_circuit() -> String {
    "threshold".into()
}

/// The statement as anchored on chain: names hashed (the chain is public),
/// the commitment and the key's hash as words.
pub fn anchored_statement(
    claim: &ClaimRecord,
    quota_ppm: u32,
    commitment: Fr,
    verifying_key_sha256: &str,
) -> Result<AnchoredStatement, AttestationError> {
    Ok(AnchoredStatement {
        tenantHash: keccak256(&claim.tenant),
        slaHash: keccak256(&claim.sla),
        objective: keccak256(&claim.objective),
        periodStart: u64::try_from(claim.period_start)
            .map_err(|_| AttestationError::Invalid("the period starts before 1970".into()))?,
        periodEnd: u64::try_from(claim.period_end)
            .map_err(|_| AttestationError::Invalid("the period ends before 1970".into()))?,
        threshold: claim.threshold,
        fractionPpm: quota_ppm,
        commitment: field_word(commitment),
        vkHash: hex_word(verifying_key_sha256)?,
    })
}

/// A field element as a big-endian word, as the verifier's `uint256` takes it.
pub fn field_word(x: Fr) -> B256 {
    // A field element's decimal form is below 2²⁵⁴, so it always parses.
    B256::from(
        x.to_string()
            .parse::<alloy::primitives::U256>()
            .expect("a field element fits in 256 bits"),
    )
}

/// A 64-digit hex digest as a word.
pub fn hex_word(digest: &str) -> Result<B256, AttestationError> {
    digest
        .parse()
        .map_err(|_| AttestationError::Invalid(format!("not a 32-byte hex digest: {digest}")))
}

impl StatementFile {
    /// The file for `statement` about `claim`, anchored at `anchor`.
    pub fn new(
        claim: ClaimRecord,
        statement: &Statement,
        verifying_key_sha256: String,
        proof_sha256: String,
        anchor: Anchor,
    ) -> Result<Self, AttestationError> {
        let [commitment, threshold, quota, context] = statement.public_inputs();
        let statement_id = anchored_statement(
            &claim,
            statement.quota_ppm(),
            commitment,
            &verifying_key_sha256,
        )?
        .id();
        let summary = claim.sentence(statement.quota_ppm());
        let public_inputs = vec![
            PublicInput {
                name: "commitment".into(),
                value: commitment.to_string(),
                meaning: format!(
                    "Poseidon commitment to the period's {} (value, weight) slots, salted, \
                     binding their number and the context",
                    statement.slots()
                ),
            },
            PublicInput {
                name: "threshold".into(),
                value: threshold.to_string(),
                meaning: format!(
                    "T, in {}: a value counts as good when it is ≤ T",
                    claim.unit
                ),
            },
            PublicInput {
                name: "quota_ppm".into(),
                value: quota.to_string(),
                meaning: "q, parts per million of the total weight that must be good".into(),
            },
            PublicInput {
                name: "context".into(),
                value: context.to_string(),
                meaning: "sha256 of the claim (slaproof/context/v2, docs/CIRCUITS.md), as a \
                          field element"
                    .into(),
            },
        ];
        Ok(Self {
            format: FORMAT.into(),
            summary,
            claim,
            slots: statement.slots(),
            quota_ppm: statement.quota_ppm(),
            public_inputs,
            verifying_key_sha256,
            proof_sha256,
            statement_id,
            anchor,
            circuit: threshold_circuit(),
            days: None,
            key_setup: Provenance::Development,
        })
    }

    /// The file of a period proven over its anchored daily commitments.
    pub fn with_days(mut self, days: Vec<DayAnchor>) -> Self {
        if let Some(input) = self.public_inputs.first_mut() {
            input.meaning = format!(
                "the aggregate of the period's {} daily commitments (slaproof/daily-aggregate/v1 over \
                 a {}-day circuit, docs/TRANSPARENCY.md), each anchored with a transparency-log head \
                 as the period went: recompute it from `days`",
                days.len(),
                self.slots
            );
        }
        self.summary = format!(
            "{} Proven over the period's daily commitments, each anchored as the period went.",
            self.summary
        );
        self.circuit = "daily".into();
        self.days = Some(days);
        self
    }

    /// The file of a proof made with keys set up as `provenance` says.
    pub fn with_key_setup(mut self, provenance: Provenance) -> Self {
        self.key_setup = provenance;
        self
    }

    /// Writes `statement.json` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), AttestationError> {
        let path = dir.join("statement.json");
        let mut text = serde_json::to_string_pretty(self).expect("a statement file serialises");
        text.push('\n');
        std::fs::write(&path, text).map_err(|e| AttestationError::io(&path, e))
    }

    /// Reads `statement.json` from `dir`.
    pub fn read(dir: &Path) -> Result<Self, AttestationError> {
        let path = dir.join("statement.json");
        let text = std::fs::read_to_string(&path).map_err(|e| AttestationError::io(&path, e))?;
        serde_json::from_str(&text)
            .map_err(|e| AttestationError::Invalid(format!("{}: {e}", path.display())))
    }
}
