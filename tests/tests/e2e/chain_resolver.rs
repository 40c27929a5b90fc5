//! EAS on a real anvil, the verified path: `contracts/src/SlaproofResolver.sol` runs the Groth16 verifier generated from a real key on every attestation of the verified period schema, and EAS refuses the attestation when the proof, the public inputs, the key or the attester is wrong.
//!
//! Needs `npm ci --prefix contracts` (solc, EAS and anvil from npm); without
//! it the test prints a loud SKIPPED message, except under `CI`, where it
//! fails.

use std::path::Path;

use serde_json::Value;
use slaproof_circuits::export::{solidity_proof, solidity_verifier};
use slaproof_circuits::{CircuitKeys, build, prove, verify};
use slaproof_tests::chain::abi::{self, Token};
use slaproof_tests::chain::eas::{self, Eas};
use slaproof_tests::chain::{self, Anvil, Rpc, find_log, hex_u64, keccak, topic_word, unhex};

/// The verified period schema: the hash-only schema's eleven fields
/// (`chain_eas.rs`), then the proof as the generated verifier takes it and
/// its four public inputs (commitment, threshold, quota_ppm, context).
const VERIFIED_SCHEMA: &str = "bytes32 tenantHash,bytes32 slaHash,bytes32 objective,\
uint64 periodStart,uint64 periodEnd,uint64 threshold,uint32 fractionPpm,\
bytes32 commitment,bytes32 vkHash,bytes32 proofHash,bytes32 statementId,\
uint256[8] proof,uint256[4] publicInputs";

const REGISTER_VERIFIER: &str = "registerVerifier(bytes32,address)";
const SET_ATTESTER: &str = "setAttester(address,bool)";
const ATTESTED: &str = "Attested(address,address,bytes32,bytes32)";
const STATEMENT_VERIFIED: &str = "StatementVerified(bytes32,bytes32,bytes32)";
const VERIFIER_REGISTERED: &str = "VerifierRegistered(bytes32,address)";
const ATTESTER_SET: &str = "AttesterSet(address,bool)";
/// EAS's answer when a resolver returns false.
const INVALID_ATTESTATION: &str = "InvalidAttestation()";

/// The hash-only attestation's gas (`chain_eas.rs`, `docs/BENCHMARKS.md`).
const HASH_ONLY_ATTEST_GAS: u64 = 422_944;

/// A decimal integer below 2²⁵⁶ as one big-endian word.
fn decimal_word(decimal: &str) -> [u8; 32] {
    let mut word = [0u8; 32];
    for digit in decimal.bytes() {
        assert!(digit.is_ascii_digit(), "not a decimal: {decimal}");
        let mut carry = u32::from(digit - b'0');
        for byte in word.iter_mut().rev() {
            let x = u32::from(*byte) * 10 + carry;
            *byte = (x & 0xff) as u8;
            carry = x >> 8;
        }
        assert_eq!(carry, 0, "{decimal} does not fit in 256 bits");
    }
    word
}

/// One verified attestation's data: the statement, the proof hash, the
/// statement id, the proof and the public inputs.
#[derive(Debug, Clone)]
struct Verified {
    tenant_hash: [u8; 32],
    sla_hash: [u8; 32],
    objective: [u8; 32],
    period_start: u64,
    period_end: u64,
    threshold: u64,
    fraction_ppm: u32,
    commitment: [u8; 32],
    vk_hash: [u8; 32],
    proof_hash: [u8; 32],
    proof: [[u8; 32]; 8],
    inputs: [[u8; 32]; 4],
}

impl Verified {
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
    fn statement_id(&self) -> [u8; 32] {
        keccak(&abi::encode(&self.statement()))
    }

    /// The attestation's data with the statement id computed from the statement.
    fn data(&self) -> Vec<u8> {
        self.data_with_id(self.statement_id())
    }

    /// Every field is static: `abi.encode` writes 23 words in place, the
    /// fixed arrays included.
    fn data_with_id(&self, statement_id: [u8; 32]) -> Vec<u8> {
        let mut tokens = self.statement();
        tokens.push(abi::bytes32(self.proof_hash));
        tokens.push(abi::bytes32(statement_id));
        tokens.extend(self.proof.iter().map(|w| abi::bytes32(*w)));
        tokens.extend(self.inputs.iter().map(|w| abi::bytes32(*w)));
        abi::encode(&tokens)
    }
}

/// Compiles `sources` into `out`, printing solc's warnings if there are any.
fn compile(sources: &[&Path], out: &Path, solc: Option<&str>, what: &str) {
    let warnings = chain::compile(sources, out, solc);
    if !warnings.trim().is_empty() {
        eprintln!("solc's warnings on {what}:\n{warnings}");
    }
}

