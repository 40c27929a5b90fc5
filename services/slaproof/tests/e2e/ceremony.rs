//! `slaproof ceremony` end to end, as three parties and an auditor would run it: snarkjs for every step, the beacon a block announced in advance on a real anvil, the final key verified, stored, proving a period that our verifier, snarkjs and the chain accept through EAS and the resolver; what must be refused, refused by name.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use slaproof_attestation::bundle::{Anchor, ClaimRecord, StatementFile};
use slaproof_circuits::daily::DayOpening;
use slaproof_circuits::export::write_snarkjs;
use slaproof_circuits::keys::load_circuit_keys;
use slaproof_circuits::{Circuit, Fr, Provenance, period_statement, prove_period, verify};
use slaproof_tests::chain::eas;
use slaproof_tests::chain::resolver::{
    INVALID_ATTESTATION, STATEMENT_VERIFIED, Verified, VerifiedPath,
};
use slaproof_tests::chain::{self, Anvil, find_log, hex_u64, keccak, topic_word};

use crate::support::{slaproof, text};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn snarkjs_cli() -> Option<PathBuf> {
    let cli = workspace().join("circuits/node_modules/snarkjs/build/cli.cjs");
    cli.is_file().then_some(cli)
}

/// Runs `slaproof ceremony ARGS` in `dir` with the workspace's snarkjs.
fn ceremony(dir: &Path, snarkjs: &Path, args: &[&str]) -> Output {
    let snarkjs = snarkjs.to_string_lossy();
    slaproof(dir, &[("SLAPROOF_SNARKJS", &snarkjs)])
        .arg("ceremony")
        .args(args)
        .output()
        .expect("running slaproof")
}

fn succeeds(dir: &Path, snarkjs: &Path, args: &[&str]) -> String {
    let out = ceremony(dir, snarkjs, args);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "slaproof ceremony {args:?} failed:\n{said}"
    );
    said
}

fn refused(dir: &Path, snarkjs: &Path, args: &[&str], because: &str) {
    let out = ceremony(dir, snarkjs, args);
    let said = text(&out.stderr);
    assert!(
        !out.status.success(),
        "slaproof ceremony {args:?} was not refused"
    );
    assert!(
        said.contains(because),
        "{args:?}: {because:?} not in:\n{said}"
    );
}

/// A phase-1 file of 2^`power` powers (a public ceremony's in production).
fn phase1(dir: &Path, snarkjs: &Path, power: u32) -> PathBuf {
    for args in [
        vec!["powersoftau", "new", "bn128", &power.to_string(), "p0.ptau"],
        vec![
            "powersoftau",
            "contribute",
            "p0.ptau",
            "p1.ptau",
            "--name=phase 1",
            "-e=x",
        ],
        vec!["powersoftau", "prepare", "phase2", "p1.ptau", "phase1.ptau"],
    ] {
        let out = Command::new("node")
            .arg(snarkjs)
            .args(&args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "snarkjs {args:?}: {}",
            text(&out.stderr)
        );
    }
    dir.join("phase1.ptau")
}

