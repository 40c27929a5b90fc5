//! `slaproof verify`, the auditor's command, on a real proof anchored on a
//! real anvil: every check passes on an honest bundle, and each tampering
//! fails the check it should, by name.
//!
//! The bundle is made here the way the attestation worker will make it
//! (issue 16): a proof over a claim, snarkjs's files, the statement anchored
//! hash-only, verified and in a batch, `statement.json`.

use std::path::Path;

use alloy::primitives::{B256, U256};
use slaproof_attestation::bundle::{
    Anchor, ClaimRecord, StatementFile, anchored_statement, hex_word,
};
use slaproof_chain::anchor::{BatchRoot, PeriodAnchor, VerifiedAnchor};
use slaproof_chain::anvil::{self, Anvil};
use slaproof_chain::merkle::StandardTree;
use slaproof_chain::{Chain, Settings, attest};
use slaproof_circuits::export::{
    snarkjs_proof, snarkjs_verification_key, solidity_proof, solidity_verifier, write_snarkjs,
};
use slaproof_circuits::{CircuitKeys, ContextHash, build, prove};

use crate::support::{shared_tempdir, slaproof, text};

const FILES: [&str; 4] = [
    "verification_key.json",
    "proof.json",
    "public.json",
    "statement.json",
];

fn claim() -> ClaimRecord {
    ClaimRecord {
        tenant: "provider".into(),
        sla: "acme-enterprise".into(),
        sla_version: 3,
        objective: "p99-latency".into(),
        field: "latency".into(),
        unit: "us".into(),
        operator: "<=".into(),
        threshold: 3_200_000,
        period_start: 1_793_491_200,
        period_end: 1_796_083_200,
        revision: 1,
    }
}

/// `slaproof verify` on `dir` with `pins` (pairs of flag and value): its
/// exit code (0 verified, 1 failed, 2 unverified), and what it printed.
fn verify_exit(dir: &Path, rpc: &str, pins: &[(&str, String)]) -> (Option<i32>, String) {
    let mut command = slaproof(dir, &[]);
    command
        .args(["verify", "--dir"])
        .arg(dir)
        .args(["--rpc-url", rpc]);
    for (flag, value) in pins {
        command.args([*flag, value]);
    }
    let output = command.output().expect("running slaproof verify");
    (
        output.status.code(),
        format!("{}{}", text(&output.stdout), text(&output.stderr)),
    )
}

/// [`verify_exit`]: whether the verdict was VERIFIED.
fn verify_pinned(dir: &Path, rpc: &str, pins: &[(&str, String)]) -> (bool, String) {
    let (code, printed) = verify_exit(dir, rpc, pins);
    (code == Some(0), printed)
}

/// What nothing pinned leaves unchecked (the bundle here is proven over a
/// vector committed at the close, so the days too; and with a development
/// key, so its setup), waived by name.
const WAIVE_UNPINNED: &str = "vk,eas,attester,chain,daily,setup";

/// A copy of the bundle in `from`, changed by `change`.
fn tampered(from: &Path, change: impl FnOnce(&Path)) -> tempfile::TempDir {
    let dir = shared_tempdir("slaproof-verify-");
    for file in FILES {
        std::fs::copy(from.join(file), dir.path().join(file)).unwrap();
    }
    change(dir.path());
    dir
}

/// `slaproof verify` on `dir` with nothing pinned and what that leaves
/// unchecked waived: whatever else fails, fails by name.
fn verify(dir: &Path, rpc: &str) -> (bool, String) {
    verify_pinned(dir, rpc, &[("--allow-unpinned", WAIVE_UNPINNED.to_owned())])
}

