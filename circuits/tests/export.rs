//! Exported proofs checked by an independent verifier (snarkjs), and the generated Solidity verifier.

use slaproof_circuits::export::{
    snarkjs_public, snarkjs_verification_key, solidity_proof, solidity_verifier,
    verifying_key_from_snarkjs, write_snarkjs,
};
use slaproof_circuits::{CircuitKeys, ContextHash, build, prove};

mod common;
mod snarkjs;

use snarkjs::{in_ci, snarkjs, snarkjs_verify};

#[test]
fn snarkjs_accepts_exported_proof_and_rejects_changed_input() {
    let Some(cli) = snarkjs() else {
        assert!(
            !in_ci(),
            "snarkjs is missing under CI: run `npm ci --prefix circuits` before the tests"
        );
        eprintln!(
            "\n\n!!! SKIPPED snarkjs_accepts_exported_proof_and_rejects_changed_input: node or \
             circuits/node_modules/snarkjs is missing; install it with `npm ci --prefix circuits` !!!\n\n"
        );
        return;
    };
    let keys = CircuitKeys::setup(64).unwrap();
    let context = common::context_of("p99");
    let (statement, opening) = build(64, &[(40, 990), (70, 10)], 50, 990_000, context).unwrap();
    let proof = prove(&keys, &statement, &opening).unwrap();

    let dir = tempfile::tempdir().unwrap();
    write_snarkjs(
        dir.path(),
        keys.verifier().verifying_key(),
        &statement,
        &proof,
    )
    .unwrap();
    let (ok, text) = snarkjs_verify(&cli, dir.path());
    assert!(ok, "snarkjs rejected a valid proof:\n{text}");

    // The threshold raised by one: same proof, changed public input.
    let mut public = snarkjs_public(&statement);
    public[1] = serde_json::Value::String("51".to_owned());
    std::fs::write(dir.path().join("public.json"), public.to_string()).unwrap();
    let (ok, text) = snarkjs_verify(&cli, dir.path());
    assert!(!ok, "snarkjs accepted a changed public input:\n{text}");
}

#[test]
fn solidity_verifier_is_generated_for_four_inputs() {
    let keys = CircuitKeys::setup(64).unwrap();
    let contract = solidity_verifier(keys.verifier().verifying_key()).unwrap();
    assert!(contract.contains("contract Verifier"));
    assert!(contract.contains("function verifyProof("));
    assert!(
        contract.contains("uint256[4] calldata input"),
        "four public inputs"
    );
    let context = ContextHash::of(&common::claim("o", 0));
    let (statement, opening) = build(64, &[(1, 1)], 1, 1, context).unwrap();
    let proof = prove(&keys, &statement, &opening).unwrap();
    assert!(solidity_proof(&proof).iter().all(|x| !x.is_empty()));
}

/// A verifying key that accepts forged proofs is refused when read, and says
/// why (found in review: γ = δ was read as any key).
#[test]
fn keys_that_verify_forged_proofs_are_refused_when_read() {
    let keys = CircuitKeys::setup(64).unwrap();
    let honest = snarkjs_verification_key(keys.verifier().verifying_key());
    assert!(verifying_key_from_snarkjs(&honest).is_ok());

    let mut gamma_is_delta = honest.clone();
    gamma_is_delta["vk_delta_2"] = honest["vk_gamma_2"].clone();
    let refused = verifying_key_from_snarkjs(&gamma_is_delta).unwrap_err();
    assert!(refused.to_string().contains("γ = δ"), "{refused}");

    // δ at infinity, snarkjs's (0, 1, 0) projective form in G2.
    let mut delta_at_infinity = honest.clone();
    delta_at_infinity["vk_delta_2"] = serde_json::json!([["0", "0"], ["1", "0"], ["0", "0"]]);
    let refused = verifying_key_from_snarkjs(&delta_at_infinity).unwrap_err();
    assert!(
        refused.to_string().contains("point at infinity"),
        "{refused}"
    );
}
