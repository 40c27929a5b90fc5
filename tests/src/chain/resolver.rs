//! The verified path on a real chain: EAS with `contracts/src/SlaproofResolver.sol`, which runs the Groth16 verifier generated from a key on every attestation of the verified period schema.
//!
//! Shared by the contract test (`chain_resolver`) and the ceremony's end to
//! end test, so that a key from a ceremony meets the same resolver, schema
//! and encoding as a development key.

use std::path::Path;

use serde_json::Value;
use slaproof_circuits::export::{solidity_proof, solidity_verifier};
use slaproof_circuits::{SlaProof, Statement, VerifierKey};

use super::abi::{self, Token};
use super::eas::{self, Eas};
use super::{Rpc, decimal_word, find_log, keccak, unhex};

/// The verified period schema: the hash-only schema's eleven fields
/// (`chain_eas.rs`), then the proof as the generated verifier takes it and
/// its four public inputs (commitment, threshold, quota_ppm, context).
pub const VERIFIED_SCHEMA: &str = "bytes32 tenantHash,bytes32 slaHash,bytes32 objective,\
uint64 periodStart,uint64 periodEnd,uint64 threshold,uint32 fractionPpm,\
bytes32 commitment,bytes32 vkHash,bytes32 proofHash,bytes32 statementId,\
uint256[8] proof,uint256[4] publicInputs";

pub const REGISTER_VERIFIER: &str = "registerVerifier(bytes32,address)";
pub const SET_ATTESTER: &str = "setAttester(address,bool)";
pub const ATTESTED: &str = "Attested(address,address,bytes32,bytes32)";
pub const STATEMENT_VERIFIED: &str = "StatementVerified(bytes32,bytes32,bytes32)";
pub const VERIFIER_REGISTERED: &str = "VerifierRegistered(bytes32,address)";
pub const ATTESTER_SET: &str = "AttesterSet(address,bool)";
/// EAS's answer when a resolver returns false.
pub const INVALID_ATTESTATION: &str = "InvalidAttestation()";

/// One verified attestation's data: the statement, the proof hash, the
/// statement id, the proof and the public inputs.
#[derive(Debug, Clone)]
pub struct Verified {
    pub tenant_hash: [u8; 32],
    pub sla_hash: [u8; 32],
    pub objective: [u8; 32],
    pub period_start: u64,
    pub period_end: u64,
    pub threshold: u64,
    pub fraction_ppm: u32,
    pub commitment: [u8; 32],
    pub vk_hash: [u8; 32],
    pub proof_hash: [u8; 32],
    pub proof: [[u8; 32]; 8],
    pub inputs: [[u8; 32]; 4],
}

impl Verified {
    /// The attestation of `statement`, proven by `proof` under `verifier`,
    /// for the claim of [`super::sample_context`] (tenant `ten_1`'s `sla_1`,
    /// its `p99` over November 2026).
    pub fn of(verifier: &VerifierKey, statement: &Statement, proof: &SlaProof) -> Self {
        let inputs = statement
            .public_inputs()
            .map(|x| decimal_word(&x.to_string()));
        Self {
            tenant_hash: keccak(b"ten_1"),
            sla_hash: keccak(b"sla_1"),
            objective: keccak(b"p99"),
            period_start: 1_793_491_200,
            period_end: 1_796_083_200,
            threshold: statement.threshold().into(),
            fraction_ppm: statement.quota_ppm(),
            commitment: inputs[0],
            vk_hash: word(&verifier.sha256().expect("the key's hash")),
            proof_hash: word(&proof.sha256().expect("the proof's hash")),
            proof: solidity_proof(proof).map(|x| decimal_word(&x)),
            inputs,
        }
    }

    fn statement(&self) -> Vec<Token> {
        vec![
            abi::bytes32(self.tenant_hash),
            abi::bytes32(self.sla_hash),
            abi::bytes32(self.objective),
            abi::uint(self.period_start.into()),
            abi::uint(self.period_end.into()),
            abi::uint(self.threshold.into()),
            abi::uint(self.fraction_ppm.into()),
            abi::bytes32(self.commitment),
            abi::bytes32(self.vk_hash),
        ]
    }

    /// keccak-256 of the ABI-encoded statement, as on the hash-only path.
    pub fn statement_id(&self) -> [u8; 32] {
        keccak(&abi::encode(&self.statement()))
    }

    /// The attestation's data with the statement id computed from the statement.
    pub fn data(&self) -> Vec<u8> {
        self.data_with_id(self.statement_id())
    }

    /// Every field is static: `abi.encode` writes 23 words in place, the
    /// fixed arrays included.
    pub fn data_with_id(&self, statement_id: [u8; 32]) -> Vec<u8> {
        let mut tokens = self.statement();
        tokens.push(abi::bytes32(self.proof_hash));
        tokens.push(abi::bytes32(statement_id));
        tokens.extend(self.proof.iter().map(|w| abi::bytes32(*w)));
        tokens.extend(self.inputs.iter().map(|w| abi::bytes32(*w)));
        abi::encode(&tokens)
    }
}

