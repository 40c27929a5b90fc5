//! The Solidity Groth16 verifier that `circuits/` generates, compiled with the pinned solc-js and executed on a real anvil node.
//!
//! Needs `npm ci --prefix contracts` (solc and anvil from npm); without it the
//! test prints a loud SKIPPED message, except under `CI`, where it fails.

use std::path::Path;

use serde_json::{Value, json};
use slaproof_circuits::export::{solidity_proof, solidity_verifier};
use slaproof_circuits::{CircuitKeys, build, prove, verify};
use slaproof_tests::chain::{self, Anvil, hex_u64, verify_calldata};

/// `keccak256("ProofInvalid()")[..4]`: the generated verifier's only answer to a proof that does not verify.
const PROOF_INVALID: &str = "0x7fcdd1f4";
const VERIFY_PROOF: &str = "verifyProof(uint256[8],uint256[4])";
/// EIP-1108 cost of a Groth16 check with four public inputs: a pairing check
/// over four pairs (45,000 + 4 × 34,000) and, per input, one scalar
/// multiplication and one addition (6,150): 205,600 gas, before the 21,000
/// of any transaction and the calldata.
const EIP1108_FLOOR: u64 = 45_000 + 4 * 34_000 + 4 * 6_150;

/// Compiles `source` with `contracts/compile.mjs` and returns the artifact of `contract`.
fn compile(source: &Path, out: &Path, contract: &str) -> Value {
    let warnings = chain::compile(&[source], out, None);
    if !warnings.trim().is_empty() {
        eprintln!("solc's warnings on the generated verifier:\n{warnings}");
    }
    chain::artifact(out, contract)
}

#[tokio::test]
async fn generated_verifier_accepts_the_proof_on_anvil_and_refuses_a_changed_input() {
    let Some(anvil_bin) = chain::tools_or_skip(
        "generated_verifier_accepts_the_proof_on_anvil_and_refuses_a_changed_input",
        &[],
    ) else {
        return;
    };

    // Arrange: a real key and proof for the smallest standard size.
    let keys = CircuitKeys::setup(64).unwrap();
    let context = chain::sample_context();
    let (statement, opening) = build(64, &[(40, 990), (70, 10)], 50, 990_000, context).unwrap();
    let proof = prove(&keys, &statement, &opening).unwrap();
    assert!(verify(keys.verifier(), &statement, &proof).unwrap());
    let proof_words = solidity_proof(&proof);
    let inputs = statement.public_inputs().map(|x| x.to_string());

    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("Verifier.sol");
    std::fs::write(
        &source,
        solidity_verifier(keys.verifier().verifying_key()).unwrap(),
    )
    .unwrap();
    let artifact = compile(&source, &dir.path().join("out"), "Verifier");
    let selector = artifact["methodIdentifiers"][VERIFY_PROOF]
        .as_str()
        .expect("the verifier has verifyProof(uint256[8],uint256[4])")
        .to_owned();
    let bytecode = artifact["bytecode"].as_str().unwrap().to_owned();

    let anvil = Anvil::start(&anvil_bin);
    let rpc = anvil.rpc();
    // Anvil's first dev account is unlocked: no signing needed.
    let accounts = rpc.ok("eth_accounts", json!([])).await;
    let from = accounts[0].as_str().unwrap().to_owned();

    // Act: deploy (anvil mines each transaction as it arrives).
    let deploy = rpc
        .ok(
            "eth_sendTransaction",
            json!([{ "from": from, "data": bytecode }]),
        )
        .await;
    let receipt = rpc.receipt(&deploy).await;
    assert_eq!(receipt["status"], "0x1", "deployment failed: {receipt}");
    let verifier = receipt["contractAddress"].as_str().unwrap().to_owned();
    let deploy_gas = hex_u64(&receipt["gasUsed"]);

    // Assert: the valid proof is accepted (no revert, empty return data).
    let valid = verify_calldata(&selector, &proof_words, &inputs);
    let call = json!({ "from": from, "to": verifier, "data": valid });
    let answer = rpc.call("eth_call", json!([call, "latest"])).await;
    assert_eq!(
        answer,
        Ok(json!("0x")),
        "the verifier refused a valid proof"
    );

    // The verify call as a transaction: its gas, estimated and from the receipt.
    let estimate = hex_u64(&rpc.ok("eth_estimateGas", json!([call])).await);
    let tx = rpc.ok("eth_sendTransaction", json!([call])).await;
    let receipt = rpc.receipt(&tx).await;
    assert_eq!(
        receipt["status"], "0x1",
        "verify transaction failed: {receipt}"
    );
    let used = hex_u64(&receipt["gasUsed"]);

    // Each public input changed in turn: the same proof is refused with ProofInvalid().
    for (i, name) in ["commitment", "threshold", "quota_ppm", "context"]
        .iter()
        .enumerate()
    {
        let mut changed = inputs.clone();
        changed[i] = if changed[i] == "0" {
            "1".to_owned()
        } else {
            decrement(&changed[i])
        };
        let data = verify_calldata(&selector, &proof_words, &changed);
        let call = json!({ "from": from, "to": verifier, "data": data });
        let error = rpc
            .call("eth_call", json!([call, "latest"]))
            .await
            .expect_err(&format!("the verifier accepted a changed {name}"));
        assert_eq!(
            error["data"].as_str(),
            Some(PROOF_INVALID),
            "changed {name}: expected ProofInvalid(), got {error}"
        );
    }

    // Calldata cost is part of what a caller pays: 16 gas per non-zero byte, 4 per zero byte.
    let calldata: Vec<u8> = (0..valid.len() / 2 - 1)
        .map(|i| u8::from_str_radix(&valid[2 + 2 * i..4 + 2 * i], 16).unwrap())
        .collect();
    let calldata_gas: u64 = calldata.iter().map(|&b| if b == 0 { 4 } else { 16 }).sum();
    let execution = used - 21_000 - calldata_gas;
    let code = rpc.ok("eth_getCode", json!([verifier, "latest"])).await;
    eprintln!(
        "Groth16 verifyProof on anvil: eth_estimateGas {estimate}, receipt gasUsed {used} \
         (21000 intrinsic + {calldata_gas} calldata + {execution} execution, EIP-1108 floor \
         {EIP1108_FLOOR}); deployment {deploy_gas} gas, runtime code {} bytes; compiler {} {}",
        code.as_str().unwrap().len() / 2 - 1,
        artifact["compiler"]["version"],
        artifact["compiler"]["settings"],
    );
    // Issue 15's goal: execution within 5% of the precompiles' own cost.
    assert!(
        execution >= EIP1108_FLOOR && execution * 100 <= EIP1108_FLOOR * 105,
        "verifyProof execution {execution} gas is not within 5% of the EIP-1108 floor {EIP1108_FLOOR}"
    );
    assert!(
        estimate >= used,
        "eth_estimateGas {estimate} below gasUsed {used}"
    );
    drop(anvil);
}

/// `decimal − 1`, for a positive decimal.
fn decrement(decimal: &str) -> String {
    let mut digits: Vec<u8> = decimal.bytes().map(|d| d - b'0').collect();
    for d in digits.iter_mut().rev() {
        if *d > 0 {
            *d -= 1;
            break;
        }
        *d = 9;
    }
    let s: String = digits.iter().map(|d| char::from(b'0' + d)).collect();
    let trimmed = s.trim_start_matches('0');
    if trimmed.is_empty() { "0" } else { trimmed }.to_owned()
}