#[tokio::test]
async fn three_parties_and_a_chain_beacon_set_up_keys_that_prove_on_chain() {
    let test = "three_parties_and_a_chain_beacon_set_up_keys_that_prove_on_chain";
    let packages = [eas::PACKAGE, eas::SOLC_PACKAGE, eas::OPENZEPPELIN_PACKAGE];
    let Some(anvil_bin) = chain::tools_or_skip(test, &packages) else {
        return;
    };
    let Some(snarkjs) = snarkjs_cli() else {
        assert!(
            !chain::in_ci(),
            "snarkjs is missing under CI: run `npm ci --prefix circuits`"
        );
        eprintln!("\n\n!!! SKIPPED {test}: run `npm ci --prefix circuits` !!!\n\n");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // The daily circuit at one day needs 2^11 powers.
    let ptau = phase1(dir, &snarkjs, 11);
    let ptau = ptau.to_str().unwrap();
    let anvil = Anvil::start(&anvil_bin);
    let rpc = anvil.rpc();
    let head = hex_u64(&rpc.ok("eth_blockNumber", json!([])).await);
    let beacon_block = (head + 1).to_string();

    // Phase 1 by the hash its maker gives (b2sum: not our code): another
    // file is refused before anything is written.
    let out = Command::new("b2sum").arg(ptau).output().unwrap();
    let blake2b = text(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(blake2b.len(), 128, "b2sum: {}", text(&out.stdout));
    let other_blake2b = "ab".repeat(64);
    let init = ["init", "--circuit", "daily", "--size", "1", "--ptau", ptau];
    refused(
        dir,
        &snarkjs,
        &[&init[..], &["--ptau-blake2b", &other_blake2b]].concat(),
        "is not the abab",
    );
    assert!(!dir.join("ceremony").exists());

    // The provider starts it, announcing a block not yet mined. A phase 1
    // of our own making is no published one, and init says so.
    let said = succeeds(
        dir,
        &snarkjs,
        &[&init[..], &["--beacon-block", &beacon_block]].concat(),
    );
    assert!(
        said.contains(&format!(
            "phase 1: the phase 1 (blake2b-512 {blake2b}) is not a published one"
        )),
        "{said}"
    );
    refused(
        dir,
        &snarkjs,
        &["init", "--circuit", "daily", "--size", "1", "--ptau", ptau],
        "already holds a ceremony",
    );
    refused(
        dir,
        &snarkjs,
        &["beacon", "--rpc", &anvil.url],
        "no party has contributed yet",
    );
    for who in ["provider", "customer (acme-corp)", "auditor"] {
        succeeds(dir, &snarkjs, &["contribute", "--name", who]);
    }
    refused(
        dir,
        &snarkjs,
        &["finalize", "--ptau", ptau, "--dir", "keys"],
        "has not ended with its beacon",
    );
    refused(
        dir,
        &snarkjs,
        &["beacon", "--rpc", &anvil.url],
        &format!("block {beacon_block} is not mined yet"),
    );
    rpc.ok("evm_mine", json!([])).await;
    refused(
        dir,
        &snarkjs,
        &["beacon", "--hash", &"ab".repeat(32)],
        "the beacon is block",
    );
    succeeds(dir, &snarkjs, &["beacon", "--rpc", &anvil.url]);
    refused(
        dir,
        &snarkjs,
        &["contribute", "--name", "late"],
        "ended with its beacon",
    );

    // Anyone checks it; a changed key file is named.
    let verified = succeeds(dir, &snarkjs, &["verify", "--ptau", ptau]);
    assert!(
        verified.contains("ceremony verified: daily 1 with 4 steps"),
        "{verified}"
    );
    let transcript: Value =
        serde_json::from_slice(&std::fs::read(dir.join("ceremony/ceremony.json")).unwrap())
            .unwrap();
    let block = rpc
        .ok(
            "eth_getBlockByNumber",
            json!([format!("0x{:x}", head + 1), false]),
        )
        .await;
    assert_eq!(
        transcript["steps"][4]["beacon"]
            .as_str()
            .map(|h| format!("0x{h}")),
        block["hash"].as_str().map(str::to_owned),
        "the beacon is the announced block's hash"
    );
    let last = dir.join("ceremony/daily-1_0004.zkey");
    let good = std::fs::read(&last).unwrap();
    let mut changed = good.clone();
    let end = changed.len() - 1;
    changed[end] ^= 1;
    std::fs::write(&last, &changed).unwrap();
    refused(
        dir,
        &snarkjs,
        &["verify", "--ptau", ptau],
        "daily-1_0004.zkey: sha256",
    );
    std::fs::write(&last, &good).unwrap();
    refused(
        dir,
        &snarkjs,
        &["verify", "--ptau", &dir.join("p1.ptau").to_string_lossy()],
        "is not the ceremony's phase 1",
    );

    // Finalized: keys marked as the ceremony's, with its transcript.
    let said = succeeds(
        dir,
        &snarkjs,
        &["finalize", "--ptau", ptau, "--dir", "keys"],
    );
    assert!(
        said.contains("ceremony key: 4 steps (provider, customer (acme-corp), auditor, beacon)"),
        "{said}"
    );
    let keys = load_circuit_keys(&dir.join("keys"), Circuit::Daily, 1).unwrap();
    let Provenance::Ceremony(record) = keys.provenance() else {
        panic!("finalized keys are not a ceremony's");
    };
    assert_eq!(
        record.ptau_sha256.as_deref(),
        transcript["ptau_sha256"].as_str()
    );
    assert_eq!(
        record.r1cs_sha256,
        transcript["r1cs"]["sha256"].as_str().unwrap()
    );
    assert!(dir.join("keys/daily-1.ceremony.json").is_file());

    // A period proven with them: our verifier, snarkjs and the chain agree.
    let day = [DayOpening {
        salt: Fr::from(11u64),
        good: 1_439,
        bad: 1,
    }];
    let statement = period_statement(1, chain::sample_context(), 1, 999_000, &day).unwrap();
    let proof = prove_period(&keys, &statement, &day).unwrap();
    assert!(verify(keys.verifier(), &statement, &proof).unwrap());
    write_snarkjs(
        &dir.join("proof"),
        keys.verifier().verifying_key(),
        &statement,
        &proof,
    )
    .unwrap();
    let out = Command::new("node")
        .arg(&snarkjs)
        .args([
            "groth16",
            "verify",
            "verification_key.json",
            "public.json",
            "proof.json",
        ])
        .current_dir(dir.join("proof"))
        .output()
        .unwrap();
    assert!(
        text(&out.stdout).contains("OK!"),
        "snarkjs: {}",
        text(&out.stdout)
    );

    // On chain through EAS and the resolver, which runs the verifier
    // generated from the ceremony's key on the attestation.
    let owner = rpc.dev_account().await;
    let path = VerifiedPath::deploy(&rpc, &owner, &dir.join("chain")).await;
    path.register_verifier(&rpc, &owner, keys.verifier(), &dir.join("chain"))
        .await;
    path.set_attester(&rpc, &owner, &owner, true).await;
    let attested = Verified::of(keys.verifier(), &statement, &proof);
    let receipt = path.attest(&rpc, &owner, &attested).await;
    let verified = find_log(&receipt, &path.resolver, STATEMENT_VERIFIED);
    assert_eq!(
        topic_word(verified, 2),
        attested.vk_hash,
        "the resolver verified the proof under the ceremony's key"
    );
    let mut forged = attested.clone();
    forged.proof[0] = attested.proof[2];
    let call = path.eas.attest_call(path.schema, forged.data());
    assert_eq!(
        rpc.revert_data(&owner, &path.eas.address, &call, "a changed proof")
            .await,
        keccak(INVALID_ATTESTATION.as_bytes())[..4].to_vec(),
        "a changed proof under the ceremony's key is refused on chain"
    );

    // The auditor's verdict on the key's setup: the statement's word alone
    // is not checked; the ceremony checked with snarkjs passes; a statement
    // naming a ceremony over another constraint system fails.
    let bundle = dir.join("bundle");
    write_snarkjs(&bundle, keys.verifier().verifying_key(), &statement, &proof).unwrap();
    let mut file = StatementFile::new(
        claim(),
        &statement,
        keys.verifier().sha256().unwrap(),
        proof.sha256().unwrap(),
        Anchor {
            path: "hash-only".into(),
            chain_id: 31_337,
            eas: Default::default(),
            uid: Default::default(),
            inclusion_proof: None,
        },
    )
    .unwrap()
    .with_key_setup(keys.provenance().clone());
    file.circuit = "daily".into();
    file.write(&bundle).unwrap();
    let setup_line = |args: &[&str]| {
        let out = slaproof(dir, &[("SLAPROOF_SNARKJS", &*snarkjs.to_string_lossy())])
            .args(["verify", "--dir", "bundle"])
            .args(args)
            .output()
            .unwrap();
        let printed = text(&out.stdout);
        printed
            .lines()
            .find(|l| l.contains("key setup"))
            .unwrap_or_else(|| panic!("no key setup check:\n{printed}{}", text(&out.stderr)))
            .to_owned()
    };
    let said = setup_line(&[]);
    assert!(
        said.starts_with("NOT CHECKED")
            && said.contains("a ceremony of provider, customer (acme-corp), auditor, beacon"),
        "{said}"
    );
    // Phase 2 checked, phase 1 nobody vouches for: not a pass.
    let said = setup_line(&["--ceremony", "ceremony", "--ptau", ptau]);
    assert!(
        said.starts_with("NOT CHECKED")
            && said.contains(
                "phase 2 checked with snarkjs (provider, customer (acme-corp), auditor, beacon), \
                 but the phase 1"
            )
            && said.contains("whoever made it could forge"),
        "{said}"
    );
    // Pinned by the auditor: a pass naming both phases.
    let said = setup_line(&[
        "--ceremony",
        "ceremony",
        "--ptau",
        ptau,
        "--ptau-blake2b",
        &blake2b,
    ]);
    assert!(
        said.starts_with("PASS")
            && said
                .contains("checked with snarkjs: provider, customer (acme-corp), auditor, beacon")
            && said.contains(&format!("blake2b-512 {blake2b}, as pinned")),
        "{said}"
    );
    let said = setup_line(&[
        "--ceremony",
        "ceremony",
        "--ptau",
        ptau,
        "--ptau-blake2b",
        &other_blake2b,
    ]);
    assert!(
        said.starts_with("FAIL") && said.contains("given with --ptau-blake2b"),
        "{said}"
    );
    let said = setup_line(&[
        "--ceremony",
        "ceremony",
        "--ptau",
        &dir.join("p1.ptau").to_string_lossy(),
    ]);
    assert!(
        said.starts_with("FAIL") && said.contains("is not the ceremony's phase 1"),
        "{said}"
    );
    let mut other = file.clone();
    if let Provenance::Ceremony(c) = &mut other.key_setup {
        c.r1cs_sha256 = "00".repeat(32);
    }
    other.write(&bundle).unwrap();
    let said = setup_line(&[]);
    assert!(
        said.starts_with("FAIL") && said.contains("keys for another constraint system"),
        "{said}"
    );
}

fn claim() -> ClaimRecord {
    ClaimRecord {
        tenant: "provider".into(),
        sla: "acme-enterprise".into(),
        sla_version: 1,
        objective: "availability".into(),
        field: "status".into(),
        unit: "verdict".into(),
        operator: "<=".into(),
        threshold: 0,
        period_start: 1_793_491_200,
        period_end: 1_796_083_200,
        revision: 1,
    }
}
