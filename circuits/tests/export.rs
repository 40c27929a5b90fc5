//! Exported proofs checked by an independent verifier (snarkjs), and the generated Solidity verifier.

use std::path::{Path, PathBuf};
use std::process::Command;

use slaproof_circuits::export::{snarkjs_public, solidity_proof, solidity_verifier, write_snarkjs};
use slaproof_circuits::{CircuitKeys, ContextHash, build, prove};

mod common;

/// snarkjs as installed by `npm ci --prefix circuits`.
fn snarkjs() -> Option<PathBuf> {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/snarkjs/build/cli.cjs");
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    (node && cli.exists()).then_some(cli)
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

fn snarkjs_verify(cli: &Path, dir: &Path) -> (bool, String) {
    let out = Command::new("node")
        .arg(cli)
        .args(["groth16", "verify"])
        .arg(dir.join("verification_key.json"))
        .arg(dir.join("public.json"))
        .arg(dir.join("proof.json"))
        .output()
        .expect("run node");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && text.contains("OK!"), text)
}

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