/// A 64-digit hex hash as a word.
fn word(hex: &str) -> [u8; 32] {
    unhex(hex).try_into().expect("a sha-256 is 32 bytes")
}

/// Compiles `sources` into `out`, printing solc's warnings if there are any.
pub fn compile(sources: &[&Path], out: &Path, solc: Option<&str>, what: &str) {
    let warnings = super::compile(sources, out, solc);
    if !warnings.trim().is_empty() {
        eprintln!("solc's warnings on {what}:\n{warnings}");
    }
}

/// EAS and the resolver deployed, and the verified schema registered with
/// the resolver, not revocable.
#[derive(Debug)]
pub struct VerifiedPath {
    pub eas: Eas,
    pub resolver: String,
    pub resolver_abi: Value,
    pub resolver_gas: u64,
    pub schema: [u8; 32],
}

impl VerifiedPath {
    /// Compiles EAS and the resolver under `dir` (with EAS's compiler, in
    /// separate runs: the resolver imports EAS's interfaces by package path,
    /// EAS by relative path, and one run would hold two contracts named
    /// IEAS), deploys both from `owner` and registers the verified schema.
    pub async fn deploy(rpc: &Rpc, owner: &str, dir: &Path) -> Self {
        let eas_out = dir.join("eas");
        let warnings = eas::compile(&eas_out);
        if !warnings.trim().is_empty() {
            eprintln!("solc's warnings on EAS:\n{warnings}");
        }
        let resolver_out = dir.join("resolver");
        compile(
            &[&super::contracts_dir().join("src/SlaproofResolver.sol")],
            &resolver_out,
            Some(eas::SOLC),
            "SlaproofResolver",
        );
        let resolver_abi = super::artifact(&resolver_out, "SlaproofResolver");
        let eas = Eas::deploy(rpc, owner, &eas_out).await;
        let (resolver, resolver_gas) = {
            let mut code = super::creation_code(&resolver_abi);
            code.extend(abi::encode(&[abi::address(&eas.address)]));
            rpc.deploy(owner, &code, "SlaproofResolver").await
        };
        let (schema, _) = eas
            .register(rpc, owner, VERIFIED_SCHEMA, Some(&resolver), false)
            .await;
        assert_eq!(
            schema,
            eas::schema_uid(VERIFIED_SCHEMA, Some(&resolver), false),
            "schema UID"
        );
        Self {
            eas,
            resolver,
            resolver_abi,
            resolver_gas,
            schema,
        }
    }

    /// Compiles the verifier generated from `key` under `dir`, deploys it
    /// and registers it under the key's hash; answers its address and the
    /// registration's receipt.
    pub async fn register_verifier(
        &self,
        rpc: &Rpc,
        owner: &str,
        key: &VerifierKey,
        dir: &Path,
    ) -> (String, Value) {
        let source = dir.join("Verifier.sol");
        std::fs::write(&source, solidity_verifier(key.verifying_key()).unwrap()).unwrap();
        let out = dir.join("verifier");
        compile(&[&source], &out, None, "the verifier");
        let artifact = super::artifact(&out, "Verifier");
        let (verifier, _) = rpc
            .deploy(owner, &super::creation_code(&artifact), "Verifier")
            .await;
        let call = abi::call(
            super::selector(&self.resolver_abi, REGISTER_VERIFIER),
            &[
                abi::bytes32(word(&key.sha256().unwrap())),
                abi::address(&verifier),
            ],
        );
        let receipt = rpc
            .transact(owner, Some(&self.resolver), &call, "registerVerifier")
            .await;
        (verifier, receipt)
    }

    /// The call that allows (or stops) `attester`.
    pub fn set_attester_call(&self, attester: &str, allowed: bool) -> Vec<u8> {
        abi::call(
            super::selector(&self.resolver_abi, SET_ATTESTER),
            &[abi::address(attester), abi::boolean(allowed)],
        )
    }

    /// Allows (or stops) `attester`, as `owner`; answers the receipt.
    pub async fn set_attester(
        &self,
        rpc: &Rpc,
        owner: &str,
        attester: &str,
        allowed: bool,
    ) -> Value {
        let call = self.set_attester_call(attester, allowed);
        let receipt = rpc
            .transact(owner, Some(&self.resolver), &call, "setAttester")
            .await;
        find_log(&receipt, &self.resolver, ATTESTER_SET);
        receipt
    }

    /// Attests `verified` as `from`; answers the receipt.
    pub async fn attest(&self, rpc: &Rpc, from: &str, verified: &Verified) -> Value {
        let call = self.eas.attest_call(self.schema, verified.data());
        rpc.transact(from, Some(&self.eas.address), &call, "verified attest")
            .await
    }
}