/// Replaces one exported file of the bundle in `dir`.
fn write_json(dir: &Path, name: &str, value: &serde_json::Value) {
    std::fs::write(dir.join(name), serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

fn edit_statement(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("statement.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut json);
    write_json(dir, "statement.json", &json);
}

fn assert_failed(result: (bool, String), check: &str) {
    let (ok, printed) = result;
    eprintln!("{printed}");
    assert!(!ok, "verify passed a tampered bundle:\n{printed}");
    assert!(
        printed
            .lines()
            .any(|l| l.starts_with("FAIL") && l.contains(check)),
        "the `{check}` check did not fail:\n{printed}"
    );
    assert!(printed.contains("the attestation failed: "), "{printed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_auditor_verifies_an_anchored_period_and_each_tampering_names_its_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(binary) = anvil::binary(&root) else {
        assert!(
            !slaproof_tests::chain::in_ci(),
            "anvil is missing under CI: npm ci --prefix contracts"
        );
        eprintln!("\n!!! SKIPPED: no anvil; npm ci --prefix contracts !!!\n");
        return;
    };
    let node = Anvil::start(&binary, 0, None).expect("anvil starts");
    let rpc = node.url().to_string();
    let chain = Chain::connect(&Settings::local(node.url().clone(), anvil::dev_key()))
        .await
        .unwrap();
    let deployment = slaproof_chain::deploy(&chain, &Default::default())
        .await
        .unwrap();

    // A proof: 99.2% of the weight at or under 3.2 s, q = 99%.
    let claim = claim();
    let keys = CircuitKeys::setup(64).unwrap();
    let context = ContextHash::of(&claim.claim());
    let (statement, opening) = build(
        64,
        &[(1_800_000, 992), (4_100_000, 8)],
        3_200_000,
        990_000,
        context,
    )
    .unwrap();
    let proof = prove(&keys, &statement, &opening).unwrap();
    let vk_sha256 = keys.verifier().sha256().unwrap();
    let proof_sha256 = proof.sha256().unwrap();

    // Anchored hash-only.
    let anchored = anchored_statement(&claim, 990_000, statement.commitment(), &vk_sha256).unwrap();
    let period = PeriodAnchor::new(anchored.clone(), hex_word(&proof_sha256).unwrap());
    let attested = attest::attest_period(&chain, &deployment, &period)
        .await
        .unwrap();
    let honest = shared_tempdir("slaproof-verify-");
    write_snarkjs(
        honest.path(),
        keys.verifier().verifying_key(),
        &statement,
        &proof,
    )
    .unwrap();
    StatementFile::new(
        claim.clone(),
        &statement,
        vk_sha256.clone(),
        proof_sha256.clone(),
        Anchor {
            path: "hash-only".into(),
            chain_id: chain.chain_id(),
            eas: deployment.eas,
            uid: attested.uid,
            inclusion_proof: None,
        },
    )
    .unwrap()
    .write(honest.path())
    .unwrap();

    // Nothing pinned: nothing fails, but the verdict is UNVERIFIED, exit
    // code 2, naming each check not done and how to waive it.
    let (code, printed) = verify_exit(honest.path(), &rpc, &[]);
    eprintln!("{printed}");
    assert_eq!(code, Some(3), "{printed}");
    assert!(printed.contains("UNVERIFIED"), "{printed}");
    for check in [
        "key pinned",
        "chain pinned",
        "eas pinned",
        "attester pinned",
        "daily commitments",
        "key setup",
    ] {
        assert!(
            printed
                .lines()
                .any(|l| l.starts_with("NOT CHECKED") && l.contains(check)),
            "`{check}` is not said to be not checked:\n{printed}"
        );
    }
    assert!(
        printed.contains("--allow-unpinned vk,setup,daily,chain,eas,attester"),
        "{printed}"
    );
    // Waived by name, the same run is VERIFIED, the waived checks listed.
    let (ok, printed) = verify(honest.path(), &rpc);
    assert!(ok, "{printed}");
    assert!(printed.contains("WAIVED       key pinned"), "{printed}");
    for check in [
        "files",
        "format",
        "verifying key",
        "public inputs",
        "context",
        "proof",
        "statement id",
        "anchor",
        "attester",
    ] {
        assert!(
            printed
                .lines()
                .any(|l| l.starts_with("PASS") && l.contains(check)),
            "no passed `{check}`:\n{printed}"
        );
    }
    // Pinned to what the provider publishes, every pin passes; the one
    // check not done is the days' (proven over a vector committed at the
    // close), which leaves it unverified until the auditor accepts it.
    let mut pins = vec![
        ("--vk-sha256", vk_sha256.clone()),
        ("--chain-id", chain.chain_id().to_string()),
        ("--eas", deployment.eas.to_string()),
        ("--attester", chain.address().to_string()),
    ];
    let (code, printed) = verify_exit(honest.path(), &rpc, &pins);
    assert_eq!(code, Some(3), "{printed}");
    assert!(
        printed
            .contains("UNVERIFIED: nothing failed, but not checked: key setup, daily commitments"),
        "{printed}"
    );
    for check in [
        "key pinned",
        "chain pinned",
        "eas pinned",
        "attester pinned",
    ] {
        assert!(
            printed
                .lines()
                .any(|l| l.starts_with("PASS") && l.contains(check)),
            "no passed `{check}`:\n{printed}"
        );
    }
    // The key comes from a one-party setup: said so, never passed (#33).
    assert!(
        printed.lines().any(|l| l.starts_with("NOT CHECKED")
            && l.contains("key setup")
            && l.contains("development key: whoever ran the setup can forge")),
        "{printed}"
    );
    pins.push(("--allow-unpinned", "setup,daily".to_owned()));
    let (ok, printed) = verify_pinned(honest.path(), &rpc, &pins);
    assert!(
        ok && printed
            .contains("VERIFIED, with checks the auditor waived: key setup, daily commitments"),
        "{printed}"
    );
    // A waiver that is not a check's name is refused, naming the ones there are.
    let (code, printed) = verify_exit(
        honest.path(),
        &rpc,
        &[("--allow-unpinned", "proof".to_owned())],
    );
    assert_eq!(code, Some(2), "clap's usage error: {printed}");
    assert!(printed.contains("one of vk, eas, attester"), "{printed}");
    // Another attester, key or EAS than the pinned ones fails by name.
    let stranger = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".to_owned();
    assert_failed(
        verify_pinned(honest.path(), &rpc, &[("--attester", stranger.clone())]),
        "attester pinned",
    );
    assert_failed(
        verify_pinned(honest.path(), &rpc, &[("--vk-sha256", "00".repeat(32))]),
        "verifying key",
    );
    assert_failed(
        verify_pinned(honest.path(), &rpc, &[("--eas", stranger)]),
        "eas pinned",
    );
    assert_failed(
        verify_pinned(honest.path(), &rpc, &[("--chain-id", "1".to_owned())]),
        "chain pinned",
    );
    // A claim stating another comparison than the one proven.
    let restated = tampered(honest.path(), |dir| {
        edit_statement(dir, |s| s["claim"]["operator"] = serde_json::json!(">="));
    });
    assert_failed(verify(restated.path(), &rpc), "claim form");

    // A proof of another statement in place of this one.
    let (other, other_opening) = build(64, &[(1, 5)], 3_200_000, 990_000, context).unwrap();
    let other_proof = prove(&keys, &other, &other_opening).unwrap();
    let swapped = tampered(honest.path(), |dir| {
        write_json(dir, "proof.json", &snarkjs_proof(&other_proof));
    });
    assert_failed(verify(swapped.path(), &rpc), "proof");

    // The claim changed: a longer period than the one proven.
    let laxer = tampered(honest.path(), |dir| {
        edit_statement(dir, |s| {
            s["claim"]["period_end"] = serde_json::json!(1_796_169_600)
        });
    });
    assert_failed(verify(laxer.path(), &rpc), "context");

    // A substituted key: one made for another setup.
    let foreign = CircuitKeys::setup(64).unwrap();
    let substituted = tampered(honest.path(), |dir| {
        write_json(
            dir,
            "verification_key.json",
            &snarkjs_verification_key(foreign.verifier().verifying_key()),
        );
    });
    assert_failed(verify(substituted.path(), &rpc), "verifying key");

    // An anchor that is not there.
    let missing = tampered(honest.path(), |dir| {
        edit_statement(dir, |s| {
            s["anchor"]["uid"] = serde_json::json!(B256::repeat_byte(0x42));
        });
    });
    assert_failed(verify(missing.path(), &rpc), "anchor");

    // Verified: the verifier generated for the key, registered by its hash;
    // the resolver checks the proof on chain, and verify compares what the
    // attestation stores with the bundle.
    let build_dir = shared_tempdir("slaproof-verify-sol-");
    let source = build_dir.path().join("Verifier.sol");
    std::fs::write(
        &source,
        solidity_verifier(keys.verifier().verifying_key()).unwrap(),
    )
    .unwrap();
    let out = build_dir.path().join("out");
    slaproof_tests::chain::compile(&[&source], &out, None);
    let code =
        slaproof_tests::chain::creation_code(&slaproof_tests::chain::artifact(&out, "Verifier"));
    let (verifier, _) = chain
        .deploy(code.into(), "deploying the verifier")
        .await
        .unwrap();
    slaproof_chain::register_verifier(&chain, &deployment, hex_word(&vk_sha256).unwrap(), verifier)
        .await
        .unwrap();
    let words = |decimals: &[String]| -> Vec<U256> {
        decimals.iter().map(|d| d.parse().unwrap()).collect()
    };
    let inputs: Vec<String> = statement
        .public_inputs()
        .iter()
        .map(|x| x.to_string())
        .collect();
    let on_chain = VerifiedAnchor::new(
        anchored.clone(),
        hex_word(&proof_sha256).unwrap(),
        words(&solidity_proof(&proof)).try_into().unwrap(),
        words(&inputs).try_into().unwrap(),
    );
    let attested_verified = attest::attest_verified(&chain, &deployment, &on_chain)
        .await
        .unwrap();
    let verified = tampered(honest.path(), |dir| {
        edit_statement(dir, |s| {
            s["anchor"]["path"] = serde_json::json!("verified");
            s["anchor"]["uid"] = serde_json::json!(attested_verified.uid);
        });
    });
    let (ok, printed) = verify(verified.path(), &rpc);
    assert!(ok, "{printed}");
    assert!(
        printed.contains("which the resolver verified on chain"),
        "{printed}"
    );
    // Another valid proof of the same statement (a fresh randomisation) is
    // not the one the chain checked.
    let again = prove(&keys, &statement, &opening).unwrap();
    let reproven = tampered(verified.path(), |dir| {
        write_json(dir, "proof.json", &snarkjs_proof(&again));
    });
    assert_failed(verify(reproven.path(), &rpc), "anchor");

    // Batched: the statement among 50, the root attested once.
    let mut ids: Vec<B256> = (0..49u8).map(B256::repeat_byte).collect();
    ids.push(anchored.id());
    let tree = StandardTree::of(&ids);
    let root = attest::attest_batch_root(
        &chain,
        &deployment,
        &BatchRoot {
            root: tree.root(),
            epochStart: 1_796_083_200,
            epochEnd: 1_796_169_600,
            count: 50,
        },
    )
    .await
    .unwrap();
    let batched = tampered(honest.path(), |dir| {
        edit_statement(dir, |s| {
            s["anchor"]["path"] = serde_json::json!("batched");
            s["anchor"]["uid"] = serde_json::json!(root.uid);
            s["anchor"]["inclusion_proof"] = serde_json::json!(tree.proof(49));
        });
    });
    let (ok, printed) = verify(batched.path(), &rpc);
    assert!(ok, "{printed}");
    assert!(
        printed
            .lines()
            .any(|l| l.starts_with("PASS") && l.contains("inclusion")),
        "{printed}"
    );
    let wrong_inclusion = tampered(batched.path(), |dir| {
        edit_statement(dir, |s| {
            s["anchor"]["inclusion_proof"] = serde_json::json!(tree.proof(3));
        });
    });
    assert_failed(verify(wrong_inclusion.path(), &rpc), "inclusion");
    node.stop();
}
