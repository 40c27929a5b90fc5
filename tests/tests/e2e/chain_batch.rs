//! EAS on a real anvil, the batched path: 1,000 statement ids of one epoch as an OpenZeppelin-compatible Merkle tree, checked against npm `@openzeppelin/merkle-tree`, its root attested once, and inclusion proofs checked on chain with OpenZeppelin's `MerkleProof`.
//!
//! Needs `npm ci --prefix contracts` (solc, EAS, OpenZeppelin's contracts
//! and merkle-tree, anvil from npm); without it the test prints a loud
//! SKIPPED message, except under `CI`, where it fails.

use std::io::Write;
use std::process::{Command, Stdio};

use alloy::primitives::B256;
use serde_json::{Value, json};
use slaproof_chain::merkle::StandardTree;
use slaproof_tests::chain::abi::{self, Kind};
use slaproof_tests::chain::eas::{self, Eas};
use slaproof_tests::chain::{self, Anvil, find_log, hex, hex_u64, keccak, unhex};

/// slaproof's schema for one epoch's batch: the Merkle root of its
/// statement ids, the epoch `[epochStart, epochEnd)` and how many
/// statements the tree holds.
const BATCH_SCHEMA: &str = "bytes32 root,uint64 epochStart,uint64 epochEnd,uint32 count";

/// Statements in the batch: the goal is at most 1,000 gas per
/// statement for a batch of 1,000.
const BATCH: usize = 1_000;

const MERKLE_PACKAGE: &str = "@openzeppelin/merkle-tree";

const VERIFY: &str = "verify(bytes32[],bytes32,bytes32)";
const ATTESTED: &str = "Attested(address,address,bytes32,bytes32)";

fn hex32(word: &[u8; 32]) -> String {
    format!("0x{}", hex(word))
}

/// The client's tree (`slaproof_chain::merkle`), in this test's byte arrays:
/// the tree the attestation worker builds is the one held to the npm package.
struct Tree(StandardTree);

impl Tree {
    fn of(ids: &[[u8; 32]]) -> Tree {
        Tree(StandardTree::of(
            &ids.iter().map(|id| B256::from(*id)).collect::<Vec<_>>(),
        ))
    }

    fn root(&self) -> [u8; 32] {
        self.0.root().0
    }

    fn proof(&self, index: usize) -> Vec<[u8; 32]> {
        self.0.proof(index).into_iter().map(|p| p.0).collect()
    }

    fn verify(&self, root: [u8; 32], value: [u8; 32], proof: &[[u8; 32]]) -> bool {
        let proof: Vec<B256> = proof.iter().map(|p| B256::from(*p)).collect();
        StandardTree::verify(root.into(), value.into(), &proof)
    }
}

/// Stand-in statement ids: keccak-256 of distinct 32-byte words, as an
/// id is the keccak of an ABI-encoded statement.
fn statement_ids(count: usize) -> Vec<[u8; 32]> {
    (0..count)
        .map(|i| keccak(&abi::encode(&[abi::uint(i as u128)])))
        .collect()
}