/// Deploys `artifact` with constructor arguments `args`; returns its address.
async fn deploy_with(rpc: &Rpc, from: &str, artifact: &Value, args: &[Token]) -> String {
    let mut code = chain::creation_code(artifact);
    code.extend(abi::encode(args));
    let what = artifact["contractName"].as_str().unwrap();
    rpc.deploy(from, &code, what).await.0
}

#[tokio::test]
async fn the_resolver_accepts_a_verified_statement_and_refuses_every_wrong_one() {
    let Some(anvil_bin) = chain::tools_or_skip(
        "the_resolver_accepts_a_verified_statement_and_refuses_every_wrong_one",
        &[eas::PACKAGE, eas::SOLC_PACKAGE, eas::OPENZEPPELIN_PACKAGE],
    ) else {
        return;
    };

    // Arrange: a real key and proof for the smallest standard size.
    let keys = CircuitKeys::setup(64).unwrap();
    let context = chain::sample_context();
    let (statement, opening) = build(64, &[(40, 990), (70, 10)], 50, 990_000, context).unwrap();
    let proof = prove(&keys, &statement, &opening).unwrap();
    assert!(verify(keys.verifier(), &statement, &proof).unwrap());
    let inputs = statement
        .public_inputs()
        .map(|x| decimal_word(&x.to_string()));
    let good = Verified {
        tenant_hash: keccak(b"ten_1"),
        sla_hash: keccak(b"sla_1"),
        objective: keccak(b"p99"),
        period_start: 1_793_491_200,
        period_end: 1_796_083_200,
        threshold: 50,
        fraction_ppm: 990_000,
        commitment: inputs[0],
        vk_hash: unhex(&keys.verifier().sha256().unwrap())
            .try_into()
            .unwrap(),
        proof_hash: unhex(&proof.sha256().unwrap()).try_into().unwrap(),
        proof: solidity_proof(&proof).map(|x| decimal_word(&x)),
        inputs,
    };

    // EAS, the resolver (both with EAS's compiler, in separate runs: the
    // resolver imports EAS's interfaces by package path, EAS by relative
    // path, and one run would hold two contracts named IEAS) and the verifier.
    let dir = tempfile::tempdir().unwrap();
    let eas_out = dir.path().join("eas");
    let warnings = eas::compile(&eas_out);
    if !warnings.trim().is_empty() {
        eprintln!("solc's warnings on EAS:\n{warnings}");
    }
    let resolver_out = dir.path().join("resolver");
    compile(
        &[&chain::contracts_dir().join("src/SlaproofResolver.sol")],
        &resolver_out,
        Some(eas::SOLC),
        "SlaproofResolver",
    );
    let verifier_source = dir.path().join("Verifier.sol");
    std::fs::write(
        &verifier_source,
        solidity_verifier(keys.verifier().verifying_key()).unwrap(),
    )
    .unwrap();
    let verifier_out = dir.path().join("verifier");
    compile(&[&verifier_source], &verifier_out, None, "the verifier");
    let resolver_abi = chain::artifact(&resolver_out, "SlaproofResolver");
    let verifier_abi = chain::artifact(&verifier_out, "Verifier");

    let anvil = Anvil::start(&anvil_bin);
    let rpc = anvil.rpc();
    let accounts = rpc.dev_accounts().await;
    let (owner, stranger) = (accounts[0].clone(), accounts[1].clone());
    let deployed = Eas::deploy(&rpc, &owner, &eas_out).await;
    let eas = deployed.address.clone();
    let (resolver, resolver_gas) = {
        let mut code = chain::creation_code(&resolver_abi);
        code.extend(abi::encode(&[abi::address(&eas)]));
        rpc.deploy(&owner, &code, "SlaproofResolver").await
    };
    let verifier = deploy_with(&rpc, &owner, &verifier_abi, &[]).await;

    // The verified schema, resolved by the resolver, not revocable.
    let (schema, _) = deployed
        .register(&rpc, &owner, VERIFIED_SCHEMA, Some(&resolver), false)
        .await;
    assert_eq!(
        schema,
        eas::schema_uid(VERIFIED_SCHEMA, Some(&resolver), false),
        "schema UID"
    );

    // The key by its hash, and the owner as the one attester.
    let call = abi::call(
        chain::selector(&resolver_abi, REGISTER_VERIFIER),
        &[abi::bytes32(good.vk_hash), abi::address(&verifier)],
    );
    let receipt = rpc
        .transact(&owner, Some(&resolver), &call, "registerVerifier")
        .await;
    let registered = find_log(&receipt, &resolver, VERIFIER_REGISTERED);
    assert_eq!(topic_word(registered, 1), good.vk_hash);
    assert_eq!(topic_word(registered, 2), abi::address(&verifier).word());
    let call = abi::call(
        chain::selector(&resolver_abi, SET_ATTESTER),
        &[abi::address(&owner), abi::boolean(true)],
    );
    let receipt = rpc
        .transact(&owner, Some(&resolver), &call, "setAttester")
        .await;
    find_log(&receipt, &resolver, ATTESTER_SET);
    // Only the owner manages the resolver.
    rpc.revert_data(&stranger, &resolver, &call, "setAttester by a stranger")
        .await;

    // Act: the valid statement, attested through the resolver.
    let data = good.data();
    assert_eq!(data.len(), 23 * 32);
    let attest = deployed.attest_call(schema, data.clone());
    let receipt = rpc
        .transact(&owner, Some(&eas), &attest, "verified attest")
        .await;
    let attest_gas = hex_u64(&receipt["gasUsed"]);
    let attested = find_log(&receipt, &eas, ATTESTED);
    assert_eq!(topic_word(attested, 3), schema, "Attested: schema");
    let uid: [u8; 32] = unhex(attested["data"].as_str().unwrap())
        .try_into()
        .expect("Attested's data is the UID");
    let verified = find_log(&receipt, &resolver, STATEMENT_VERIFIED);
    assert_eq!(topic_word(verified, 1), good.statement_id(), "statementId");
    assert_eq!(topic_word(verified, 2), good.vk_hash, "vkHash");
    assert_eq!(topic_word(verified, 3), uid, "the resolver saw EAS's uid");

    // Assert: the attestation reads back with its data.
    let a = deployed.attestation(&rpc, uid).await;
    assert_eq!(a[0].word(), uid, "uid");
    assert_eq!(a[1].word(), schema, "schema");
    assert_eq!(a[7], abi::address(&owner), "attester");
    assert_eq!(a[9].bytes(), data.as_slice(), "data");

    // Each refusal: EAS reverts with InvalidAttestation() when the resolver says no.
    let invalid = keccak(INVALID_ATTESTATION.as_bytes())[..4].to_vec();
    let mut changed_input = good.clone();
    changed_input.inputs[3][31] ^= 1; // the context: not a statement field, so the verifier refuses
    let mut changed_proof = good.clone();
    changed_proof.proof[0] = good.proof[2]; // another coordinate
    let mut other_threshold = good.clone();
    other_threshold.threshold = 51; // the proof's threshold is 50
    let mut other_fraction = good.clone();
    other_fraction.fraction_ppm = 980_000;
    let mut other_commitment = good.clone();
    other_commitment.commitment[31] ^= 1;
    let mut unknown_key = good.clone();
    unknown_key.vk_hash = keccak(b"a key nobody registered");
    let cases: Vec<(&str, &str, Vec<u8>)> = vec![
        ("a changed public input", &owner, changed_input.data()),
        ("a changed proof", &owner, changed_proof.data()),
        (
            "a threshold the proof does not prove",
            &owner,
            other_threshold.data(),
        ),
        (
            "a fraction the proof does not prove",
            &owner,
            other_fraction.data(),
        ),
        (
            "a commitment the proof is not about",
            &owner,
            other_commitment.data(),
        ),
        ("an unregistered verifying key", &owner, unknown_key.data()),
        (
            "a wrong statement id",
            &owner,
            good.data_with_id(keccak(b"other")),
        ),
        ("an unauthorised attester", &stranger, good.data()),
    ];
    for (what, from, data) in cases {
        let call = deployed.attest_call(schema, data);
        let revert = rpc.revert_data(from, &eas, &call, what).await;
        assert_eq!(revert, invalid, "{what}: expected InvalidAttestation()");
    }

    // The stranger, once authorised, attests the same statement.
    let call = abi::call(
        chain::selector(&resolver_abi, SET_ATTESTER),
        &[abi::address(&stranger), abi::boolean(true)],
    );
    rpc.transact(&owner, Some(&resolver), &call, "setAttester stranger")
        .await;
    let attest = deployed.attest_call(schema, good.data());
    rpc.transact(
        &stranger,
        Some(&eas),
        &attest,
        "attest by the authorised stranger",
    )
    .await;

    // Calldata cost, 16 gas per non-zero byte and 4 per zero byte: it
    // moves with the proof's bytes, execution does not.
    let calldata_gas: u64 = attest.iter().map(|&b| if b == 0 { 4 } else { 16 }).sum();
    eprintln!(
        "EAS on anvil (verified path): resolver deployment {resolver_gas} gas; one verified \
         attestation {attest_gas} gas (21000 intrinsic + {calldata_gas} calldata for {} bytes \
         + {} execution; {} bytes of data) against {HASH_ONLY_ATTEST_GAS} for the hash-only \
         one: {} more",
        attest.len(),
        attest_gas - 21_000 - calldata_gas,
        data.len(),
        attest_gas - HASH_ONLY_ATTEST_GAS,
    );
    drop(anvil);
}
