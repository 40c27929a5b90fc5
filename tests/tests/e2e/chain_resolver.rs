//! EAS on a real anvil, the verified path: `contracts/src/SlaproofResolver.sol` runs the Groth16 verifier generated from a real key on every attestation of the verified period schema, and EAS refuses the attestation when the proof, the public inputs, the key or the attester is wrong.
//!
//! Needs `npm ci --prefix contracts` (solc, EAS and anvil from npm); without
//! it the test prints a loud SKIPPED message, except under `CI`, where it
//! fails.

use slaproof_circuits::{CircuitKeys, build, prove, verify};
use slaproof_tests::chain::abi;
use slaproof_tests::chain::eas;
use slaproof_tests::chain::resolver::{
    ATTESTED, INVALID_ATTESTATION, STATEMENT_VERIFIED, VERIFIER_REGISTERED, Verified, VerifiedPath,
};
use slaproof_tests::chain::{self, Anvil, find_log, hex_u64, keccak, topic_word, unhex};

/// The hash-only attestation's gas (`chain_eas.rs`, `docs/BENCHMARKS.md`).
const HASH_ONLY_ATTEST_GAS: u64 = 422_944;

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
    let good = Verified::of(keys.verifier(), &statement, &proof);
    assert_eq!((good.threshold, good.fraction_ppm), (50, 990_000));

    let anvil = Anvil::start(&anvil_bin);
    let rpc = anvil.rpc();
    let accounts = rpc.dev_accounts().await;
    let (owner, stranger) = (accounts[0].clone(), accounts[1].clone());
    let dir = tempfile::tempdir().unwrap();
    let path = VerifiedPath::deploy(&rpc, &owner, dir.path()).await;
    let (deployed, schema, resolver) = (&path.eas, path.schema, &path.resolver);
    let eas = deployed.address.clone();

    // The key by its hash, and the owner as the one attester.
    let (verifier, receipt) = path
        .register_verifier(&rpc, &owner, keys.verifier(), dir.path())
        .await;
    let registered = find_log(&receipt, resolver, VERIFIER_REGISTERED);
    assert_eq!(topic_word(registered, 1), good.vk_hash);
    assert_eq!(topic_word(registered, 2), abi::address(&verifier).word());
    path.set_attester(&rpc, &owner, &owner, true).await;
    // Only the owner manages the resolver.
    let call = path.set_attester_call(&owner, true);
    rpc.revert_data(&stranger, resolver, &call, "setAttester by a stranger")
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
    let verified = find_log(&receipt, resolver, STATEMENT_VERIFIED);
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
    path.set_attester(&rpc, &owner, &stranger, true).await;
    path.attest(&rpc, &stranger, &good).await;

    // Calldata cost, 16 gas per non-zero byte and 4 per zero byte: it
    // moves with the proof's bytes, execution does not.
    let calldata_gas: u64 = attest.iter().map(|&b| if b == 0 { 4 } else { 16 }).sum();
    eprintln!(
        "EAS on anvil (verified path): resolver deployment {} gas; one verified \
         attestation {attest_gas} gas (21000 intrinsic + {calldata_gas} calldata for {} bytes \
         + {} execution; {} bytes of data) against {HASH_ONLY_ATTEST_GAS} for the hash-only \
         one: {} more",
        path.resolver_gas,
        attest.len(),
        attest_gas - 21_000 - calldata_gas,
        data.len(),
        attest_gas - HASH_ONLY_ATTEST_GAS,
    );
    drop(anvil);
}