/// Runs `contracts/merkle-check.mjs` on `input` and returns its answer.
fn merkle_check(input: &Value) -> Value {
    let mut child = Command::new("node")
        .arg(chain::contracts_dir().join("merkle-check.mjs"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs merkle-check.mjs");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.to_string().as_bytes())
        .expect("writing merkle-check.mjs's input");
    let output = child.wait_with_output().expect("merkle-check.mjs ends");
    assert!(
        output.status.success(),
        "merkle-check.mjs failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("merkle-check.mjs answers JSON")
}

/// Calldata of `verify(bytes32[] proof, bytes32 root, bytes32 statementId)`:
/// the array's offset (three head words), the root and the id, then the
/// array's length and items.
fn verify_call(selector: [u8; 4], proof: &[[u8; 32]], root: [u8; 32], id: [u8; 32]) -> Vec<u8> {
    let mut data = abi::call(
        selector,
        &[abi::uint(3 * 32), abi::bytes32(root), abi::bytes32(id)],
    );
    data.extend(abi::uint(proof.len() as u128).word());
    for p in proof {
        data.extend(p);
    }
    data
}

#[tokio::test]
async fn a_batch_root_attested_once_proves_each_statement_by_inclusion() {
    let Some(anvil_bin) = chain::tools_or_skip(
        "a_batch_root_attested_once_proves_each_statement_by_inclusion",
        &[
            eas::PACKAGE,
            eas::SOLC_PACKAGE,
            "@openzeppelin/contracts",
            MERKLE_PACKAGE,
        ],
    ) else {
        return;
    };

    // Arrange: the batch's tree, built here.
    let ids = statement_ids(BATCH);
    let tree = Tree::of(&ids);
    let root = tree.root();
    let outsider = keccak(b"a statement not in the batch");
    assert!(!ids.contains(&outsider));
    let sample: Vec<usize> = (0..BATCH).step_by(97).chain([BATCH - 1]).collect();
    for &i in &sample {
        assert!(tree.verify(root, ids[i], &tree.proof(i)), "proof {i}");
    }
    // A member's proof does not carry an outsider, nor a member to another root.
    assert!(!tree.verify(root, outsider, &tree.proof(0)));
    assert!(!tree.verify(keccak(b"another root"), ids[0], &tree.proof(0)));

    // Assert 1: @openzeppelin/merkle-tree builds the same root from the same
    // values, accepts our proofs and refuses one for an outsider.
    let mut checks: Vec<Value> = sample
        .iter()
        .map(|&i| {
            json!({
                "root": hex32(&root),
                "value": hex32(&ids[i]),
                "proof": tree.proof(i).iter().map(hex32).collect::<Vec<_>>(),
            })
        })
        .collect();
    checks.push(json!({
        "root": hex32(&root),
        "value": hex32(&outsider),
        "proof": tree.proof(0).iter().map(hex32).collect::<Vec<_>>(),
    }));
    let answer = merkle_check(&json!({
        "values": ids.iter().map(hex32).collect::<Vec<_>>(),
        "checks": checks,
    }));
    assert_eq!(
        answer["root"],
        hex32(&root),
        "StandardMerkleTree.of(ids, [\"bytes32\"]).root"
    );
    let verified: Vec<bool> = answer["verified"]
        .as_array()
        .expect("verified is an array")
        .iter()
        .map(|v| v.as_bool().expect("a boolean"))
        .collect();
    assert_eq!(verified.len(), sample.len() + 1);
    assert!(
        verified[..sample.len()].iter().all(|&v| v),
        "StandardMerkleTree.verify accepts our proofs: {verified:?}"
    );
    assert!(
        !verified[sample.len()],
        "StandardMerkleTree.verify refuses an id not in the batch"
    );

    // Arrange 2: EAS with the compiler it pins, BatchCheck with slaproof's.
    let contracts = chain::contracts_dir();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    eas::compile(&out);
    let check_out = dir.path().join("check");
    let warnings = chain::compile(&[&contracts.join("src/BatchCheck.sol")], &check_out, None);
    assert!(
        warnings.trim().is_empty(),
        "solc warns on BatchCheck:\n{warnings}"
    );
    let check_abi = chain::artifact(&check_out, "BatchCheck");

    let anvil = Anvil::start(&anvil_bin);
    let rpc = anvil.rpc();
    let from = rpc.dev_account().await;
    let deployed = Eas::deploy(&rpc, &from, &out).await;
    let eas = &deployed.address;
    let (check, _) = rpc
        .deploy(&from, &chain::creation_code(&check_abi), "BatchCheck")
        .await;

    // Act 1: register the batch-root schema, no resolver, not revocable.
    let (schema_uid, _) = deployed
        .register(&rpc, &from, BATCH_SCHEMA, None, false)
        .await;
    assert_eq!(
        schema_uid,
        eas::schema_uid(BATCH_SCHEMA, None, false),
        "schema UID"
    );

    // Act 2: attest the root once for the epoch (one hour, UTC).
    let (epoch_start, epoch_end) = (1_796_083_200u64, 1_796_086_800u64);
    let data = abi::encode(&[
        abi::bytes32(root),
        abi::uint(epoch_start.into()),
        abi::uint(epoch_end.into()),
        abi::uint(BATCH as u128),
    ]);
    // No recipient, no expiry, not revocable, no reference, no value.
    let attest = deployed.attest_call(schema_uid, data.clone());
    let receipt = rpc.transact(&from, Some(eas), &attest, "attest").await;
    let attest_gas = hex_u64(&receipt["gasUsed"]);
    let uid = unhex(
        find_log(&receipt, eas, ATTESTED)["data"]
            .as_str()
            .expect("log data"),
    );
    let uid: [u8; 32] = uid.try_into().expect("the UID is one word");

    // Assert 2: the attestation reads back with the root, epoch and count.
    let a = deployed.attestation(&rpc, uid).await;
    assert_eq!(a[0].word(), uid, "uid");
    assert_eq!(a[1].word(), schema_uid, "schema");
    assert_eq!(a[7], abi::address(&from), "attester");
    assert_eq!(a[9].bytes(), data.as_slice(), "data");
    let fields = abi::decode(a[9].bytes(), &vec![Kind::Word; 4]);
    let read_root = fields[0].word();
    assert_eq!(read_root, root, "root");
    assert_eq!(fields[1].uint(), u128::from(epoch_start), "epochStart");
    assert_eq!(fields[2].uint(), u128::from(epoch_end), "epochEnd");
    assert_eq!(fields[3].uint(), BATCH as u128, "count");

    // Assert 3: on chain, MerkleProof accepts each sampled member against
    // the root read back and refuses an outsider and a wrong root.
    let verify = chain::selector(&check_abi, VERIFY);
    let on_chain = |proof: Vec<[u8; 32]>, root: [u8; 32], id: [u8; 32]| {
        let rpc = &rpc;
        let check = &check;
        async move {
            let answer = rpc
                .view(check, &verify_call(verify, &proof, root, id), "verify")
                .await;
            abi::decode(&answer, &[Kind::Word])[0].uint() == 1
        }
    };
    for &i in &sample {
        assert!(
            on_chain(tree.proof(i), read_root, ids[i]).await,
            "BatchCheck.verify accepts member {i}"
        );
    }
    assert!(
        !on_chain(tree.proof(0), read_root, outsider).await,
        "BatchCheck.verify refuses an id not in the batch"
    );
    assert!(
        !on_chain(tree.proof(1), read_root, ids[0]).await,
        "BatchCheck.verify refuses a member with another member's proof"
    );
    assert!(
        !on_chain(tree.proof(0), keccak(b"another root"), ids[0]).await,
        "BatchCheck.verify refuses a member under another root"
    );

    // Gas: the view as a transaction would cost it (21,000 base and the
    // calldata included), for the longest proof in the tree.
    let longest = (0..BATCH)
        .max_by_key(|&i| tree.proof(i).len())
        .expect("a leaf");
    let proof = tree.proof(longest);
    let call = verify_call(verify, &proof, read_root, ids[longest]);
    let estimate = rpc
        .ok(
            "eth_estimateGas",
            json!([{ "from": from, "to": check, "data": format!("0x{}", hex(&call)) }]),
        )
        .await;
    let verify_gas = hex_u64(&estimate);
    // Calldata at 16 gas per non-zero byte and 4 per zero byte.
    let calldata =
        |bytes: &[u8]| -> u64 { bytes.iter().map(|&b| if b == 0 { 4 } else { 16 }).sum() };
    let calldata_gas = calldata(&attest);
    let verify_calldata_gas = calldata(&call);
    eprintln!(
        "EAS on anvil (batched path): {BATCH} statements, proofs of {}..={} siblings; root \
         attestation {attest_gas} gas ({} bytes of calldata costing {calldata_gas} gas), \
         {} gas per statement; BatchCheck.verify of a {}-sibling proof: eth_estimateGas \
         {verify_gas} ({} bytes of calldata costing {verify_calldata_gas} gas)",
        (0..BATCH).map(|i| tree.proof(i).len()).min().unwrap(),
        proof.len(),
        attest.len(),
        attest_gas.div_ceil(BATCH as u64),
        proof.len(),
        call.len(),
    );
    assert!(
        attest_gas <= 1_000 * BATCH as u64,
        "the issue's goal: at most 1,000 gas per statement for a batch of 1,000"
    );
    drop(anvil);
}
